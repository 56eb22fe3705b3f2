"""Turn what a trial's child process did (its JSON report, exit status, stderr) into a `Trial`."""

from __future__ import annotations

import signal
from typing import Any

from tfgpu_tui.exit_status import describe_exit
from tfgpu_tui.probe.rule_of_thumb import ModelFacts
from tfgpu_tui.probe.trial import ERROR, FITS, OOM, TIMEOUT, Trial

# Messages that mean the device ran out of memory (TensorFlow, XLA, CUDA, cuBLAS).
OOM_MARKERS = (
    "OOM when allocating",
    "Out of memory while trying to allocate",
    "RESOURCE_EXHAUSTED",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "CUBLAS_STATUS_ALLOC_FAILED",
)
OOM_EXCEPTIONS = ("ResourceExhaustedError", "OutOfMemoryError")
# The BFC allocator's warning during autotuning ends with this; it is not a failure.
NOT_A_FAILURE = "The caller indicates that this is not a failure"
STDERR_TAIL_LINES = 12


def is_oom_text(text: str) -> bool:
    """Whether a message reports running out of memory (ignoring the allocator's 'not a failure' lines)."""
    lines = [line for line in text.splitlines() if NOT_A_FAILURE not in line]
    return any(marker in line for line in lines for marker in OOM_MARKERS)


def first_line(text: str) -> str:
    """The first non-empty line of a message, for tables and one-line summaries."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def trial_from_report(batch_size: int, report: dict[str, Any], budget_mb: float, timed: bool = True) -> Trial:
    """A trial from the child's JSON report; a peak above the budget counts as out of memory. ``timed``:
    the trial ran more than one step, so its step time (of the steps after the first) is a speed."""
    status = report.get("status")
    if status == "ok":
        peak = float(report["peak_mb"])
        step = report.get("step_seconds")
        seconds = float(step) if timed and isinstance(step, (int, float)) else None
        source = str(report.get("peak_source", ""))
        facts = ModelFacts.from_report(report.get("model"))
        if peak > budget_mb:
            message = f"over the {budget_mb:,.0f} MB budget"
            return Trial(batch_size, OOM, peak, seconds, message, source, facts)
        return Trial(batch_size, FITS, peak, seconds, "", source, facts)
    message = str(report.get("message", ""))
    if status == "no_tensorflow":
        return Trial(batch_size, ERROR, message=f"TensorFlow is missing in the target interpreter: {message}")
    if report.get("type") in OOM_EXCEPTIONS or is_oom_text(message):
        return Trial(batch_size, OOM, message=f"out of memory: {first_line(message)[:300]}")
    if report.get("type") == "ProbeInputError":  # the worker's own message says what to change
        return Trial(batch_size, ERROR, message=message)
    where = {"setup": "setting up the device", "model": "building the model", "train": "training"}.get(
        str(report.get("phase")), "the trial"
    )
    return Trial(batch_size, ERROR, message=f"{report.get('type', 'error')} while {where}: {message.strip()}")


def trial_from_exit(batch_size: int, returncode: int, stderr: str) -> Trial:
    """A trial whose child exited without a report: killed by the OOM killer, out of memory, or crashed."""
    killed = returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)
    if killed:
        message = "the child was killed (SIGKILL), most likely by the kernel's OOM killer"
        return Trial(batch_size, OOM, message=message)
    if is_oom_text(stderr):
        return Trial(batch_size, OOM, message=f"out of memory: {first_line(oom_lines(stderr))[:300]}")
    tail = "\n".join(stderr.strip().splitlines()[-STDERR_TAIL_LINES:])
    reason = describe_exit(returncode) + ("" if returncode < 0 else " without a result")
    message = f"the trial's child process {reason}" + (f":\n{tail}" if tail else "")
    return Trial(batch_size, ERROR, message=message)


def oom_lines(text: str) -> str:
    """The lines of ``text`` that report running out of memory."""
    return "\n".join(line for line in text.splitlines() if is_oom_text(line))


def timeout_trial(batch_size: int, seconds: float) -> Trial:
    """A trial stopped because it ran past the per-trial timeout."""
    return Trial(batch_size, TIMEOUT, message=f"stopped after {seconds:g} s (per-trial timeout)")
