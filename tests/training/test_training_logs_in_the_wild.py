"""Training logs as people really have them (issue 13): each class of format, read through `LogWatch`
and `tfgpu-tui log --json`. The fixtures are our own text in the formats public logs showed
(tests/fixtures/logs)."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers.paths import FIXTURES, ROOT
from tfgpu_tui.alerts import Severity
from tfgpu_tui.cli import main
from tfgpu_tui.training.follow import SegmentSplitter
from tfgpu_tui.training.oversight import LogOversight
from tfgpu_tui.training.problems import ProblemId
from tfgpu_tui.training.records import FinishReason
from tfgpu_tui.training.run import TrainingRun
from tfgpu_tui.training.watch import LogWatch

LOGS = FIXTURES / "logs"


def read(name: str, tail_bytes: int = 10**9) -> LogWatch:
    watch = LogWatch(LOGS / name, tail_bytes=tail_bytes)
    watch.read_all()
    return watch


def feed(text: str) -> TrainingRun:
    run = TrainingRun()
    run.feed_segments(SegmentSplitter().feed(text.encode()))
    return run


def losses(run) -> list[tuple[int, int, float]]:
    return [(e.fit_run, e.epoch, e.metrics.get("loss")) for e in run.epochs]


def test_class1_old_one_line_epochs_without_a_step_counter():
    run = read("keras2_verbose2_dash_ansi.log").run
    assert losses(run) == [(1, 1, 2.3976), (1, 2, 1.9021)]
    assert [e.seconds for e in run.epochs] == [131, 127] and run.epochs[1].metrics["val_acc"] == 0.25
    assert run.current.finished


def test_class1_3_7_keras1_runs_with_early_stopping_before_the_last_line():
    run = read("keras1_verbose2_runs_early_stopping.log").run
    assert [(e.fit_run, e.epoch) for e in run.epochs] == [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 1)]
    assert run.epochs[0].seconds == 1201 and run.epochs[0].metrics["val_acc"] == 0.8799
    reasons = [(r.index, len(r.epochs), r.finish_reason) for r in run.runs()]
    assert reasons == [(1, 2, None), (2, 3, FinishReason.EARLY_STOPPING), (3, 1, None)]
    assert [e.epoch for e in run.latest_fit_epochs()] == [1] and not run.current.finished


def test_class2_evaluate_and_predict_after_fit_are_no_epochs():
    watch = read("tfkeras2_evaluate_predict.log")
    run = watch.run
    assert losses(run) == [(1, 1, 0.8812), (1, 2, 0.5012)]
    assert (run.current.step, run.current.total_steps) == (40, 40)  # not the evaluate bar's 13
    assert run.current.metrics["val_loss"] == 0.442
    (summary,) = run.runs()
    assert summary.finished and dict(summary.evaluation.metrics) == {"loss": 0.4391, "accuracy": 0.8544}
    assert summary.evaluation.steps == 13


def test_class2_keras3_evaluate_with_other_metric_names():
    run = read("keras3_evaluate_other_names.log").run
    assert [e.metrics["val_loss"] for e in run.epochs] == [0.9931, 0.771]
    assert dict(run.runs()[0].evaluation.metrics) == {"compile_metrics": 0.7481, "loss": 0.7766}
    assert "compile_metrics" not in run.current.metrics


def test_class3_loop_of_single_epoch_fits_each_with_its_evaluation():
    run = read("fit_epochs1_loop.log").run
    assert losses(run) == [(1, 1, 0.9), (2, 1, 0.7), (3, 1, 0.5)]
    assert [r.evaluation.metrics["loss"] for r in run.runs()] == [0.95, 0.75, 0.55]
    assert all(r.finished for r in run.runs())


def test_class3_restart_after_a_crash_is_a_new_run_and_the_crash_becomes_a_warning():
    run = feed(
        "Epoch 1/5\n10/10 - 1s - loss: 0.9000\nEpoch 2/5\n"
        'Traceback (most recent call last):\n  File "t.py", line 3\nRuntimeError: boom\n'
        "Epoch 3/5\n10/10 - 1s - loss: 0.7000\n"  # resumed with initial_epoch=2
    )
    assert [(e.fit_run, e.epoch) for e in run.epochs] == [(1, 1), (2, 3)]
    assert [r.finish_reason for r in run.runs()] == [FinishReason.EXCEPTION, None]
    assert run.problems["EXCEPTION"].severity is Severity.WARNING and run.stopped_by() is None


def test_class4_values_on_a_later_line_with_other_output_between():
    run = read("values_after_bar_with_search_bar.log").run
    assert losses(run) == [(1, 1, 0.6543), (1, 2, 0.4321)]
    assert run.epochs[1].metrics["val_acc"] == 0.27 and run.epochs[1].seconds == 7
    evaluation = run.runs()[0].evaluation
    assert dict(evaluation.metrics) == {"loss": 1.55, "acc": 0.61} and evaluation.seconds == 152


def test_a_callback_printing_the_header_again_and_metrics_one_a_line_makes_no_runs_of_its_own():
    run = read("keras3_callback_prints_between.log").run
    assert losses(run) == [(1, 1, 1.421), (1, 2, 0.9123), (1, 3, 0.7015)]  # one run, every epoch whole
    assert [e.metrics["val_loss"] for e in run.epochs] == [1.1022, 0.871, 0.7994]
    assert len(run.runs()) == 1 and run.current.finished


def test_updates_glued_together_without_carriage_returns_still_end_their_epoch():
    run = read("ci_transcript_without_carriage_returns.log").run
    assert losses(run) == [(1, 1, 0.2501)] and run.epochs[0].metrics["val_binary_crossentropy"] == 0.7227
    assert run.current.finished
    exception = run.problems[ProblemId.EXCEPTION]  # the script that never trained is a warning, not the end
    assert exception.severity is Severity.WARNING and "NameError" in exception.message


def test_class5_powershell_utf16_with_bom():
    run = read("powershell_utf16le.log").run
    assert losses(run) == [(1, 1, 1.0123), (1, 2, 0.7777)]
    assert run.view_lines()[0] == "Epoch 1/2"  # the BOM does not hide the first line
    assert run.current.finished


def test_class6_the_real_error_not_the_shutdown_noise():
    run = read("tf1_error_then_shutdown_noise.log").run
    problem = run.problems["EXCEPTION"]
    assert "InvalidArgumentError: Incompatible shapes" in problem.message and problem.line_number == 15
    assert run.stopped_by() is problem and run.runs()[0].finish_reason is FinishReason.EXCEPTION
    finished = read("tf1_finished_then_shutdown_noise.log").run
    assert "EXCEPTION" not in finished.problems and finished.current.finished
    assert [p.id for p in finished.problem_list()] == ["FINISHED"]


def test_class7_early_stopping_means_finished_with_its_reason():
    run = read("early_stopping_tf2_and_keras3.log").run
    runs = run.runs()
    assert [(len(r.epochs), r.finished, r.finish_reason) for r in runs] == [
        (4, True, FinishReason.EARLY_STOPPING),
        (2, True, FinishReason.EARLY_STOPPING),
    ]
    assert run.current.finished and run.training_eta_seconds() is None and run.stall_problem(10**6) is None
    assert "stopped early by EarlyStopping at epoch 2/30" in run.problems["FINISHED"].message


def test_class8_announced_checkpoints_count_and_the_newest_is_shown(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes((LOGS / "checkpoints_announced.log").read_bytes())
    watch = LogWatch(log)
    watch.read_all()
    paths = [(c.path, c.epoch) for c in watch.run.checkpoints]
    assert paths == [("ckpt/best.h5", 1), ("ckpt/weights.02.hdf5", 2), ("./tf_ckpts/ckpt-3", 3)]
    (tmp_path / "tf_ckpts").mkdir()
    (tmp_path / "tf_ckpts" / "ckpt-3").write_bytes(b"x" * 7)  # found next to the log: its real size
    around = LogOversight(log, find_writer=False).update(watch)
    assert around.newest_checkpoint is not None and around.newest_checkpoint.size_bytes == 7
    assert around.announced.epoch == 3 and around.problems() == []  # no NO_CHECKPOINT
    empty = tmp_path / "empty"
    empty.mkdir()
    late = LogOversight(log, checkpoints_dir=empty, find_writer=False)
    state = late.update(watch)  # nothing on disk: the announcement still counts, dated by its epoch
    assert state.newest_checkpoint.path.name == "ckpt-3" and state.problems() == []


def test_class9_learning_rate_changes_are_recorded_on_their_epoch():
    run = read("reduce_lr_on_plateau.log").run
    assert [(e.fit_run, e.epoch, e.lr_change) for e in run.epochs if e.lr_change] == [
        (1, 2, 4.999999873689376e-05),
        (2, 2, 0.0012000000569969416),
    ]
    assert run.epochs[2].metrics["lr"] == 5e-05  # the next epoch runs at the new rate
    setting = "LearningRateScheduler setting learning rate to 0.01."
    scheduler = feed(
        f"Epoch 1/2\nEpoch 1: {setting}\n10/10 - 1s - loss: 0.5000\n"
        f"Epoch 2/2\nEpoch 2: {setting}\n10/10 - 1s - loss: 0.4000\n"
    )
    assert [e.lr_change for e in scheduler.epochs] == [0.01, None]  # the same rate again is no change


def test_terminate_on_nan_and_a_slurm_time_limit_end_their_runs():
    run = read("nohup_terminate_on_nan.out").run
    assert run.finish_reason() is FinishReason.TERMINATED_ON_NAN and run.stopped_by().id == "NAN_LOSS"
    slurm = read("slurm_cpu_fallback_time_limit.out").run
    assert [e.epoch for e in slurm.epochs] == [1, 2] and slurm.finish_reason() is FinishReason.KILLED
    assert "TIME LIMIT" in slurm.problems["KILLED"].message
    assert {"DSO_LOAD_FAIL", "KILLED"} <= set(slurm.problems)


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.iterdir() if p.suffix in (".log", ".out")))
def test_tail_first_then_history_equals_a_full_read(name):
    full = read(name)
    split = read(name, tail_bytes=300)
    assert [e.as_dict() | {"ended_at": None} for e in split.run.epochs] == [
        e.as_dict() | {"ended_at": None} for e in full.run.epochs
    ]
    assert [(r.index, r.finish_reason) for r in split.run.runs()] == [
        (r.index, r.finish_reason) for r in full.run.runs()
    ]


def test_log_json_has_runs_and_keeps_epochs_for_the_last_run(capsys):
    assert main(["log", "--json", str(LOGS / "fit_epochs1_loop.log")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [e["metrics"]["loss"] for e in data["epochs"]] == [0.5]
    assert [(r["run"], len(r["epochs"]), r["finished"], r["finish_reason"]) for r in data["runs"]] == [
        (1, 1, True, "completed"),
        (2, 1, True, "completed"),
        (3, 1, True, "completed"),
    ]
    assert data["runs"][0]["evaluation"]["metrics"] == {"loss": 0.95, "acc": 0.15}
    main(["log", "--json", str(LOGS / "reduce_lr_on_plateau.log")])
    data = json.loads(capsys.readouterr().out)
    assert data["runs"][0]["lr_changes"] == [{"epoch": 2, "learning_rate": 4.999999873689376e-05}]
    assert main(["log", str(LOGS / "early_stopping_tf2_and_keras3.log")]) == 0
    out = capsys.readouterr().out
    assert "run 1: 4 epochs, finished (early stopping)" in out and "finished (early stopping)" in out


def test_snapshot_is_immutable_and_does_not_follow_later_lines():
    run = feed("Epoch 1/3\n10/10 - 1s - loss: 0.9000\n")
    snapshot = run.snapshot()
    run.feed_segments(SegmentSplitter(3).feed(b"Epoch 2/3\n10/10 - 1s - loss: 0.8000\n"))
    assert len(snapshot.epochs) == 1 and snapshot.current.epoch == 1 and len(run.epochs) == 2
    with pytest.raises(TypeError):
        snapshot.epochs[0].metrics["loss"] = 0.0  # type: ignore[index]
    with pytest.raises(TypeError):
        snapshot.problems["X"] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        snapshot.current.epoch = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("line", "kind", "value"),
    [
        ("Epoch 86: ReduceLROnPlateau reducing learning rate to 8.000000525498762e-06.", "lr_change", 8e-06),
        (
            "Epoch 00003: LearningRateScheduler setting learning rate to "
            "tf.Tensor(0.001, shape=(), dtype=float32).",
            "lr_change",
            0.001,
        ),
        (
            "Epoch 5: val_loss improved from 0.41747 to 0.40000, saving model to runs/best model.keras",
            "checkpoint",
            "runs/best model.keras",
        ),
        (
            "INFO:tensorflow:Saving checkpoints for 500 into gs://bucket/model/model.ckpt.",
            "checkpoint",
            "gs://bucket/model/model.ckpt",
        ),
        ("Saved checkpoint for step 200: ./tf_ckpts/ckpt-2", "checkpoint", "./tf_ckpts/ckpt-2"),
        ("Epoch 00026: early stopping", "early_stopping", None),
        ("Restoring model weights from the end of the best epoch: 16.", "early_stopping", None),
        ("Batch 7: Invalid loss, terminating training", "terminated_on_nan", None),
        ("Epoch 00015: val_loss did not improve", None, None),
        ("we should stop early stopping soon", None, None),
    ],
)
def test_callback_messages(line, kind, value):
    from tfgpu_tui.training.callback_messages import parse_callback_message

    message = parse_callback_message(line)
    assert (message.kind.value if message else None) == kind
    if kind == "lr_change":
        assert message.learning_rate == pytest.approx(value)
    elif kind == "checkpoint":
        assert message.path == value


def test_docs_list_exactly_the_finish_reasons_and_run_keys():
    text = (ROOT / "docs" / "training-logs.md").read_text(encoding="utf-8")
    section = text.split("### Finish reasons", 1)[1].split("\n## ", 1)[0]
    header, *documented, none = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    assert (header, none) == ("finish_reason", "null")
    assert documented == [reason.value for reason in FinishReason]
    keys = re.search(r"`runs`: every `fit\(\)` run, oldest first: `\{([^}]+)\}`", text).group(1)
    run = read("fit_epochs1_loop.log").run.runs()[0]
    assert [key.strip() for key in keys.split(",")] == list(run.as_dict())


def test_keras3_without_carriage_returns_prints_the_last_step_twice_for_one_epoch():
    run = feed(
        "Epoch 1/2\n"
        "3/5 ━━━━━━━━━━━━ 0s 10ms/step - loss: 0.6000\n"
        "5/5 ━━━━━━━━━━━━━━━━━━━━ 0s 10ms/step - loss: 0.5000\n"  # not final: Windows has no \r
        "Epoch 1: val_loss improved from inf to 0.40000, saving model to best.keras\n"
        "5/5 ━━━━━━━━━━━━━━━━━━━━ 1s 20ms/step - loss: 0.5000 - val_loss: 0.4000\n"
        "Epoch 2/2\n"
    )
    assert [(e.epoch, dict(e.metrics)) for e in run.epochs] == [(1, {"loss": 0.5, "val_loss": 0.4})]
    assert run.epochs[0].seconds == 1 and [c.epoch for c in run.checkpoints] == [1]


def test_utf16_log_truncated_and_rewritten_as_utf8_is_followed(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"\xff\xfe" + "Epoch 1/1\r\n5/5 - 1s - loss: 0.5000\r\n".encode("utf-16-le"))
    watch = LogWatch(log)
    watch.read_all()
    assert [e.metrics["loss"] for e in watch.run.epochs] == [0.5]
    log.write_bytes(b"Epoch 1/1\n")  # `>` again, from a shell writing UTF-8
    watch.poll()
    with log.open("ab") as handle:
        handle.write(b"5/5 - 1s - loss: 0.2500\n")
    watch.poll()
    assert "truncated" in watch.events and [e.metrics["loss"] for e in watch.run.epochs][-1] == 0.25


def test_a_tpu_host_is_not_told_it_lacks_a_cuda_device():
    failed_cuinit = (
        "E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to cuInit: INTERNAL: "
        "CUDA error: Failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n"
    )
    assert "CUINIT_NO_DEVICE" in feed(failed_cuinit).problems  # on a GPU machine it is a problem
    tpu = feed(failed_cuinit + "I tpu_initializer_helper.cc:0] Found TPU system:\n*** Num TPU Cores: 8\n")
    assert "CUINIT_NO_DEVICE" not in tpu.problems
    later = feed("Found TPU system:\n" + failed_cuinit)
    assert "CUINIT_NO_DEVICE" not in later.problems


def test_windows_without_the_nvidia_driver_gets_windows_advice():
    run = feed(
        "W dso_loader.cc:64] Could not load dynamic library 'nvcuda.dll'; dlerror: nvcuda.dll not found\n"
        "E cuda_driver.cc:271] failed call to cuInit: UNKNOWN ERROR (303)\n"
    )
    assert set(run.problems) == {"WIN_NO_DRIVER_NVCUDA", "CUINIT_303"}
    assert (
        "WSL2" in run.problems["WIN_NO_DRIVER_NVCUDA"].fix
        and "LD_LIBRARY_PATH" not in run.problems["WIN_NO_DRIVER_NVCUDA"].fix
    )
    assert "SHARED_OBJECT_INIT_FAILED" in run.problems["CUINIT_303"].message


def test_a_nan_loss_that_recovers_is_a_warning_not_the_end():
    bar = "100/100 [==============================] - 1s 10ms/step - loss: "
    nan_epoch = f"Epoch 1/3\n{bar}0.5000\nEpoch 2/3\n{bar}nan\n"
    assert feed(nan_epoch).problems[ProblemId.NAN_LOSS].severity is Severity.CRITICAL
    recovered = feed(nan_epoch + f"Epoch 3/3\n{bar}0.4000\n").problems[ProblemId.NAN_LOSS]
    assert recovered.severity is Severity.WARNING
    assert "finite again at the end of epoch 3" in recovered.message
