"""Logs from clusters (issue 41): launcher prefixes, scheduler ends, NaN outside Keras' bar, advisories a run
survives, custom loops' epochs. Real excerpts (tests/fixtures/logs/clusters, origins in its README) and small
texts in the same formats; and issue 39's `log` items: one problem a line in words, no live rate once
stopped."""

from __future__ import annotations

import json

import pytest

from tests.helpers.paths import FIXTURES
from tfgpu_tui.alerts import Severity
from tfgpu_tui.cli import main
from tfgpu_tui.training.follow import SegmentSplitter
from tfgpu_tui.training.records import FinishReason
from tfgpu_tui.training.run import TrainingRun
from tfgpu_tui.training.text_format import status_text
from tfgpu_tui.training.watch import LogWatch

CLUSTERS = FIXTURES / "logs" / "clusters"
COMPLETED = (
    "Epoch 1/2\n10/10 - 1s - 9ms/step - loss: 0.5000 - val_loss: 0.6000\n"
    "Epoch 2/2\n10/10 - 1s - 9ms/step - loss: 0.4000 - val_loss: 0.5000\n"
)
TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    model.fit(x)\n'


def read(name: str, tail_bytes: int = 10**9) -> TrainingRun:
    watch = LogWatch(CLUSTERS / name, tail_bytes=tail_bytes)
    watch.read_all()
    watch.close()
    return watch.run


def feed(text: str) -> TrainingRun:
    run = TrainingRun()
    run.feed_segments(SegmentSplitter().feed(text.encode()))
    return run


def prefixed(prefix: str, text: str) -> str:
    return "".join(f"{prefix}{line}\n" for line in text.splitlines())


def interleave(*texts: str) -> str:
    """The lines of each text taken in turn, as ranks writing at the same pace look in one file."""
    rows = [text.splitlines() for text in texts]
    out = []
    for index in range(max(len(r) for r in rows)):
        out += [r[index] for r in rows if index < len(r)]
    return "\n".join(out) + "\n"


# ----- launcher prefixes -----
def test_a_rank_s_traceback_under_mpirun_is_named_with_its_rank(capsys):
    run = read("horovod_tf25_rank2_error.log")
    error = run.problems["EXCEPTION"]
    assert error.rank == 2 and error.severity is Severity.CRITICAL and error.line_number == 12
    assert "UnknownError: Horovod has been shut down." in error.message
    assert [(e.epoch, e.metrics["val_auc"]) for e in run.epochs] == [(1, 0.8013)]  # rank 0's epoch
    assert main(["log", str(CLUSTERS / "horovod_tf25_rank2_error.log")]) == 1
    assert "[critical] Training stopped by an error (rank 2, line 12):" in capsys.readouterr().out


def test_interleaved_ranks_of_a_custom_loop_keep_one_rank_s_progress():
    run = read("horovod_interleaved_custom_loop.log")
    cur = run.current  # rank 1 printed first: its count, never rank 0's in between
    assert (cur.epoch, cur.total_epochs, cur.step, cur.total_steps) == (0, 100, 21, 29316)
    assert "Epoch 0/100" in status_text(run) and not run.problem_list()


def test_horovodrun_s_own_prefix_is_stripped():
    run = read("horovodrun_gloo_prefix.log")
    assert run.view_lines()[0].startswith("coreClock:") and not run.problem_list()


@pytest.mark.parametrize(
    "prefixes",
    [
        ("[1,0]<stdout>:", "[1,1]<stdout>:"),  # mpirun --tag-output
        ("0: ", "1: "),  # srun --label
        ("[default0]:", "[default1]:"),  # torchrun
    ],
)
def test_interleaved_keras_ranks_count_one_rank_s_epochs(prefixes):
    rank0, rank1 = (prefixed(p, COMPLETED) for p in prefixes)
    run = feed(interleave(rank0, rank1))
    assert [(e.fit_run, e.epoch) for e in run.epochs] == [(1, 1), (1, 2)]  # not 1,1,2,2: one rank's
    assert run.current.finished and len(run.runs()) == 1 and not run.problem_list()[1:]


def test_a_nan_loss_in_a_rank_that_does_not_lead_counts():
    rank1 = COMPLETED.replace("loss: 0.4000", "loss: nan")
    run = feed(interleave(prefixed("[1,0]<stdout>:", COMPLETED), prefixed("[1,1]<stdout>:", rank1)))
    nan = run.problems["NAN_LOSS"]
    assert nan.rank == 1 and nan.severity is Severity.CRITICAL
    assert [e.metrics["loss"] for e in run.epochs] == [0.5, 0.4]  # rank 0's values


