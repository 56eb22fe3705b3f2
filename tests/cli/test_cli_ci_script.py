""".ci/run: strict bash, ends with the README's test command, and smoke-runs the package on the newest Python
it finds (3.10 or newer), or says it found none."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

pytestmark = pytest.mark.e2e  # real child processes

ROOT = ROOT
SCRIPT = ROOT / ".ci" / "run"


def _script() -> str:
    return SCRIPT.read_text(encoding="utf-8")


def test_it_is_strict_and_ends_with_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = re.search(r"test suite:\n\n```sh\n(.+)\n```", readme)
    assert command, "the README's Quick start lost its test command"
    lines = [line for line in _script().splitlines() if line.strip() and not line.startswith("#")]
    assert lines[0] == "set -euo pipefail"
    assert lines[-1] == command.group(1)
    assert "installed and smoke-ran tfgpu-tui on Python" in _script() and "found no Python 3.10" in _script()


def _fake_python(path: Path, version: str) -> Path:
    """An executable that answers the version question as an interpreter would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)
    return path


def _newest_python(pyenv_root: Path, bin_dir: Path) -> str:
    """What the script's `newest_python` prints with only these interpreters around (no pyenv command)."""
    function = re.search(r"^newest_python\(\) \{\n.*?^\}\n", _script(), flags=re.MULTILINE | re.DOTALL)
    assert function, "newest_python() not found in .ci/run"
    for tool in ("sort", "head", "tail"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    done = subprocess.run(
        ["/bin/bash", "-c", f"set -euo pipefail\n{function.group(0)}newest_python"],
        capture_output=True,
        text=True,
        env={"PATH": str(bin_dir), "PYENV_ROOT": str(pyenv_root), "HOME": str(pyenv_root)},
        timeout=30,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash")
def test_the_newest_interpreter_is_picked_by_its_version(tmp_path: Path) -> None:
    root, bin_dir = tmp_path / "pyenv", tmp_path / "bin"
    _fake_python(root / "versions" / "3.9.18" / "bin" / "python3", "3.9.18")
    newest = _fake_python(root / "versions" / "3.13.0" / "bin" / "python3", "3.13.0")
    _fake_python(root / "versions" / "3.12.1" / "bin" / "python3", "3.12.1")
    _fake_python(bin_dir / "python3", "3.11.7")
    _fake_python(bin_dir / "python3.10", "3.10.13")
    assert _newest_python(root, bin_dir) == f"3.13.0 {newest}"


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash")
def test_nothing_older_than_3_10_is_picked(tmp_path: Path) -> None:
    root, bin_dir = tmp_path / "pyenv", tmp_path / "bin"
    _fake_python(root / "versions" / "2.7.18" / "bin" / "python3", "2.7.18")
    _fake_python(bin_dir / "python3", "3.9.18")
    assert _newest_python(root, bin_dir) == ""
