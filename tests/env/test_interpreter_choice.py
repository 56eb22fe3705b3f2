"""One interpreter for the Environment tab, the Batch probe and the header: the order of the choice (on
candidate lists, no /proc), a job that ends is forgotten (real child processes, only those looked at), `p`
switches all three, and the header says it within 80 columns."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from textual.widgets import OptionList

from tests.helpers.paths import FIXTURES
from tests.helpers.waiting import wait_until
from tfgpu_tui.env.interpreter_choice import InterpreterChoice
from tfgpu_tui.env.targets import Candidate, Target, choose, resolve_target
from tfgpu_tui.proc.python_processes import job_running, process_started, tensorflow_processes
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.header import ALERT_TITLE_ROOM, essential
from tfgpu_tui.ui.text_fit import whole_words

FAKE_WORKER = FIXTURES / "probe" / "fake_worker.py"


def job(python: str, pid: int, tf: str | None = "2.21.0") -> Candidate:
    return Candidate(
        python, f"your TensorFlow job PID {pid}", tf, kind="job", reason=f"your TF job PID {pid}", pid=pid
    )


VENV = Candidate(
    "/home/u/venv/bin/python", "the activated venv ($VIRTUAL_ENV)", None, kind="venv", reason="activated venv"
)
CONDA = Candidate("/home/u/miniconda3/envs/tf/bin/python", "activated conda", None, kind="conda")
CONDA_BASE = Candidate("/home/u/miniconda3/bin/python", "conda base", None, kind="conda-base")
ON_PATH = Candidate("/usr/bin/python3", "python3 on PATH", "2.15.1", kind="path")
OWN = Candidate(
    "/opt/tfgpu/bin/python", "tfgpu-tui's own interpreter", None, kind="own", reason="tfgpu-tui's own"
)

pytestmark = pytest.mark.e2e  # real child processes


def test_the_choice_order() -> None:
    """This user's live TensorFlow job, else the activated environment as it is (TensorFlow or not), else the
    first of the rest with TensorFlow, else the first that works."""
    running = job("/home/u/tf/bin/python", 4242)
    target = choose([running, VENV, ON_PATH, OWN])
    assert (target.python, target.reason, target.pid) == (running.python, "your TF job PID 4242", 4242)
    # the venv has no TensorFlow and python3 on PATH has: the activated venv all the same
    assert choose([VENV, ON_PATH, OWN]).python == VENV.python
    assert choose([VENV, ON_PATH, OWN]).reason == "activated venv"
    assert choose([CONDA, ON_PATH, OWN]).python == CONDA.python
    # a job whose interpreter does not answer with a TensorFlow is not taken for it
    assert choose([job("/x/bin/python", 7, tf=None), VENV]).python == VENV.python
    # nothing activated (conda's base is on in every shell by default): the first with TensorFlow
    assert choose([CONDA_BASE, ON_PATH, OWN]).python == ON_PATH.python
    broken = Candidate("/nonexistent/python3", "python3 on PATH", kind="path", error="could not be run")
    none = choose([broken, OWN])
    assert none.python == OWN.python and "no candidate has TensorFlow" in none.why


def sleeper(python: str = sys.executable, code: str = "import time; time.sleep(60)") -> subprocess.Popen:
    return subprocess.Popen(
        [python, "-c", f"print('ready', flush=True); {code}"], stdout=subprocess.PIPE, text=True
    )


def end(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()


def test_a_job_that_ended_is_told_and_a_pid_used_again_is_not_it() -> None:
    child = sleeper()
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        started = process_started(child.pid)
        assert started is not None and job_running(child.pid, started)
        assert not job_running(child.pid, started + 1.0)  # the same PID, another start: another process
    finally:
        end(child)
    assert process_started(child.pid) is None and not job_running(child.pid, started)


def test_a_pick_stays_until_the_next_and_a_choice_is_made_once() -> None:
    chosen: list[str | None] = []
    answers = iter([Target("/a/bin/python", "first"), Target("/b/bin/python", "second")])

    def resolve(python: str | None) -> Target:
        chosen.append(python)
        return next(answers)

    choice = InterpreterChoice(None, resolve)
    assert choice.target is None
    assert choice.current().python == "/a/bin/python" and choice.current().python == "/a/bin/python"
    assert chosen == [None]  # chosen once
    assert choice.choose_again().python == "/b/bin/python"
    picked = choice.pick("/c/bin/python")
    assert picked.reason == "chosen with p" and choice.choose_again() == picked  # r keeps the pick
    assert not choice.job_ended()  # not a job


TF_JOB = "import tensorflow, time; print('ready', flush=True); time.sleep(120)"


def tf_job() -> subprocess.Popen:
    """A real TensorFlow job of this user's, once it has imported TensorFlow."""
    child = subprocess.Popen([sys.executable, "-c", TF_JOB], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


@pytest.mark.tf
def test_a_choice_forgets_a_job_that_ended(tmp_path: Path) -> None:
    """The real chain on real processes, only the job's PID looked at: the job's interpreter first, then,
    once it has exited, the activated venv."""
    venv.create(tmp_path / "venv", with_pip=False)
    environ = {"VIRTUAL_ENV": str(tmp_path / "venv"), "PATH": "/nonexistent"}
    child = tf_job()

    def resolve(python: str | None) -> Target:
        return resolve_target(python, sys.executable, environ, lambda: tensorflow_processes(pids=[child.pid]))

    choice = InterpreterChoice(None, resolve)
    try:
        first = choice.current()
        assert first.pid == child.pid and first.reason == f"your TF job PID {child.pid}"
        assert Path(first.python).parent == Path(sys.prefix) / "bin" and not choice.job_ended()
    finally:
        end(child)
    assert choice.job_ended()
    again = choice.choose_again()
    assert again.python.startswith(str(tmp_path / "venv")) and again.reason == "activated venv"
    assert not choice.job_ended()


@pytest.fixture
def recorded_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Environment tab checks a recorded environment (this is about which interpreter it is asked
    about); the list receives each interpreter checked."""
    from tfgpu_tui.env.recorded import demo_recording
    from tfgpu_tui.ui.environment import EnvironmentTab

    facts, inspection = demo_recording()
    checked: list[str] = []
    monkeypatch.setattr(
        EnvironmentTab, "collect", staticmethod(lambda python: checked.append(python) or facts)
    )
    monkeypatch.setattr(EnvironmentTab, "inspect", staticmethod(lambda python, timeout: inspection))
    return checked


def header_text(app) -> str:
    from tfgpu_tui.ui.header import StatusHeader

    return str(app.query_one(StatusHeader).render())


@pytest.mark.tf
async def test_a_job_that_exits_is_forgotten_at_the_next_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded_checks: list[str]
) -> None:
    """The tab checked a short-lived TensorFlow job's Python and kept naming it after it exited: now the
    header names the job while it runs, and once it has exited the tab chooses again and checks the
    activated venv."""
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.environment import EnvironmentTab
    from tfgpu_tui.ui.interpreter import SharedInterpreter

    venv.create(tmp_path / "venv", with_pip=False)
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "venv"))
    child = tf_job()
    monkeypatch.setattr(
        SharedInterpreter, "find_jobs", staticmethod(lambda: tensorflow_processes(pids=[child.pid]))
    )
    app = TfgpuApp(Settings(), initial_tab="environment")
    try:
        async with app.run_test(size=(240, 30)) as pilot:  # wide: the header says the whole tmp path
            tab = app.query_one(EnvironmentTab)
            await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=60)
            assert Path(recorded_checks[-1]).parent == Path(sys.prefix) / "bin"  # the job's environment
            await wait_until(pilot, lambda: f"(your TF job PID {child.pid})" in header_text(app), timeout=60)
            end(child)
            # the next snapshot (every 10 s while the Monitor is hidden) forgets it; the tab checks again
            await wait_until(
                pilot, lambda: recorded_checks[-1].startswith(str(tmp_path / "venv")), timeout=60
            )
            await wait_until(pilot, lambda: "(activated venv)" in header_text(app), timeout=60)
            assert f"PID {child.pid}" not in header_text(app)
            await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=60)
            assert "the activated venv" in str(app.query_one("#env-status").render())
    finally:
        end(child)


async def test_p_in_the_batch_probe_switches_both_tabs_and_the_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded_checks: list[str]
) -> None:
    from tfgpu_tui.probe import trial_runner
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.batch_probe import BatchProbeTab
    from tfgpu_tui.ui.environment import EnvironmentTab
    from tfgpu_tui.ui.interpreter import SharedInterpreter
    from tfgpu_tui.ui.widgets.target_picker import TargetPicker

    monkeypatch.setattr(trial_runner, "WORKER_SCRIPT", FAKE_WORKER)  # trials without TensorFlow, fast
    monkeypatch.setenv("FAKE_PROBE_MODE", "linear")
    venv.create(tmp_path / "venv", with_pip=False)
    venv_python = str(tmp_path / "venv" / "bin" / "python3")
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "venv"))
    monkeypatch.setattr(SharedInterpreter, "find_jobs", staticmethod(list))  # no job of the machine's
    listed = [Candidate(venv_python, "the activated venv"), Candidate(sys.executable, "tfgpu-tui's own")]
    monkeypatch.setattr(SharedInterpreter, "find_interpreters", staticmethod(lambda: listed))
    app = TfgpuApp(Settings(), initial_tab="environment")
    async with app.run_test(size=(240, 40)) as pilot:  # wide: the header has room for any tmp path's reason
        env_tab = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: env_tab.report is not None and env_tab.report.complete, timeout=60)
        assert recorded_checks[-1] == venv_python and "(activated venv)" in header_text(app)
        await pilot.press("4")
        probe_tab = app.query_one(BatchProbeTab)
        await wait_until(pilot, lambda: app.query_one("#probe-start").has_focus, timeout=60)
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, TargetPicker), timeout=60)
        options = await wait_until(pilot, lambda: app.screen.query_one(OptionList))  # mounted
        assert app.screen.candidates[0].python == sys.executable  # the one with TensorFlow first
        await wait_until(pilot, lambda: options.has_focus and options.highlighted == 1)  # the current one
        await pilot.press("up", "enter")  # tfgpu-tui's own
        await wait_until(pilot, lambda: recorded_checks[-1] == sys.executable, timeout=60)  # the hidden tab
        await wait_until(pilot, lambda: "(chosen with p)" in header_text(app), timeout=60)
        await wait_until(pilot, lambda: env_tab.report is not None and env_tab.report.complete, timeout=60)
        assert "chosen with p" in str(app.query_one("#env-status").render())
        app.query_one("#probe-budget").value = "100"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: probe_tab.result is not None, timeout=60)
        assert probe_tab.result.request.python == sys.executable and probe_tab.result.max_batch


async def header_line(width: int, target: Target) -> tuple[str, str]:
    """The header of a demo app `width` columns wide once it has its alert, with `target` as the Python in
    use; and the alert's short title."""
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.header import StatusHeader
    from tfgpu_tui.ui.widgets.alerts_panel import short_title

    app = TfgpuApp(Settings(demo=True))
    async with app.run_test(size=(width, 24)) as pilot:
        header = app.query_one(StatusHeader)
        await wait_until(pilot, lambda: header.alert is not None and header.gpu_count is not None)
        # the demo's own Python, until another is set (at 80 columns by its folder: the alert keeps its PID)
        assert ("(demo)" if width > 80 else "~/venvs/tf") in header_text(app)
        header.interpreter = target
        assert header.alert is not None
        return header_text(app), short_title(header.alert)


async def test_the_header_says_the_python_and_why_within_80_columns() -> None:
    """The whole line where there is room; at 80 columns the host name gives way, then the Python is said
    by its environment and why, beside the alert; never wider than the terminal."""
    python = os.path.expanduser("~/venvs/tf/bin/python")
    why = "your TensorFlow job PID 4242 (python train.py)"
    target = Target(python, why, reason="your TF job PID 4242", pid=4242)
    for width, expected in (
        (160, "Python: ~/venvs/tf/bin/python (your TF job PID 4242)"),
        (120, "~/venvs/tf/bin/python (your TF job PID 4242)"),
        (100, "~/venvs/tf (your TF job PID 4242)"),
        # the demo's SIMULATED badge takes 13 columns more than a real GPU: at 80 the Python is named by its
        # folder alone, and the alert keeps its PID (issue 39)
        (80, "~/venvs/tf  "),
    ):
        text, alert = await header_line(width, target)
        kept = essential(alert) or whole_words(alert, ALERT_TITLE_ROOM).removesuffix(" …")
        assert expected in text and kept in text, (width, text)
        assert len(text) <= width - 2, (width, text)  # the header's padding


async def test_at_80_columns_the_header_keeps_the_alerts_pid() -> None:
    """It read "CPU fallback: PID … (+2)": the PID is what the alert is about, the program may go first."""
    target = Target(os.path.expanduser("~/venvs/tf/bin/python"), "--python", reason="--python")
    text, alert = await header_line(80, target)
    assert alert.startswith("CPU fallback: PID 42210") and "CPU fallback: PID 42210" in text, text
    assert len(text) <= 78, text
