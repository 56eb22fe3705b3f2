"""The Training tab's pick list of running jobs' logs, writer line, checkpoint warning and demo, through the
pilot, on real child processes (TensorFlow detection injected: a child's /proc/PID/maps cannot be faked)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from textual.widgets import OptionList, ProgressBar, Static

from tests.helpers.waiting import wait_until
from tfgpu_tui.proc.log_writers import tensorflow_logs
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.synthetic import keras3_log
from tfgpu_tui.ui import training as training_ui
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.training import TrainingTab

pytestmark = pytest.mark.e2e  # real child processes

#: Writes a partial Keras run (from the file named by argv[1]) to its stdout, then sleeps.


WRITER = "import sys, time; sys.stdout.write(open(sys.argv[1]).read()); sys.stdout.flush(); time.sleep(60)"


def text_of(app: TfgpuApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


@pytest.fixture
def job(tmp_path: Path):
    """A running child whose stdout is redirected to tmp_path/job.log, mid-epoch 3 of 10."""
    source = tmp_path / "source.txt"
    source.write_text(keras3_log(10, 100, 10, done_epochs=2, partial_steps=50), encoding="utf-8")
    log = tmp_path / "job.log"
    with log.open("w") as handle:
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(source)], stdout=handle, stderr=handle)
    yield child, log
    child.kill()
    child.wait()


def no_log_settings(tmp_path: Path) -> Settings:
    return Settings(log_path=tmp_path / "train.log", log_path_given=False)


async def test_pick_list_offers_a_running_jobs_log_and_follows_its_writer(tmp_path, job, monkeypatch):
    child, log = job
    finder = staticmethod(lambda: tensorflow_logs(detector=lambda pid: pid == child.pid))
    monkeypatch.setattr(TrainingTab, "log_finder", finder)
    app = TfgpuApp(no_log_settings(tmp_path), initial_tab="training")
    async with app.run_test(size=(150, 45)) as pilot:
        options = app.query_one("#training-pick-list", OptionList)
        await wait_until(pilot, lambda: options.option_count == 1)
        shown = str(options.get_option_at_index(0).prompt)
        assert f"PID {child.pid}" in shown and str(log) in shown
        assert "1 running TensorFlow job with a log" in text_of(app, "#training-pick-note")
        await wait_until(pilot, lambda: options.has_focus)
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Epoch 3/10" in text_of(app, "#training-status"))
        assert not app.query_one("#training-pick").has_class("-open")
        await wait_until(pilot, lambda: f"PID {child.pid} alive" in text_of(app, "#training-context"))
        child.kill()  # not reaped until the fixture's wait(): its status can be read
        await wait_until(pilot, lambda: "was killed by SIGKILL" in text_of(app, "#training-context"))
        await wait_until(pilot, lambda: "before training finished" in text_of(app, "#training-problems"))
        await wait_until(pilot, lambda: "training_stall" in {alert.kind for alert in app.all_alerts})


async def test_no_running_job_says_how_to_get_a_log_then_finds_one_that_starts(tmp_path, job, monkeypatch):
    child, log = job
    started: list[int] = []  # the job counts as running TensorFlow once listed here
    finder = staticmethod(lambda: tensorflow_logs(detector=lambda pid: pid in started))
    monkeypatch.setattr(TrainingTab, "log_finder", finder)
    monkeypatch.setattr(training_ui, "PICK_RESCAN_SECONDS", 0.2)
    app = TfgpuApp(no_log_settings(tmp_path), initial_tab="training")
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_until(
            pilot, lambda: "No running TensorFlow process" in text_of(app, "#training-pick-note")
        )
        assert "nohup python train.py > train.log 2>&1 &" in text_of(app, "#training-pick-note")
        options = app.query_one("#training-pick-list", OptionList)
        assert not options.display
        started.append(child.pid)
        await wait_until(pilot, lambda: options.display and options.option_count == 1)
        tab = app.query_one(TrainingTab)
        await wait_until(pilot, lambda: app.focused is not None and tab in app.focused.ancestors_with_self)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.query_one("#training-pick").has_class("-open"))


async def test_open_log_with_pid_shows_writer_and_checkpoint_warning(tmp_path, job):
    child, log = job
    checkpoint = tmp_path / "ckpt" / "old.keras"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"w")
    old = time.time() - 3600
    os.utime(checkpoint, (old, old))
    settings = Settings(
        log_path=tmp_path / "other.log", log_path_given=True, checkpoints_dir=checkpoint.parent
    )
    settings.checkpoint_max_minutes = 1e6  # only the epoch rule: 2 epochs since is under 5
    app = TfgpuApp(settings, initial_tab="training")
    async with app.run_test(size=(150, 45)) as pilot:
        app.query_one(TrainingTab).open_log(log, child.pid)
        await wait_until(pilot, lambda: f"PID {child.pid} alive" in text_of(app, "#training-context"))
        assert "old.keras" in text_of(app, "#training-context")
        assert "No recent checkpoint" not in text_of(app, "#training-problems")
        app.query_one(TrainingTab).settings.checkpoint_max_epochs = 1
        app.query_one(TrainingTab).open_log(log, child.pid)
        await wait_until(pilot, lambda: "No recent checkpoint" in text_of(app, "#training-problems"))
        assert "2 epochs since the last checkpoint" in text_of(app, "#training-context")
        await wait_until(pilot, lambda: "training_no_checkpoint" in {a.kind for a in app.all_alerts})


async def test_demo_follows_a_simulated_live_log_and_cleans_up(tmp_path):
    app = TfgpuApp(Settings(demo=True, log_path=tmp_path / "train.log"), initial_tab="training")
    async with app.run_test(size=(150, 45)) as pilot:
        tab = app.query_one(TrainingTab)
        await wait_until(pilot, lambda: "SIMULATED" in text_of(app, "#training-status"))
        assert "SIMULATED" in text_of(app, "#training-context")
        bar = app.query_one("#training-steps", ProgressBar)
        await wait_until(pilot, lambda: (bar.progress or 0) > 0)
        first = (tab.run.current.epoch, bar.progress)
        await wait_until(pilot, lambda: (tab.run.current.epoch, bar.progress) != first)
        directory = tab.demo.directory
        assert directory.exists()
    assert not directory.exists()