def test_open_mpi_s_tag_repeated_in_mid_line_is_stripped():
    # Open MPI tags every chunk it reads from a rank's pipe: these lines are what Open MPI 4.1.4 wrote for
    # a real rank run with PYTHONUNBUFFERED=1 (the traceback's line came in pieces, each tagged)
    run = feed(
        "[1,1]<stderr>:Traceback (most recent call last):\n"
        '[1,1]<stderr>:  File "r.py", line 14, in <module>\n'
        '[1,1]<stderr>:    [1,1]<stderr>:raise ValueError("bad shard")[1,1]<stderr>:\n'
        "[1,1]<stderr>:ValueError[1,1]<stderr>:: [1,1]<stderr>:bad shard[1,1]<stderr>:\n"
    )
    assert "ValueError: bad shard" in run.problems["EXCEPTION"].message


def test_the_first_rank_to_fail_stays_the_cause():
    text = prefixed("[1,1]<stderr>:", TRACEBACK + "ValueError: empty shard") + prefixed(
        "[1,0]<stderr>:",
        TRACEBACK + "tensorflow.python.framework.errors_impl.UnknownError: Horovod has been shut down.",
    )
    error = feed(text).problems["EXCEPTION"]
    assert error.rank == 1 and "ValueError: empty shard" in error.message and error.count == 2


def test_lines_that_only_look_like_prefixes_are_left_alone():
    run = feed("Epoch 1/2\n  1/10 [..] - ETA: 9s - loss: 0.9000\n10/10 [====] - 1s 9ms/step - loss: 0.5000\n")
    assert run.current.epoch == 1 and [e.epoch for e in run.epochs] == [1]


# ----- scheduler ends -----
@pytest.mark.parametrize(
    ("name", "title", "quoted", "fix"),
    [
        ("slurm_node_name_time_limit.out", "Job reached its time limit", "ON phoenix-07", "--time"),
        ("slurm_srun_step_time_limit.out", "Job reached its time limit", "STEP 32233190.0", "--time"),
        ("slurm_old_form_time_limit.out", "Job reached its time limit", "TIME LIMIT on n447", "--time"),
        ("pbs_walltime.out", "Job reached its time limit", "walltime 86415 exceeded limit 86400", "walltime"),
        ("lsf_term_runlimit.out", "Job reached its time limit", "TERM_RUNLIMIT", "LSF `-W`"),
        ("lsf_term_memlimit.out", "Job ran out of its memory limit", "TERM_MEMLIMIT", "--mem"),
    ],
)
def test_real_scheduler_ends_are_named_with_their_fix(name, title, quoted, fix):
    (problem,) = read(name).problem_list()
    assert (problem.id, problem.title, problem.severity) == ("KILLED", title, Severity.CRITICAL)
    assert quoted in problem.message and fix in problem.fix and "last checkpoint" in problem.fix


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("slurmstepd: error: *** JOB 77 ON gpu12 CANCELLED AT 2024-05-01T10:00:00 ***", "Job cancelled"),
        ("slurmstepd-gpu12: error: *** JOB 77 ON gpu12 CANCELLED AT 2024-05-01T10:00 DUE TO NODE FAILURE ***",
         "Job's node failed"),
        ("slurmstepd: error: *** JOB 77 ON gpu12 CANCELLED AT 2024-05-01T10:00:00 DUE TO PREEMPTION ***",
         "Job preempted"),
        ("srun: *** STEP 77.0 ON gpu12 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME LIMIT ***",
         "Job reached its time limit"),
        ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=77.batch. Some of your processes may "
         "have been killed by the cgroup out-of-memory handler.", "Job ran out of its memory limit"),
        ("srun: error: gpu12: task 0: Out Of Memory", "Job ran out of its memory limit"),
        ("srun: error: Node failure on gpu12", "Job's node failed"),
        ("=>> PBS: job killed: mem 9437184kb exceeded limit 8388608kb", "Job ran out of its memory limit"),
        ("TERM_OWNER: job killed by owner.", "Job cancelled"),
        ("mpirun noticed that process rank 1 with PID 4242 on node n1 exited on signal 9 (Killed).",
         "A rank was killed"),
    ],
)  # fmt: skip
def test_each_scheduler_end_is_named(line, title):
    run = feed(COMPLETED.split("Epoch 2/2")[0] + "Epoch 2/2\n" + line + "\n")
    problem = run.problems["KILLED"]
    assert problem.title == title and problem.severity is Severity.CRITICAL and problem.fix
    assert run.finish_reason() is FinishReason.KILLED and run.stopped_by() is problem


