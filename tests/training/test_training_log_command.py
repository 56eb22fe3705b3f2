"""`tfgpu-tui log`: table and JSON output, exit codes, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tests.helpers.paths import FIXTURES
from tfgpu_tui.cli import main

pytestmark = pytest.mark.e2e  # real child processes

FIXTURES = FIXTURES / "training"


def test_table_output(capsys):
    assert main(["log", str(FIXTURES / "keras3_verbose1.log")]) == 0
    out = capsys.readouterr().out
    assert "epoch  time  accuracy    loss  val_accuracy  val_loss" in out
    assert "3/3" in out and "0.6923" in out and "[info] Training finished (line 9)" in out
    assert "FINISHED" not in out  # titles in words, no internal codes (issue 39)


def test_json_keys_documented_in_the_issue(capsys):
    assert main(["log", "--json", str(FIXTURES / "keras3_oom_traceback.log")]) == 1  # critical problem
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"epochs", "current", "problems"}
    assert set(data["current"]) >= {"epoch", "step", "total_steps", "eta_seconds", "metrics"}
    assert data["current"]["eta_seconds"] is None  # the run crashed: no time left to show (issue 24)
    (oom,) = data["problems"]  # the error and the allocation it failed are one problem (issue 39)
    assert oom["id"] == "EXCEPTION" and oom["title"] == "Out of GPU memory" and oom["line_number"] == 8
    assert "shape [" in oom["message"] and oom["fix"] and oom["rank"] is None


def test_json_epochs(capsys):
    main(["log", "--json", str(FIXTURES / "keras2_verbose2.log")])
    epochs = json.loads(capsys.readouterr().out)["epochs"]
    assert epochs[0]["epoch"] == 1 and epochs[0]["total_epochs"] == 3 and epochs[0]["seconds"] == 2
    assert epochs[1]["metrics"]["loss"] == -1.2345


def test_missing_file_and_directory_are_clear_errors(capsys, tmp_path):
    assert main(["log", str(tmp_path / "nope.log")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["log", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file_is_a_clear_error(capsys, tmp_path):
    path = tmp_path / "secret.log"
    path.write_text("x\n")
    path.chmod(0)
    try:
        assert main(["log", str(path)]) == 2
    finally:
        path.chmod(0o644)
    assert "cannot read" in capsys.readouterr().err


def test_follow_json_streams_epochs_as_they_are_written(tmp_path):
    log = tmp_path / "train.log"
    child = subprocess.Popen(
        [sys.executable, "-m", "tfgpu_tui", "log", "--follow", "--json", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "waiting for" in child.stderr.readline()
        log.write_text("")  # nothing is printed on stdout before the file exists
        assert f"{log} appeared at " in child.stderr.readline()
        assert json.loads(child.stdout.readline())["type"] == "state"
        log.write_text("Epoch 1/2\n10/10 - 1s - 5ms/step - loss: 0.5000 - val_loss: 0.6000\n")
        event = json.loads(child.stdout.readline())
        assert event["type"] == "epoch" and event["metrics"] == {"loss": 0.5, "val_loss": 0.6}
    finally:
        child.terminate()
        child.wait(timeout=5)


def test_json_names_the_writer_and_the_newest_checkpoint(tmp_path, capsys):
    log = tmp_path / "train.log"
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "epoch-002.keras").write_bytes(b"weights")
    code = "import time; print('Epoch 1/3', flush=True); time.sleep(60)"
    with log.open("w") as handle:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=handle, stderr=handle)
    try:
        for _ in range(500):
            if log.stat().st_size:
                break
            time.sleep(0.01)
        assert main(["log", "--json", str(log)]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["writer"]["pid"] == child.pid and data["writer"]["alive"] is True
        assert data["checkpoints"]["newest"]["path"].endswith("epoch-002.keras")
        assert data["checkpoints"]["count"] == 1 and data["checkpoints"]["warning"] == ""
        assert main(["--checkpoints", str(tmp_path / "elsewhere"), "log", str(log)]) == 0
        out = capsys.readouterr().out
        assert f"Writer: PID {child.pid} (alive)" in out and "Checkpoint: none found under" in out
    finally:
        child.kill()
        child.wait()


def test_follow_text_prints_no_empty_fix_after_finished(tmp_path):
    """FINISHED has nothing to fix: its line ends with the message, not with an empty `fix:` (issue 24)."""
    log = tmp_path / "train.log"
    log.write_text("")  # exists: the summary comes at once
    child = subprocess.Popen(
        [sys.executable, "-m", "tfgpu_tui", "log", "--follow", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    guard = threading.Timer(60.0, child.kill)  # a hang ends the child, so readline returns "" and fails
    guard.start()
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == str(log)  # the summary printed at start
        log.write_text("Epoch 1/1\n10/10 - 1s - 5ms/step - loss: 0.5000 - val_loss: 0.6000\n")
        line = ""
        while "Training finished" not in line:  # the file event and the epoch come first
            line = child.stdout.readline()
            assert line, "log --follow ended before reporting that training finished"
        assert line.rstrip().endswith("final loss 0.5.") and "fix:" not in line
    finally:
        guard.cancel()
        child.terminate()
        child.wait(timeout=5)
