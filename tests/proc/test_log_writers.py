"""Process -> log resolution on real child processes, and log -> writer."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import psutil
import pytest

from tests.helpers.training_children import SLEEPER, started_children
from tfgpu_tui.proc.log_writers import (
    OutputKind,
    StdioWalk,
    process_output,
    refresh_writer,
)

pytestmark = pytest.mark.e2e  # real child processes


@pytest.fixture
def children():
    yield from started_children()


def test_stdout_redirected_to_file(tmp_path: Path, children) -> None:
    log = tmp_path / "train.log"
    with log.open("w") as handle:
        children.append(subprocess.Popen(SLEEPER, stdout=handle, stderr=subprocess.STDOUT))
    found = process_output(children[0].pid)
    assert found.kind is OutputKind.FILE
    assert found.path == log
    assert "writes its stdout to" in found.message


def test_stderr_used_when_only_stderr_is_a_file(tmp_path: Path, children) -> None:
    log = tmp_path / "err.log"
    with log.open("w") as handle:
        children.append(subprocess.Popen(SLEEPER, stdout=subprocess.PIPE, stderr=handle))
    found = process_output(children[0].pid)
    assert (found.kind, found.path, found.stream) == (OutputKind.FILE, log, "stderr")


def test_pipe_is_not_a_log(children) -> None:
    children.append(subprocess.Popen(SLEEPER, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    found = process_output(children[0].pid)
    assert found.kind is OutputKind.PIPE and found.path is None
    assert "pipe" in found.message


def test_terminal_is_not_a_log(children) -> None:
    controller, terminal = pty.openpty()
    try:
        children.append(subprocess.Popen(SLEEPER, stdout=terminal, stderr=terminal))
        found = process_output(children[0].pid)
    finally:
        os.close(terminal)
        os.close(controller)
    assert found.kind is OutputKind.TERMINAL
    assert "nohup" in found.message


def test_deleted_file_is_reported(tmp_path: Path, children) -> None:
    log = tmp_path / "gone.log"
    with log.open("w") as handle:
        children.append(subprocess.Popen(SLEEPER, stdout=handle, stderr=handle))
    log.unlink()
    found = process_output(children[0].pid)
    assert found.kind is OutputKind.DELETED_FILE and found.path == log
    assert "deleted" in found.message


def test_devnull_and_missing_process() -> None:
    with subprocess.Popen(SLEEPER, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as child:
        try:
            assert process_output(child.pid).kind is OutputKind.NULL
        finally:
            child.kill()
    child.wait()
    gone = process_output(child.pid)
    assert gone.kind is OutputKind.UNREADABLE and "no such process" in gone.detail


def test_writer_found_and_followed_to_its_exit(tmp_path: Path, children) -> None:
    log = tmp_path / "train.log"
    with log.open("w") as handle:
        children.append(subprocess.Popen(SLEEPER, stdout=handle, stderr=subprocess.STDOUT))
    writer = StdioWalk().writer_of(log)
    assert writer is not None and writer.pid == children[0].pid and writer.alive
    assert "time.sleep" in writer.command
    children[0].kill()
    children[0].wait()
    assert not refresh_writer(writer).alive
    assert StdioWalk().writer_of(tmp_path / "other.log") is None


def test_logs_that_search_in_one_round_share_one_walk(
    tmp_path: Path, children, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each log finds its own writer, from one walk of /proc for all of them (16 idle logs of the
    exporter searched every 10 s, a walk each)."""
    logs = [tmp_path / f"rank{i}.log" for i in range(3)]
    for log in logs:
        with log.open("w") as handle:
            children.append(subprocess.Popen(SLEEPER, stdout=handle, stderr=subprocess.STDOUT))
    walks: list[object] = []
    process_iter = psutil.process_iter
    monkeypatch.setattr(psutil, "process_iter", lambda *a, **k: walks.append(a) or process_iter(*a, **k))
    walk = StdioWalk()
    found = [walk.writer_of(log) for log in logs]
    assert [writer.pid if writer else None for writer in found] == [child.pid for child in children]
    assert len(walks) == 1
    quiet = tmp_path / "no-writer.log"
    quiet.touch()
    assert walk.writer_of(quiet) is None and len(walks) == 1