def test_a_scheduler_s_reason_replaces_the_shell_s_plain_killed():
    (problem,) = read("lsf_term_memlimit.out").problem_list()
    assert problem.count == 2 and problem.message.startswith("LSF ended the job for using more memory")


# ----- NaN and inf outside Keras' bar -----
@pytest.mark.parametrize(
    "line",
    [
        "step 100 loss nan",
        "step 7: total_loss = inf",
        "epoch 2 train_loss: -inf",
        "Iter 1098: loss nan,  runtime: 0.11",
        "step 3 loss tf.Tensor(nan, shape=(), dtype=float32)",
        "Total loss is  nan ETA is  7:03:08.214666",
        " 'Loss/total_loss': nan,",
        "InvalidArgumentError: Checking b : Tensor had Inf values",
    ],
)
def test_nan_and_inf_are_caught_wherever_a_loss_is_printed(line):
    problem = feed(f"step 1 loss 0.5\n{line}\n").problems["NAN_LOSS"]
    assert problem.severity is Severity.CRITICAL and problem.line_number == 2


@pytest.mark.parametrize(
    "line",
    [
        "financial loss report: info nano",
        "loss: inference took 3s",
        "INFO: loss scale is dynamic, nan_guard on",
        "loss 0.2500  grad_norm inf",  # an infinite gradient norm is not the loss
        "| 24b7d7ac | -14.38149 | -51.87044 | NPP-375D | 51 | 33 | nan | nan | nan | Cerrado | 1.0 |",
    ],
)
def test_words_that_contain_nan_or_inf_raise_nothing(line):
    assert "NAN_LOSS" not in feed(f"{COMPLETED}{line}\n").problems


def test_a_custom_loop_that_diverged_real_log():
    run = read("custom_loop_epoch_loss_nan.log")
    problem = run.problems["NAN_LOSS"]
    assert problem.line_number == 10 and problem.count == 3 and "epoch 3451" in problem.message
    assert run.current.epoch == 3453  # one line an epoch: the count is clear


def test_a_loss_column_of_a_table():
    table = "step    loss      lr\n1       0.6931    0.1\n2       0.5012    0.1\n3       nan       0.1\n"
    assert feed(table).problems["NAN_LOSS"].line_number == 4
    piped = "| step | loss | time |\n|---|---|---|\n| 1 | 0.69 | 2s |\n| 2 | inf | 2s |\n"
    assert feed(piped).problems["NAN_LOSS"].line_number == 4
    other_column = "step    loss      grad_norm\n1       0.6931    nan\n"
    assert "NAN_LOSS" not in feed(other_column).problems


def test_check_numerics_real_log():
    problem = read("tf_check_numerics_relugrad.log").problems["NAN_LOSS"]
    assert "check_numerics" in problem.message and "ReluGrad input is not finite" in problem.message
    assert problem.severity is Severity.CRITICAL


def test_a_check_numerics_error_that_ends_the_run_is_one_problem():
    message = "loss is not finite. : Tensor had NaN values"
    text = f"W executor.cc:1027] Compute status: Invalid argument: {message}\n{TRACEBACK}"
    text += f"tensorflow.python.framework.errors_impl.InvalidArgumentError: {message}\n"
    (problem,) = feed(text).problem_list()
    assert problem.id == "EXCEPTION" and problem.title == "Loss is NaN" and "clip gradients" in problem.fix


# ----- advisories a run survives -----
ADVISORY_ASM = (
    "W tensorflow/compiler/xla/stream_executor/gpu/asm_compiler.cc:85] Couldn't get ptxas version string: "
    "INTERNAL: Couldn't invoke ptxas --version\nRelying on driver to perform ptx compilation.\n"
)


