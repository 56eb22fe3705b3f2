"""`probe` refuses an interpreter that cannot run its trials before the first trial: one line, exit 2, and
the way out; the picker names an old Python as too old, not as broken (real child processes)."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tfgpu_tui.env.targets import Candidate, ask_version, too_old_text

pytestmark = pytest.mark.e2e  # real child processes


def fake_python(tmp_path: Path, version: str) -> Path:
    """An executable that answers the version question as a Python `version` without importlib.metadata."""
    script = tmp_path / f"python{version}"
    script.write_text(f"#!/bin/sh\necho {version}\necho -\n")
    script.chmod(0o755)
    return script


def probe(python: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tfgpu_tui", "probe", "--python", python, "--device", "CPU"]
    return subprocess.run(command + ["--budget-mb", "100"], capture_output=True, text=True, timeout=120)


def test_an_old_python_is_too_old_not_broken(tmp_path: Path) -> None:
    asked = ask_version(Candidate(str(fake_python(tmp_path, "3.7.16")), "typed"))
    assert asked.error == too_old_text("3.7.16") and "Python 3.9 or newer" in asked.error
    assert ask_version(Candidate(str(fake_python(tmp_path, "3.11.7")), "typed")).error == ""


def test_probe_refuses_a_missing_interpreter_in_one_line(tmp_path: Path) -> None:
    done = probe(str(tmp_path / "nothing"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "could not be run" in done.stderr and "pass --python" in done.stderr


def test_probe_names_the_install_line_once_where_tensorflow_is_missing(tmp_path: Path) -> None:
    venv.create(tmp_path / "venv", with_pip=False)
    python = str(tmp_path / "venv" / "bin" / "python")
    done = probe(python)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.count("TensorFlow is not installed") == 1
    assert f"`{python} -m pip install 'tensorflow" in done.stderr


def test_probe_refuses_a_python_too_old_for_its_worker(tmp_path: Path) -> None:
    done = probe(str(fake_python(tmp_path, "3.8.18")))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "is Python 3.8.18, too old: the checks and the probe need Python 3.9 or newer" in done.stderr
    assert "pass --python with a Python 3.9 or newer that has TensorFlow" in done.stderr
    assert "3.10+" not in done.stderr and "3.8 or newer" not in done.stderr
