"""Around a followed log, without Textual: the writer (alive, exited, its status), the TensorFlow jobs' logs,
epoch end times and the no-checkpoint warning, and the demo's live simulated log."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.training_children import SLEEPER, started_children
from tests.helpers.waiting import wait_for
from tfgpu_tui.proc.log_writers import (
    LogWriter,
    StdioWalk,
    refresh_writer,
    tensorflow_logs,
)
from tfgpu_tui.training.checkpoints import CheckpointPolicy
from tfgpu_tui.training.demo_log import DemoTrainingLog
from tfgpu_tui.training.oversight import LogOversight
from tfgpu_tui.training.run import EpochRecord
from tfgpu_tui.training.synthetic import keras3_log
from tfgpu_tui.training.watch import LogWatch, estimate_end_times

pytestmark = pytest.mark.e2e  # real child processes


@pytest.fixture
def children():
    yield from started_children()


def test_tensorflow_logs_lists_file_writers_the_detector_accepts(tmp_path: Path, children) -> None:
    log = tmp_path / "train.log"
    with log.open("w") as handle:
        children.append(subprocess.Popen(SLEEPER, stdout=handle, stderr=subprocess.STDOUT))
    children.append(subprocess.Popen(SLEEPER, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    ours = {child.pid for child in children}
    found = tensorflow_logs(detector=lambda pid: pid in ours)
    assert [(c.pid, c.path, c.stream) for c in found] == [(children[0].pid, log, "stdout")]
    assert "time.sleep" in found[0].command
    assert tensorflow_logs(detector=lambda pid: False) == []


def test_exit_status_of_our_child_is_read_without_reaping_it(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    # it exits when the test closes its stdin, not 0.3 s after writing (a window a loaded machine overran
    # before the writer was found alive)
    code = "import sys; print('x', flush=True); sys.stdin.read(); sys.exit(3)"
    with log.open("w") as handle:
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=handle, stderr=handle
        )
    wait_for(lambda: log.stat().st_size > 0)
    writer = StdioWalk().writer_of(log)
    assert writer is not None and writer.alive and writer.cwd == Path.cwd()
    assert child.stdin is not None
    child.stdin.close()
    wait_for(lambda: not refresh_writer(writer).alive)
    gone = refresh_writer(writer)
    assert gone.exit_status == 3 and gone.state == "exited with status 3"
    assert child.wait(timeout=5) == 3  # still reapable by its owner
    assert LogWriter(1, "x", None, False).state == "exited"
    assert LogWriter(1, "x", None, False, exit_status=-9).state == "was killed by SIGKILL"


def _partial_run(tmp_path: Path) -> LogWatch:
    log = tmp_path / "train.log"
    log.write_text(keras3_log(10, 100, 10, done_epochs=2, partial_steps=50), encoding="utf-8")
    watch = LogWatch(log)
    watch.read_all()
    return watch


def test_stall_names_the_writer_alive_but_silent_or_exited(tmp_path: Path) -> None:
    watch = _partial_run(tmp_path)
    run = watch.run
    alive = LogWriter(42, "python train.py", None, True)
    assert run.stall_problem(30.0, alive) is None
    silent = run.stall_problem(12 * 60.0, alive)
    assert silent is not None and "PID 42) is alive but silent for 12m 00s" in silent.message
    exited = run.stall_problem(5.0, LogWriter(42, "python train.py", None, False, exit_status=1))
    assert exited is not None and "PID 42) exited with status 1 before training finished" in exited.message
    assert "may have died" in run.stall_problem(600.0).message
    watch.close()


def test_epoch_end_times_estimated_back_from_mtime_and_stamped_live(tmp_path: Path) -> None:
    records = [EpochRecord(i, 5, {}, seconds=None if i == 2 else 10.0) for i in range(1, 4)]
    estimate_end_times(records, 1000.0)
    assert [r.ended_at for r in records] == [None, 990.0, 1000.0]
    log = tmp_path / "train.log"
    log.write_text(keras3_log(10, 100, 10, done_epochs=3), encoding="utf-8")
    os.utime(log, (5000.0, 5000.0))
    watch = LogWatch(log)
    watch.read_all()
    assert watch.epoch_end_times() == [4992.0, 4996.0, 5000.0]  # "4s" per epoch
    assert watch.training_started() == 4988.0 and watch.last_growth_wall == 5000.0
    with log.open("a", encoding="utf-8") as handle:
        handle.write("".join(list(keras3_log(10, 100, 10, done_epochs=4).partition("Epoch 4/10")[1:])))
    before = time.time()
    watch.poll()
    assert len(watch.run.epochs) == 4 and watch.run.epochs[-1].ended_at >= before
    watch.close()


def _checkpointed_run(tmp_path: Path, checkpoint_age: float) -> tuple[LogWatch, LogOversight]:
    """Six finished epochs of 4 s each, ending at the file's mtime; a checkpoint `checkpoint_age` s older."""
    log = tmp_path / "logs" / "train.log"
    log.parent.mkdir()
    log.write_text(keras3_log(10, 100, 10, done_epochs=6, partial_steps=20), encoding="utf-8")
    now = time.time()
    os.utime(log, (now, now))
    checkpoint = tmp_path / "logs" / "ckpt" / "epoch.keras"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"weights")
    os.utime(checkpoint, (now - checkpoint_age, now - checkpoint_age))
    watch = LogWatch(log)
    watch.read_all()
    oversight = LogOversight(log, policy=CheckpointPolicy(5, 30.0), find_writer=False)
    return watch, oversight


