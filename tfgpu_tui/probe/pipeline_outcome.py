"""Turn what the pipeline probe's child did (its JSON report, the last phase it said, how it ended) into a
measurement or one line saying what went wrong. Pure code: no TensorFlow, no I/O."""

from __future__ import annotations

import re
from typing import Any

from tfgpu_tui.exit_status import describe_exit
from tfgpu_tui.probe.pipeline_request import PipelineRequest
from tfgpu_tui.probe.pipeline_result import PipelineMeasurement
from tfgpu_tui.probe.pipeline_verdict import Rates
from tfgpu_tui.probe.pipeline_worker import PHASE_MARKER, useful_line
from tfgpu_tui.text_clean import clean_line, clean_text

MAX_LINE = 300
# TensorFlow wraps errors raised in a dataset: "{{function_node __wrapped__...}} ValueError: ... [Op:...]".
TF_WRAPPING = re.compile(r"\{\{function_node [^}]*\}\}\s*|\s*\[Op:[^\]]*\](?: name: ?\S*)?")
TF_ERROR_PREFIX = re.compile(r"^(?:[A-Za-z_.]*Error|Exception): ")


def phase_words(phase: str, request: PipelineRequest) -> str:
    """What the child was doing in a phase, as words after "while"."""
    module = request.spec.split(":", 1)[0]
    return {
        "tensorflow": "importing TensorFlow",
        "import": f"importing {module}",
        "call": f"calling {request.spec}",
        "first_batch": f"waiting for the first batch of {request.spec}",
        "pipeline": f"timing {request.spec}",
        "prefetch": f"timing {request.spec} with prefetch",
        "model": f"building the model {request.model}",
        "train": f"training {request.model} on the pipeline's batches",
    }.get(phase, "starting")


def last_phase(stdout: str) -> str:
    """The last phase the child said it entered, or empty."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(PHASE_MARKER):
            return line[len(PHASE_MARKER) :].strip()
    return ""


def one_line(message: str) -> str:
    """The useful line of an error message: TensorFlow's wrapping removed, the first line that says something
    (`useful_line`), escape sequences and control characters removed, at most `MAX_LINE` characters."""
    line = " ".join(useful_line(TF_WRAPPING.sub(" ", clean_text(message))).split())
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def measurement_from_report(report: dict[str, Any]) -> PipelineMeasurement:
    """The measurement in an ``ok`` report; raises ValueError (or KeyError, TypeError) when malformed."""

    def rate(key: str) -> float:
        part = report[key]
        seconds = float(part["seconds"])
        if seconds <= 0:
            raise ValueError(f"{key}: no time measured")
        return float(part["samples"]) / seconds

    rates = Rates(rate("pipeline"), rate("prefetch"), rate("model"), int(report["batch_size"]))
    cpus = report.get("cpu_count")
    return PipelineMeasurement(
        rates, bool(report.get("ends_with_prefetch")), cpus if isinstance(cpus, int) else None
    )


def error_from_report(report: dict[str, Any], request: PipelineRequest) -> str:
    """One line for a report that is not ``ok``: what failed, while doing what, and where in the user's
    code."""
    message = one_line(str(report.get("message", "")))
    if report.get("status") == "no_tensorflow":
        return f"TensorFlow is missing in the target interpreter: {message}"
    doing = phase_words(str(report.get("phase", "")), request)
    if report.get("type") == "ProbeInputError":  # the child's own words say what to change
        return f"{message} (while {doing})"
    kind = clean_line(str(report.get("type", "error")))[:80]
    where = f" at {clean_line(str(report['where']))[:200]}" if report.get("where") else ""
    message = TF_ERROR_PREFIX.sub("", message) if message.startswith(kind) else message
    return f"{kind} while {doing}{where}: {message}"


def error_from_timeout(phase: str, request: PipelineRequest) -> str:
    """One line for a child ended at the timeout, by the phase it was in."""
    limit = f"stopped after {request.timeout_seconds:g} s (--timeout)"
    if phase == "first_batch":
        return f"{limit}: {request.spec} yielded no batch in that time"
    return f"{limit} while {phase_words(phase, request)}"


def error_from_exit(returncode: int, stderr: str, phase: str, request: PipelineRequest) -> str:
    """One line for a child that ended without a report (crashed, killed)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    last = one_line(lines[-1]) if lines else ""
    tail = f": {last}" if last else ""
    return f"the probe's child process {describe_exit(returncode)} while {phase_words(phase, request)}{tail}"
