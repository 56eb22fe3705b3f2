"""Choosing the interpreter whose TensorFlow the Environment tab checks (env/targets.py), on real
interpreters: a fresh venv without TensorFlow, this test's own interpreter (tensorflow-cpu installed), and a
running TensorFlow process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.waiting import wait_until
from tfgpu_tui.env.targets import (
    Candidate,
    ask_version,
    choose,
    find_candidates,
    picker_candidates,
    picker_order,
    python_processes,
    resolve_target,
    typed_interpreter,
    with_versions,
)
from tfgpu_tui.proc.marks import CHILD_ENV_VALUE, CHILD_ENV_VAR
from tfgpu_tui.proc.python_processes import Job, tensorflow_processes

pytestmark = pytest.mark.e2e  # real child processes

OWN_PREFIX = Path(sys.prefix)


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real virtual environment without TensorFlow."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return venv


def test_the_activated_venv_is_chosen_with_or_without_tensorflow(bare_venv: Path) -> None:
    """A new user in an activated venv without TensorFlow: the tab, `check` and the probe all check that
    venv (and say TensorFlow is missing), not another interpreter that happens to have TensorFlow."""
    environ = {"VIRTUAL_ENV": str(bare_venv), "PATH": "/nonexistent"}
    candidates = find_candidates(sys.executable, environ, tf_processes=list)  # whatever else runs here
    assert [c.source for c in candidates][-2:] == [
        "the activated venv ($VIRTUAL_ENV)",
        "tfgpu-tui's own interpreter",
    ]
    target = resolve_target(None, sys.executable, environ, tf_processes=list)
    assert target.python.startswith(str(bare_venv)) and target.reason == "activated venv"
    venv = next(c for c in with_versions(candidates) if c.kind == "venv")
    assert venv.tf_version is None and not venv.error  # really without TensorFlow
    # nothing activated: the dashboard's own, the only candidate left
    alone = resolve_target(None, sys.executable, {"PATH": "/nonexistent"}, tf_processes=list)
    assert alone.python == sys.executable and alone.reason == "tfgpu-tui's own"


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
        started = (running.pid, ours.pid)

        def tf_processes() -> list[Job]:
            return tensorflow_processes(pids=started)  # the real /proc scan, of this test's processes only

        environ = {"VIRTUAL_ENV": str(bare_venv), "PATH": "/nonexistent"}
        candidates = find_candidates(sys.executable, environ, tf_processes)
        first = candidates[0]
        assert first.source.startswith(f"your TensorFlow job PID {running.pid}")
        assert Path(first.python).parent == OWN_PREFIX / "bin"  # its environment, from the maps
        assert not any(f"PID {ours.pid}" in c.source for c in candidates)  # a tfgpu-tui child is not a target
        target = choose(with_versions(candidates))  # what resolve_target does
        assert (target.python, target.pid) == (first.python, running.pid)  # before the activated venv
        assert tensorflow_processes(uid=os.getuid() + 12345, pids=started) == []  # not another user's job
    finally:
        for process in (running, ours):
            process.kill()
            process.wait()


async def test_p_lists_the_candidates_and_checks_the_one_picked(
    bare_venv: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tfgpu_tui.env.recorded import demo_recording
    from tfgpu_tui.settings import Settings
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.environment import EnvironmentTab
    from tfgpu_tui.ui.interpreter import SharedInterpreter
    from tfgpu_tui.ui.widgets.target_picker import TargetPicker

    monkeypatch.setenv("VIRTUAL_ENV", str(bare_venv))
    monkeypatch.setattr(SharedInterpreter, "find_jobs", staticmethod(list))  # no job of the machine's
    # nor the machine's running Pythons and TensorFlow jobs, nor its home's environments: a TensorFlow child
    # of another test, started from this interpreter, was listed as a job in place of "own"
    lists_nothing = {"home": str(tmp_path), "running": list, "tf_processes": list}
    monkeypatch.setattr(
        SharedInterpreter, "find_interpreters", staticmethod(lambda: picker_candidates(**lists_nothing))
    )
    facts, inspection = (
        demo_recording()
    )  # a recorded environment: this test is about which interpreter is asked
    checked: list[str] = []
    monkeypatch.setattr(
        EnvironmentTab, "collect", staticmethod(lambda python: checked.append(python) or facts)
    )
    monkeypatch.setattr(EnvironmentTab, "inspect", staticmethod(lambda python, timeout: inspection))
    app = TfgpuApp(Settings(), initial_tab="environment")
    async with app.run_test(size=(120, 30)) as pilot:
        tab = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=60)
        assert checked[-1].startswith(str(bare_venv))  # the activated venv, without TensorFlow
        assert "the activated venv" in str(app.query_one("#env-status").render())
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, TargetPicker), timeout=60)
        picker = app.screen
        options = await wait_until(pilot, lambda: picker.query_one("OptionList"))
        await wait_until(pilot, lambda: options.has_focus and options.highlighted is not None)
        venv = next(i for i, c in enumerate(picker.candidates) if c.kind == "venv")
        assert picker.candidates[venv].tf_version is None
        own = next(i for i, c in enumerate(picker.candidates) if c.kind in ("path", "own"))  # one env
        for _ in range(len(picker.candidates)):  # moved by keys, checked on the list itself (not counted)
            if options.highlighted == own:
                break
            await pilot.press("down" if options.highlighted < own else "up")
        assert options.highlighted == own
        await pilot.press("enter")
        await wait_until(pilot, lambda: checked[-1] == picker.candidates[own].python, timeout=60)
        assert "chosen with p" in str(app.query_one("#env-status").render())


def fake_python(path: Path) -> Path:
    """An executable file where an environment keeps its interpreter."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_the_picker_finds_conda_environments_venvs_and_pyenv_versions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    listed_env = tmp_path / "elsewhere" / "conda-env"
    expected = {
        fake_python(listed_env / "bin" / "python"): "conda environment",
        fake_python(home / "miniconda3" / "bin" / "python3"): "conda base (~/miniconda3)",
        fake_python(
            home / "miniconda3" / "envs" / "tf" / "bin" / "python3"
        ): "conda environment (~/miniconda3/envs)",
        fake_python(
            home / "anaconda3" / "envs" / "old" / "bin" / "python"
        ): "conda environment (~/anaconda3/envs)",
        fake_python(home / ".venv" / "bin" / "python3"): "~/.venv*",
        fake_python(home / ".venv-tf" / "bin" / "python3"): "~/.venv*",
        fake_python(home / "venvs" / "tf" / "bin" / "python3"): "~/venvs",
        fake_python(home / ".pyenv" / "versions" / "3.12.1" / "bin" / "python3"): "pyenv version",
    }
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text(f"{listed_env}\n\n")
    (home / "venvs" / "same-tf").symlink_to(home / "venvs" / "tf")  # one environment under two names
    (home / "venvs" / "no-python").mkdir()
    candidates = picker_candidates(
        sys.executable, {"PATH": "/nonexistent"}, home=str(home), running=list, tf_processes=list
    )
    found = {Path(c.python): c.source for c in candidates}
    for python, source in expected.items():
        assert found.get(python) == source, python
    assert not any("same-tf" in c.python or "no-python" in c.python for c in candidates)  # once; none
    assert candidates[0].source == "tfgpu-tui's own interpreter"
    reals = [os.path.realpath(c.python) for c in candidates]
    assert len(reals) == len(set(reals)), "each interpreter once"