def test_checkpoint_warning_after_six_epochs(tmp_path: Path) -> None:
    watch, oversight = _checkpointed_run(tmp_path, checkpoint_age=22.0)
    state = oversight.update(watch)
    assert state.newest_checkpoint is not None and state.newest_checkpoint.path.name == "epoch.keras"
    assert state.checkpoint_warning == "6 epochs since the last checkpoint"
    [problem] = state.problems()
    assert problem.id == "NO_CHECKPOINT" and "ModelCheckpoint" in problem.fix
    assert state.checkpoints_dict()["newest"]["size_bytes"] == 7
    watch.close()


def test_checkpoint_written_four_epochs_ago_is_quiet(tmp_path: Path) -> None:
    watch, oversight = _checkpointed_run(tmp_path, checkpoint_age=14.0)
    state = oversight.update(watch)
    assert state.newest_checkpoint is not None and state.checkpoint_warning == ""
    assert state.problems() == []
    watch.close()


def test_checkpoints_under_the_writers_working_directory(tmp_path: Path, children) -> None:
    (tmp_path / "run" / "ckpt").mkdir(parents=True)
    (tmp_path / "run" / "ckpt" / "model.weights.h5").write_bytes(b"w")
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "train.log"
    with log.open("w") as handle:
        children.append(subprocess.Popen(SLEEPER, stdout=handle, stderr=handle, cwd=tmp_path / "run"))
    watch = LogWatch(log)
    oversight = LogOversight(log)
    state = oversight.update(watch)
    assert state.writer is not None and state.writer.pid == children[0].pid
    assert state.checkpoint_roots == (tmp_path / "logs", tmp_path / "run")
    assert state.newest_checkpoint is not None and state.newest_checkpoint.path.name == "model.weights.h5"
    watch.close()


def test_demo_log_advances_epochs_and_is_cleaned_up() -> None:
    demo = DemoTrainingLog(update_seconds=0.005, epochs=4, steps=20, updates=4, history_epochs=0).start()
    try:
        watch = LogWatch(demo.path)

        def three_epochs() -> bool:
            watch.poll()
            return len(watch.run.epochs) >= 3

        wait_for(three_epochs)
        assert watch.run.epochs[0].metrics["loss"] > watch.run.epochs[2].metrics["loss"]
        assert "SIMULATED" in demo.path.read_text(encoding="utf-8").splitlines()[0]
        wait_for(lambda: (demo.checkpoints / "epoch-003.keras").exists())
        watch.close()
    finally:
        demo.stop()
    assert not demo.directory.exists()


@pytest.mark.tf
def test_a_real_tensorflow_job_is_offered_with_its_log(tmp_path: Path, children) -> None:
    log = tmp_path / "train.log"
    code = "import time, tensorflow; print('imported', flush=True); time.sleep(60)"
    with log.open("w") as handle:
        children.append(subprocess.Popen([sys.executable, "-c", code], stdout=handle, stderr=handle))
    wait_for(lambda: "imported" in log.read_text(errors="replace"), timeout=120)
    found = {candidate.pid: candidate.path for candidate in tensorflow_logs()}
    assert found.get(children[0].pid) == log


def test_a_new_run_appending_to_the_log_becomes_the_writer(tmp_path: Path, children) -> None:
    log = tmp_path / "train.log"
    with log.open("a") as handle:
        first = subprocess.Popen(SLEEPER, stdout=handle, stderr=handle)
    now = [0.0]
    oversight = LogOversight(log, writer_pid=first.pid, find_writer=True, clock=lambda: now[0])
    first.kill()
    first.wait()
    watch = LogWatch(log)
    now[0] = 100.0
    assert oversight.update(watch).writer.alive is False
    with log.open("a") as handle:
        children.append(subprocess.Popen(SLEEPER, stdout=handle, stderr=handle))
    wait_for(lambda: (watch.poll(), "started" in log.read_text())[1])
    watch.poll()
    now[0] = 200.0
    state = oversight.update(watch)
    assert state.writer is not None and state.writer.pid == children[0].pid and state.writer.alive
    watch.close()
