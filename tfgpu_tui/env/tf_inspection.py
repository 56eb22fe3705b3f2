"""Run `tf_inspect_script.py` with the target interpreter in a child process: timeouts, crashes, bad output.

The one place that starts the TensorFlow inspection. Never raises for a bad interpreter, a crash or a
hang: the outcome says what happened in words a user can act on.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfgpu_tui.exit_status import describe_exit
from tfgpu_tui.proc.marks import CHILD_ENV_VALUE, CHILD_ENV_VAR
from tfgpu_tui.proc.spawn import run_child
from tfgpu_tui.text_clean import clean_text

INSPECT_SCRIPT = Path(__file__).with_name("tf_inspect_script.py")
STDERR_LIMIT_CHARS = 200_000
# TF_CPP_MIN_LOG_LEVEL=0 so a user's "3" does not hide the very warnings we diagnose. TF_CPP_VMODULE turns on
# the loader's VLOG(1) lines (since TF 2.12 the only lines that name a library that failed to load) in the
# same run, for dso_loader.cc alone, so no second import is needed.
# TFGPU_TUI_CHILD marks it as ours: no dashboard alerts on it (tfgpu_tui.proc.marks).
INSPECT_ENV = {
    "TF_CPP_MIN_LOG_LEVEL": "0",
    "TF_CPP_VMODULE": "dso_loader=1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    CHILD_ENV_VAR: CHILD_ENV_VALUE,
}


@dataclass
class InspectionOutcome:
    """What one inspection run produced.

    Attributes:
        error_kind: None on success; else ``interpreter_missing`` | ``interpreter_unusable`` | ``timeout`` |
            ``crashed`` | ``bad_output``.
        message: what went wrong, in one sentence (empty on success).
        data: the inspection's JSON object (None unless it printed one).
        stderr: all TensorFlow wrote to stderr (its C++ log included); the middle is left out when huge.
        seconds: wall time of the child process.
        returncode: the child's exit status (None when it never ran or was killed for the timeout).
        extra_env: environment variables added for this run (e.g. the VLOG re-run).
    """

    error_kind: str | None
    message: str
    data: dict[str, Any] | None
    stderr: str
    seconds: float
    returncode: int | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error_kind is None


def _text(raw: bytes | str | None) -> str:
    """The child's output as text, escape sequences and control characters removed (text_clean.py)."""
    if raw is None:
        return ""
    text = clean_text(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw)
    if len(text) <= STDERR_LIMIT_CHARS:
        return text
    half = STDERR_LIMIT_CHARS // 2  # the head holds the library loading, the tail the latest errors
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


def _last_json_object(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def run_inspection(python: str, timeout: float, extra_env: dict[str, str] | None = None) -> InspectionOutcome:
    """Run the inspection with interpreter `python`; never raises.

    Args:
        python: the target interpreter's path (or a name on PATH).
        timeout: seconds before the child is killed.
        extra_env: variables added to the child's environment (on top of INSPECT_ENV).
    """
    env = {**os.environ, **INSPECT_ENV, **(extra_env or {})}
    started = time.perf_counter()
    try:
        completed = run_child([python, str(INSPECT_SCRIPT)], timeout, env)
    except FileNotFoundError:
        return InspectionOutcome(
            "interpreter_missing", f"No Python interpreter at {python}.", None, "", 0.0, None, extra_env or {}
        )
    except PermissionError:
        return InspectionOutcome(
            "interpreter_unusable", f"{python} is not executable.", None, "", 0.0, None, extra_env or {}
        )
    except OSError as error:
        message = f"{python} could not be started: {error.strerror or error}."
        return InspectionOutcome("interpreter_unusable", message, None, "", 0.0, None, extra_env or {})
    except subprocess.TimeoutExpired as expired:
        seconds = time.perf_counter() - started
        message = f"The TensorFlow inspection did not finish within {timeout:g} s and was stopped."
        return InspectionOutcome(
            "timeout", message, None, _text(expired.stderr), seconds, None, extra_env or {}
        )
    seconds = time.perf_counter() - started
    stderr = _text(completed.stderr)
    data = _last_json_object(_text(completed.stdout))
    if data is not None and "inspection_version" in data:
        return InspectionOutcome(None, "", data, stderr, seconds, completed.returncode, extra_env or {})
    if completed.returncode != 0:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "no error output"
        message = f"The TensorFlow inspection {describe_exit(completed.returncode)}: {last}"
        return InspectionOutcome(
            "crashed", message, None, stderr, seconds, completed.returncode, extra_env or {}
        )
    message = "The TensorFlow inspection printed no result (is this a Python interpreter?)."
    return InspectionOutcome(
        "bad_output", message, None, stderr, seconds, completed.returncode, extra_env or {}
    )


@dataclass
class InspectionRun:
    """The inspection's outcome. `retry` is only set by recordings made before the loader's messages were
    collected in the same run (a second run with TF_CPP_MAX_VLOG_LEVEL=1)."""

    outcome: InspectionOutcome
    retry: InspectionOutcome | None = None

    @property
    def data(self) -> dict[str, Any]:
        """The inspection's JSON object ({} when it printed none)."""
        return self.outcome.data or {}

    @property
    def stderr_lines(self) -> list[str]:
        """TensorFlow's log lines (of both runs in an old recording)."""
        lines = self.outcome.stderr.splitlines()
        return lines + (self.retry.stderr.splitlines() if self.retry is not None else [])


def inspect_tensorflow(python: str, timeout: float) -> InspectionRun:
    """One inspection run (one TensorFlow import), the loader's messages included."""
    return InspectionRun(run_inspection(python, timeout))
