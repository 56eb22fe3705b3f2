"""Choosing the interpreter whose TensorFlow the Environment tab checks (env/targets.py), on real
interpreters: a fresh venv without TensorFlow, this test's own interpreter (tensorflow-cpu installed), and a
running TensorFlow process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import wait_until

from tfgpu_tui.env.targets import (
    Candidate,
    ask_version,
    choose,
    find_candidates,
    resolve_target,
    with_versions,
)
from tfgpu_tui.own_children import CHILD_ENV_VALUE, CHILD_ENV_VAR

OWN_PREFIX = Path(sys.prefix)


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real virtual environment without TensorFlow."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return venv


def test_a_venv_without_tensorflow_loses_to_one_with_it(bare_venv: Path) -> None:
    environ = {"VIRTUAL_ENV": str(bare_venv), "PATH": "/nonexistent"}
    candidates = find_candidates(sys.executable, environ)
    assert [c.source for c in candidates][-2:] == ["$VIRTUAL_ENV", "this dashboard's own interpreter"]
    asked = with_versions(candidates)
    venv = next(c for c in asked if c.source == "$VIRTUAL_ENV")
    assert venv.python.startswith(str(bare_venv)) and venv.tf_version is None and not venv.error
    target = choose(asked)
    assert target.python == sys.executable and "own interpreter: TensorFlow 2." in target.why
    # nobody has TensorFlow: the first working candidate, and the reason says so
    none = choose([venv, Candidate("/nonexistent/python", "python3 on PATH", error="could not be run")])
    assert none.python == venv.python and "no candidate has TensorFlow" in none.why


def test_an_explicit_python_is_kept_and_a_broken_one_says_why() -> None:
    assert resolve_target("/opt/py/bin/python").why == "--python"
    broken = ask_version(Candidate("/nonexistent/bin/python3", "$CONDA_PREFIX"))
    assert broken.tf_version is None and "could not be run" in broken.error


@pytest.mark.tf
def test_the_interpreter_of_a_running_tensorflow_process_comes_first(bare_venv: Path) -> None:
    code = "import tensorflow, time; print('ready', flush=True); time.sleep(60)"
    running = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    ours = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, CHILD_ENV_VAR: CHILD_ENV_VALUE},
    )
    try:
        assert running.stdout is not None and running.stdout.readline().strip() == "ready"
        assert ours.stdout is not None and ours.stdout.readline().strip() == "ready"
        candidates = find_candidates(sys.executable, {"VIRTUAL_ENV": str(bare_venv), "PATH": "/nonexistent"})
        first = candidates[0]
        assert first.source.startswith(f"running TensorFlow process PID {running.pid}")
        assert Path(first.python).parent == OWN_PREFIX / "bin"  # its environment, from the maps
        assert not any(f"PID {ours.pid}" in c.source for c in candidates)  # a tfgpu-tui child is not a target
        assert resolve_target(None).python == first.python
    finally:
        for process in (running, ours):
            process.kill()
            process.wait()


async def test_p_lists_the_candidates_and_checks_the_one_picked(
    bare_venv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfgpu_tui.env.recorded import demo_recording
    from tfgpu_tui.settings import Settings
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.environment import EnvironmentTab
    from tfgpu_tui.ui.widgets.target_picker import TargetPicker

    monkeypatch.setenv("VIRTUAL_ENV", str(bare_venv))
    facts, probe = demo_recording()  # a recorded environment: this test is about which interpreter is asked
    checked: list[str] = []
    monkeypatch.setattr(
        EnvironmentTab, "collect", staticmethod(lambda python: checked.append(python) or facts)
    )
    monkeypatch.setattr(EnvironmentTab, "probe", staticmethod(lambda python, timeout: probe))
    app = TfgpuApp(Settings(), initial_tab="environment")
    async with app.run_test(size=(120, 30)) as pilot:
        tab = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=30)
        assert checked and "TensorFlow 2." in str(app.query_one("#env-status").render())
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, TargetPicker), timeout=30)
        picker = app.screen
        options = picker.query_one("OptionList")
        await wait_until(pilot, lambda: options.has_focus and options.highlighted is not None)
        venv = next(i for i, c in enumerate(picker.candidates) if c.source == "$VIRTUAL_ENV")
        assert picker.candidates[venv].tf_version is None
        for _ in range(len(picker.candidates)):  # moved by keys, checked on the list itself (not counted)
            if options.highlighted == venv:
                break
            await pilot.press("down" if options.highlighted < venv else "up")
        assert options.highlighted == venv
        await pilot.press("enter")
        await wait_until(pilot, lambda: checked[-1].startswith(str(bare_venv)), timeout=30)
        assert "picked with p" in str(app.query_one("#env-status").render())
