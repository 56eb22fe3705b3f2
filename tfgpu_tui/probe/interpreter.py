"""Whether an interpreter can run the probe's trials, asked before the first trial starts: one line saying
what is wrong, with the way out (another ``--python``, or the install line for that Python)."""

from __future__ import annotations

from tfgpu_tui.env import compat, fixes
from tfgpu_tui.env.targets import OLDEST_PYTHON_TEXT, Candidate, ask_version

ANOTHER = f"a Python {OLDEST_PYTHON_TEXT} or newer that has TensorFlow"


def install_line(python: str, python_version: str | None) -> str:
    """The pip command that gives `python` a TensorFlow with a wheel for its version (with the CUDA packages
    where `tensorflow[and-cuda]` brings them)."""
    row = fixes.newest_for_python(compat.major_minor(python_version))
    version = fixes.release_to_install(row.tf_version) if row else "2.21.0"
    spec = f"tensorflow[and-cuda]=={version}" if fixes.and_cuda_platform() else f"tensorflow=={version}"
    return f"{python} -m pip install '{spec}'"


def interpreter_problem(python: str, why: str) -> str | None:
    """Why `python` (chosen because `why`) cannot run the probe (missing, broken, older than
    ``targets.OLDEST_PYTHON``, no TensorFlow), in one line with its fix; None if it can."""
    asked = ask_version(Candidate(python, why))
    if asked.error:
        return f"{python} ({why}) {asked.error}; pass --python with {ANOTHER}."
    version = asked.python_version or ""
    if asked.tf_version is None:
        return (
            f"TensorFlow is not installed in {python} (Python {version}, {why}): install it with "
            f"`{install_line(python, version)}`, or pass --python with an interpreter that has it."
        )
    return None