def test_the_picker_finds_the_interpreters_of_this_users_python_processes(bare_venv: Path) -> None:
    python = str(bare_venv / "bin" / "python")
    code = "import time; print('ready', flush=True); time.sleep(60)"
    running = subprocess.Popen([python, "-c", code], stdout=subprocess.PIPE, text=True)
    ours = subprocess.Popen(
        [python, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, CHILD_ENV_VAR: CHILD_ENV_VALUE},
    )
    try:
        for process in (running, ours):
            assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        # Only these two are looked at: the cap on processes must not depend on what else runs here.
        pids = [running.pid, ours.pid]
        found = {c.source.split(" (")[0]: c.python for c in python_processes(pids=pids)}
        assert found[f"running Python process PID {running.pid}"] == python
        assert f"running Python process PID {ours.pid}" not in found  # a tfgpu-tui child is not a target
        assert not python_processes(uid=os.getuid() + 12345, pids=pids)  # not another user's
    finally:
        for process in (running, ours):
            process.kill()
            process.wait()


def test_a_typed_interpreter_must_be_an_existing_executable_regular_file(tmp_path: Path) -> None:
    python = fake_python(tmp_path / "bin" / "python")
    assert typed_interpreter(f"  {python}  ") == str(python)
    plain = tmp_path / "notes.txt"
    plain.write_text("x")
    for typed, says in (
        ("", "Type the path"),
        (str(tmp_path / "missing"), "No such file"),
        (str(tmp_path), "is a directory"),
        (str(plain), "is not executable"),
        ("/dev/null", "is not a regular file"),
    ):
        with pytest.raises(ValueError, match=says) as error:
            typed_interpreter(typed)
        assert "\n" not in str(error.value)