@pytest.mark.parametrize(
    "advisory",
    [
        (CLUSTERS / "ptxas_relying_on_driver.log").read_text(),
        ADVISORY_ASM,
        *(CLUSTERS / "tf_startup_advisories.log").read_text().splitlines(keepends=True),
    ],
)
def test_healthy_controls_an_advisory_in_a_completed_run_is_at_most_info(advisory, tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text(advisory + COMPLETED)
    assert main(["log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "[warning]" not in out and "[critical]" not in out
    watch = LogWatch(log)
    watch.read_all()
    watch.close()
    assert {p.severity for p in watch.run.problem_list()} == {Severity.INFO} and watch.run.current.finished


def test_ptxas_becomes_the_problem_when_xla_compilation_then_failed():
    text = (
        ADVISORY_ASM
        + "Epoch 1/2\n"
        + TRACEBACK
        + "tensorflow.python.framework.errors_impl.InternalError: XLA compilation failed: ptxas exited with "
        "non-zero error code 65280\n"
    )
    problems = feed(text).problem_list()
    assert [p.id for p in problems] == ["EXCEPTION"]
    (error,) = problems
    assert error.title == "ptxas not found" and "xla_gpu_cuda_data_dir" in error.fix
    unrelated = feed(
        ADVISORY_ASM + "Epoch 1/2\n" + TRACEBACK + "ValueError: bad input shape\n"
    ).problem_list()
    assert {(p.id, p.severity) for p in unrelated} == {
        ("EXCEPTION", Severity.CRITICAL),
        ("PTXAS_MISSING", Severity.INFO),
    }


def test_xla_failing_for_want_of_ptxas_real_log_is_a_problem():
    (problem,) = read("ptxas_xla_op_failed.log").problem_list()
    assert problem.id == "PTXAS_MISSING" and problem.severity is Severity.WARNING


# ----- custom loops' epochs -----
@pytest.mark.parametrize(
    ("text", "epoch", "total", "step"),
    [
        ("epoch 3, step 100 loss 0.51\n", 3, None, 100),
        ("Epoch 2/10, Batch 17/300\n", 2, 10, 17),
        ("EPOCH 15 COMPLETED\n", 15, None, None),
        ("Epoch 3/10\nstep 100 loss 0.5120\n", 3, 10, 0),  # Keras' header format, the loop's own prints
        ("epoch 1, step 5\nepoch 2, step 5\nepoch 1, step 6\n", None, None, 5),  # goes back: ambiguous
        ("epoch 1, step 5\nmy epoch counter is odd\n", 1, None, 5),
    ],
)
def test_custom_loop_epochs_are_counted_where_clear(text, epoch, total, step):
    cur = feed(text).current
    assert (cur.epoch, cur.total_epochs, cur.step) == (epoch, total, step)


def test_keras_epochs_are_not_moved_by_a_callback_s_own_epoch_lines():
    run = feed("Epoch 1/2\nepoch 7, step 3 (my callback)\n10/10 - 1s - 9ms/step - loss: 0.5000\n")
    assert [e.epoch for e in run.epochs] == [1] and run.current.epoch == 1


# ----- issue 39: one problem a line, no live rate once stopped -----
def test_a_stopped_run_shows_no_live_rate():
    bars = "Epoch 1/5\n" + "".join(f"{k}/100 [..] - ETA: 9s - loss: 0.9000\r" for k in range(1, 6))
    running = feed(bars + "6/100 [..] - ETA: 9s - 19ms/step - loss: 0.9000\n")
    assert "steps/s" in status_text(running)
    stopped = feed(bars + "6/100 [..] - ETA: 9s - 19ms/step - loss: 0.9000\n" + TRACEBACK + "ValueError: x\n")
    assert "steps/s" not in status_text(stopped) and "stopped" in status_text(stopped)
    finished = feed(COMPLETED)
    assert "steps/s" not in status_text(finished)


def test_log_json_names_the_rank_and_text_has_no_codes(tmp_path, capsys):
    assert main(["log", "--json", str(CLUSTERS / "horovod_tf25_rank2_error.log")]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [(p["id"], p["rank"]) for p in problems] == [("EXCEPTION", 2), ("FINISHED", None)]
    main(["log", str(CLUSTERS / "slurm_node_name_time_limit.out")])
    out = capsys.readouterr().out
    assert "KILLED" not in out and "[critical] Job reached its time limit (line 1):" in out


@pytest.mark.parametrize("name", sorted(p.name for p in CLUSTERS.iterdir() if p.suffix in (".log", ".out")))
def test_tail_first_then_history_equals_a_full_read(name):
    full, split = read(name), read(name, tail_bytes=300)
    assert [e.as_dict() | {"ended_at": None} for e in split.epochs] == [
        e.as_dict() | {"ended_at": None} for e in full.epochs
    ]
    assert [(r.index, r.finish_reason) for r in split.runs()] == [
        (r.index, r.finish_reason) for r in full.runs()
    ]


def test_hostile_prefixes_stay_bounded():
    many = "".join(f"[1,{rank}]<stdout>:hello\n" for rank in range(3000))
    run = feed(many + prefixed("[1,2999]<stderr>:", TRACEBACK + "ValueError: last rank"))
    assert run.problems["EXCEPTION"].rank == 2999  # ranks past the readers' cap still have their errors read
    huge = feed("[1,99999999999]<stdout>:Epoch 1/2\n")  # not a rank number a launcher writes: left as text
    assert huge.view_lines() == ["[1,99999999999]<stdout>:Epoch 1/2"]
