"""From log to epochs, current state and problems: fixtures of Keras 2/3, errors, JSON lines, big files."""

from __future__ import annotations

import json
import math

import pytest

from tests.helpers.paths import FIXTURES
from tfgpu_tui.alerts import Severity
from tfgpu_tui.training.follow import SegmentSplitter
from tfgpu_tui.training.run import TrainingRun
from tfgpu_tui.training.synthetic import keras3_log
from tfgpu_tui.training.watch import LogWatch

FIXTURES = FIXTURES / "training"


def read(name: str) -> TrainingRun:
    watch = LogWatch(FIXTURES / name)
    watch.read_all()
    return watch.run


@pytest.mark.parametrize("name", ["keras3_verbose1", "keras3_verbose2"])
def test_real_keras3_logs_match_history(name):
    run = read(f"{name}.log")
    history = json.loads((FIXTURES / f"{name}.history.json").read_text())
    assert [e.epoch for e in run.epochs] == [1, 2, 3]
    assert all(e.total_epochs == 3 and e.steps == 60 for e in run.epochs)
    for metric, values in history.items():
        assert [e.metrics[metric] for e in run.epochs] == pytest.approx(values, abs=5e-5)
    assert run.current.finished and run.problem_list()[0].id == "FINISHED"
    assert run.view_lines()[-1].startswith("60/60 ") and "\x1b" not in "".join(run.view_lines())


def test_keras2_verbose1_and_verbose2():
    run = read("keras2_verbose1.log")
    assert [e.metrics["val_loss"] for e in run.epochs] == [1.9871, 3.4567e-04]
    assert [e.seconds for e in run.epochs] == [5, 5]
    assert run.problem_list()[0].id == "FINISHED"
    run = read("keras2_verbose2.log")
    assert [e.metrics["loss"] for e in run.epochs] == [2.3182, -1.2345, 0.9]
    assert [e.step_seconds for e in run.epochs] == pytest.approx([0.035, 0.021, 0.020])


def test_oom_traceback_gives_exception_and_signature_problems():
    run = read("keras3_oom_traceback.log")
    problems = {p.id: p for p in run.problem_list()}
    assert problems["EXCEPTION"].line_number == 8
    assert "ResourceExhaustedError" in problems["EXCEPTION"].message
    # the allocation it failed (line 11) is the same cause: one problem, its detail in the error's sentence
    assert "OOM_TENSOR" not in problems and "OOM_TENSOR" in run.problems
    assert "shape [" in problems["EXCEPTION"].message
    # the allocator's warning was the prelude of the real OOM that followed: not a problem of its own
    assert "BFC_RAN_OUT" not in problems and run.problems["BFC_RAN_OUT"].severity is Severity.WARNING
    assert run.current.epoch == 1 and run.current.step == 1 and run.current.eta_seconds is None
    assert run.training_eta_seconds() is None  # it crashed
    assert not run.epochs


def test_nan_loss_killed_and_cpu_fallback():
    run = read("keras3_nan_killed.log")
    ids = [p.id for p in run.problem_list()]
    assert ids[:2] == ["NAN_LOSS", "KILLED"] and "CANNOT_DLOPEN_GPU_LIBS" in ids
    assert [e.epoch for e in run.epochs] == [1, 2]  # epoch 3 never finished
    assert math.isnan(run.epochs[1].metrics["val_loss"]) and run.epochs[0].metrics["my_metric_2"] == 0.5
    assert run.as_dict()["epochs"][1]["metrics"]["loss"] == "nan"
    assert run.stall_problem(10_000) is None  # killed is not stalled


def test_json_lines_logger_records_are_exact_and_give_samples_per_second():
    run = read("jsonlines_logger.jsonl")
    assert [e.metrics["loss"] for e in run.epochs] == [0.81234567, 0.71234567]
    assert {e.source for e in run.epochs} == {"json"}
    assert run.current.samples_per_second == pytest.approx(1600)


def test_json_record_wins_over_the_progress_line_of_the_same_epoch():
    run = TrainingRun()
    for line in [
        "Epoch 1/1",
        '{"event": "epoch_end", "epoch": 1, "epochs": 1, "logs": {"loss": 0.123456789}}',
        "10/10 - 1s - 5ms/step - loss: 0.1235",
    ]:
        run.feed_segments(_segments(line + "\n"))
    assert len(run.epochs) == 1 and run.epochs[0].metrics["loss"] == 0.123456789


def _segments(text: str):
    return SegmentSplitter().feed(text.encode())