async def test_the_picker_checks_a_typed_path_and_refuses_a_directory(
    bare_venv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import Input, Static

    from tfgpu_tui.env.recorded import demo_recording
    from tfgpu_tui.settings import Settings
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.environment import EnvironmentTab
    from tfgpu_tui.ui.interpreter import SharedInterpreter
    from tfgpu_tui.ui.widgets.target_picker import TargetPicker

    facts, inspection = demo_recording()
    checked: list[str] = []
    monkeypatch.setattr(
        EnvironmentTab, "collect", staticmethod(lambda python: checked.append(python) or facts)
    )
    monkeypatch.setattr(EnvironmentTab, "inspect", staticmethod(lambda python, timeout: inspection))
    monkeypatch.setattr(
        SharedInterpreter, "find_interpreters", staticmethod(lambda: [Candidate(sys.executable, "x")])
    )
    monkeypatch.setattr(SharedInterpreter, "find_jobs", staticmethod(list))  # no job of the machine's
    app = TfgpuApp(Settings(python=sys.executable), initial_tab="environment")
    async with app.run_test(size=(120, 30)) as pilot:
        tab = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=60)
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, TargetPicker), timeout=60)
        field = await wait_until(pilot, lambda: app.screen.query_one("#picker-path", Input))
        await pilot.press("tab")
        await wait_until(pilot, lambda: field.has_focus)
        field.value = str(bare_venv)
        await pilot.press("enter")
        problem = await wait_until(pilot, lambda: app.screen.query_one("#picker-problem", Static))
        await wait_until(pilot, lambda: "is a directory" in str(problem.render()))
        assert isinstance(app.screen, TargetPicker) and problem.display
        field.value = str(bare_venv / "bin" / "python")
        await pilot.press("enter")
        await wait_until(pilot, lambda: checked[-1] == str(bare_venv / "bin" / "python"), timeout=60)
        assert not isinstance(app.screen, TargetPicker)


def answering_python(path: Path, version: str, tf_version: str = "-") -> Path:
    """An interpreter where an environment keeps it, answering the version question as Python `version`
    with TensorFlow `tf_version` ("-": none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {version}\necho {tf_version}\n")
    path.chmod(0o755)
    return path


def test_the_picker_sorts_versions_as_versions_with_tensorflow_first(tmp_path: Path) -> None:
    """pyenv's 2.7, 3.10, 3.6, 3.9 (name order) come as 3.9, 3.10 after the one with TensorFlow; those too old
    for the checks and the probe come last, saying the one minimum."""
    versions = tmp_path / "home" / ".pyenv" / "versions"
    for version in ("2.7.18", "3.10.13", "3.11.7", "3.6.15", "3.9.18"):
        answering_python(
            versions / version / "bin" / "python3", version, "2.20.0" if version == "3.11.7" else "-"
        )
    candidates = picker_order(
        with_versions(
            picker_candidates(
                sys.executable,
                {"PATH": "/nonexistent"},
                home=str(tmp_path / "home"),
                running=list,
                tf_processes=list,
            )
        )
    )
    pyenv = [c for c in candidates if c.source == "pyenv version"]
    assert [c.python_version for c in pyenv] == ["3.11.7", "3.9.18", "3.10.13", "2.7.18", "3.6.15"]
    assert pyenv[0].tf_version == "2.20.0"
    assert all("need Python 3.9 or newer" in c.error for c in pyenv[-2:])
