"""A run that ended (crashed, killed, finished) has no ETA anywhere, and an epoch's end time is given only
when the log says it or it was seen arriving (issue 24, item 11)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tfgpu_tui.cli import main
from tfgpu_tui.export.training_series import training_values
from tfgpu_tui.training.log_state import state_of
from tfgpu_tui.training.oversight import LogOversight
from tfgpu_tui.training.records import EndTimeSource
from tfgpu_tui.training.watch import LogWatch

CRASH = (
    "Epoch 1/3\n"
    "\r\x1b[1m10/10\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m9s\x1b[0m 1s/step - loss: 0.9000\n"
    "Epoch 2/3\n"
    "\r\x1b[1m 5/10\x1b[0m \x1b[32m━━━━━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━\x1b[0m \x1b[1m4s\x1b[0m 1s/step"
    " - loss: 0.8000"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: Graph execution error:\n"
)


def read(path: Path) -> LogWatch:
    watch = LogWatch(path)
    watch.read_all()
    return watch


def test_a_crashed_run_keeps_no_eta_in_json_nor_in_the_exporter(tmp_path, capsys):
    log = tmp_path / "oom.log"
    log.write_text(CRASH, encoding="utf-8")
    assert main(["log", "--json", str(log)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["current"]["eta_seconds"] is None and data["training_eta_seconds"] is None
    assert data["runs"][0]["finish_reason"] == "exception"
    watch = read(log)
    names = {name for name, _, _ in training_values(state_of(watch, LogOversight(log, find_writer=False)))}
    assert "tfgpu_training_epoch_eta_seconds" not in names and "tfgpu_training_eta_seconds" not in names
    watch.close()


def test_a_finished_run_has_no_eta_either(tmp_path):
    log = tmp_path / "done.log"
    log.write_text("Epoch 1/1\n10/10 [==============================] - 1s 9ms/step - loss: 0.5000\n")
    watch = read(log)
    assert watch.run.current.finished and watch.run.current.eta_seconds is None
    watch.close()


def test_end_times_read_from_a_file_are_estimates_and_not_shown_as_times(tmp_path):
    log = tmp_path / "oom.log"
    log.write_text(CRASH, encoding="utf-8")
    os.utime(log, (5000.0, 5000.0))
    watch = read(log)
    (epoch,) = watch.run.epochs
    assert epoch.ended_at_source is EndTimeSource.ESTIMATED and epoch.ended_at is not None
    assert epoch.as_dict()["ended_at"] is None and epoch.as_dict()["ended_at_source"] == "estimated"
    watch.close()


def test_what_the_follower_reads_at_once_is_not_stamped_with_the_reading_time(tmp_path):
    """A UTF-16 log is read by the follower from its start: its epochs are estimates too, the file did not
    grow when it was opened; what is appended afterwards was seen arriving."""
    log = tmp_path / "train.log"
    epoch = "10/10 [==============================] - 1s 9ms/step - loss: 0.5000\r\n"
    log.write_bytes(b"\xff\xfe" + ("Epoch 1/2\r\n" + epoch).encode("utf-16-le"))
    os.utime(log, (5000.0, 5000.0))
    watch = read(log)
    assert watch.run.epochs[0].ended_at_source is EndTimeSource.ESTIMATED
    assert watch.run.epochs[0].ended_at == 5000.0 and watch.last_growth_wall == 5000.0
    with log.open("ab") as handle:
        handle.write(("Epoch 2/2\r\n" + epoch).encode("utf-16-le"))
    watch.poll()
    followed = watch.run.epochs[-1]
    assert followed.ended_at_source is EndTimeSource.FOLLOWED and followed.as_dict()["ended_at"] > 5000.0
    watch.close()


def test_a_json_lines_record_gives_its_own_end_time(tmp_path):
    log = tmp_path / "train.jsonl"
    records = [
        {"event": "train_begin", "epochs": 1, "steps": 10},
        {"event": "epoch_begin", "epoch": 1, "epochs": 1},
        {"event": "epoch_end", "epoch": 1, "epochs": 1, "steps": 10, "time": 1234.5, "logs": {}},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    watch = read(log)
    epoch = watch.run.epochs[0]
    assert epoch.ended_at == 1234.5 and epoch.as_dict()["ended_at_source"] == "log"
    watch.close()