def test_several_fit_calls_and_a_single_epoch_fit_without_header():
    run = TrainingRun()
    run.feed_segments(
        _segments(
            "10/10 - 1s - 5ms/step - loss: 0.5000 - val_loss: 0.6000\n"  # fit(epochs=1) prints no header
            "Epoch 1/2\n10/10 - 1s - 5ms/step - loss: 0.4000\n"
            "Epoch 2/2\n10/10 - 1s - 5ms/step - loss: 0.3000\n"
            "Epoch 1/2\n10/10 - 1s - 5ms/step - loss: 0.2000\n"
        )
    )
    assert [(e.fit_run, e.epoch) for e in run.epochs] == [(1, 1), (2, 1), (2, 2), (3, 1)]
    assert [e.metrics["loss"] for e in run.latest_fit_epochs()] == [0.2]
    assert "FINISHED" not in run.problems  # the third fit is still running
    before = TrainingRun()  # without validation values, a first headerless bar is an evaluate() before fit()
    before.feed_segments(
        _segments("10/10 - 1s - 5ms/step - loss: 0.5000\nEpoch 1/2\n10/10 - 1s - loss: 0.4000\n")
    )
    assert [(e.fit_run, e.epoch, e.metrics["loss"]) for e in before.epochs] == [(1, 1, 0.4)]


def test_within_epoch_curve_and_live_partial_update(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(keras3_log(5, 200, 20, done_epochs=2, partial_steps=100), encoding="utf-8")
    watch = LogWatch(path)
    watch.poll()
    run = watch.run
    assert (run.current.epoch, run.current.total_epochs) == (3, 5)
    assert run.current.step == 100 and run.current.eta_seconds is not None
    assert [s for s, _ in run.curve] == list(range(10, 100, 10))
    assert run.view_lines()[-1].startswith("100/200 ━")
    assert run.training_eta_seconds() > run.current.eta_seconds


def test_stall_needs_idle_time_well_beyond_the_step_time():
    run = TrainingRun()
    run.feed_segments(_segments("Epoch 1/3\n"))
    run.feed_partial("\r 5/100 ━━━━━━━━━━━━━━━━━━━━ 10s 2s/step - loss: 0.5")
    assert run.stall_threshold() == 100  # 50 x 2 s
    assert run.stall_problem(99) is None
    problem = run.stall_problem(101)
    assert problem is not None and problem.id == "STALL" and "1m 41s" in problem.message


def test_big_file_tail_first_then_history_equals_a_full_read(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(keras3_log(40, 300, 30, done_epochs=25, partial_steps=150), encoding="utf-8")
    watch = LogWatch(path, tail_bytes=30_000)
    watch.poll()
    assert watch.run.current.epoch == 26 and not watch.backfill_done
    assert len(watch.run.epochs) < 25
    while not watch.backfill_done:
        watch.backfill_step()
    full = LogWatch(path, tail_bytes=10**9)
    full.read_all()
    assert [e.as_dict() for e in watch.run.epochs] == [e.as_dict() for e in full.run.epochs]
    assert [e.epoch for e in watch.run.epochs] == list(range(1, 26))
    append = "\b\r300/300 ━━━━━━━━━━━━━━━━━━━━ 12s 42ms/step - loss: 0.1000 - val_loss: 0.2000\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(append)
    watch.poll()
    assert watch.run.epochs[-1].epoch == 26
    assert watch.run.epochs[-1].line_number == full.run.epochs[-1].line_number + 2


def test_crlf_log_from_windows():
    run = TrainingRun()
    follower_text = "Epoch 1/1\r\n10/10 - 1s - 5ms/step - loss: 0.5000\r\n"
    run.feed_segments(_segments(follower_text))
    assert [e.metrics for e in run.epochs] == [{"loss": 0.5}]


def test_truncation_event_is_shown_in_the_view(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("Epoch 1/2\nlots of old text\n")
    watch = LogWatch(path)
    watch.poll()
    path.write_text("Epoch 1/9\n")
    watch.poll()
    assert "truncated" in watch.events
    assert any("truncated" in line for line in watch.run.view_lines())
    assert watch.run.current.total_epochs == 9


def test_screenshot_demo_fixture_is_mid_training_with_a_warning():
    run = read("screenshot_demo.log")
    assert [e.epoch for e in run.epochs] == list(range(1, 8))
    assert (run.current.epoch, run.current.total_epochs, run.current.total_steps) == (8, 20, 469)
    assert not run.current.finished and len(run.curve) > 10
    assert [p.id for p in run.problem_list()] == ["BFC_RAN_OUT"]
