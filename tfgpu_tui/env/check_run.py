"""Run the whole environment check: fast findings first, TensorFlow findings after the inspection.

Used by `tfgpu-tui check` and the Environment tab (from a worker thread). Blocking; never raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfgpu_tui.env import checks
from tfgpu_tui.env.facts import CHILD_TIMEOUT_SECONDS, EnvFacts, collect_facts
from tfgpu_tui.env.findings import EnvReport
from tfgpu_tui.env.tf_inspection import InspectionRun, inspect_tensorflow

MIN_INSPECTION_SECONDS = 0.5


def summary_facts(facts: EnvFacts, inspection: InspectionRun | None) -> dict[str, Any]:
    """The facts of `check --json`: the headline values first, then everything collected."""
    driver = facts.nvml.driver
    data = inspection.data if inspection is not None else {}
    build = data.get("build_info") or {}
    tf = data.get("tensorflow") or {}
    summary: dict[str, Any] = {
        "python": facts.interpreter.python,
        "python_version": facts.interpreter.version,
        "driver_version": driver.driver_version if driver else None,
        "cuda_driver_version": driver.cuda_driver_version if driver else None,
        "nvml_error": facts.nvml.error.message if facts.nvml.error else None,
        "tf_version": tf.get("version"),
        "tf_is_cuda_build": build.get("is_cuda_build"),
        "tf_build_cuda": build.get("cuda_version"),
        "tf_build_cudnn": build.get("cudnn_version"),
        "tf_compute_capabilities": build.get("cuda_compute_capabilities"),
        "gpus_nvml": [
            {
                "index": device.index,
                "name": device.name,
                "compute_capability": list(device.compute_capability) if device.compute_capability else None,
                "memory_total_mib": device.memory_total_mib,
            }
            for device in facts.nvml.devices
        ],
        "gpus_tf": data.get("physical_gpus") if inspection is not None else None,
        "placement": data.get("placement"),
    }
    if inspection is not None:
        summary["inspection"] = {
            "seconds": round(inspection.outcome.seconds, 3),
            "error_kind": inspection.outcome.error_kind,
            "message": inspection.outcome.message,
        }
    summary["environment"] = facts.as_dict()
    return summary


def fast_report(facts: EnvFacts) -> EnvReport:
    """Findings that need no TensorFlow (the TensorFlow ones pending)."""
    return EnvReport(checks.evaluate(facts), summary_facts(facts, None), complete=False)


def full_report(facts: EnvFacts, inspection: InspectionRun) -> EnvReport:
    """Every finding, once the inspection has answered."""
    return EnvReport(checks.evaluate(facts, inspection), summary_facts(facts, inspection), complete=True)


@dataclass(frozen=True)
class CheckRun:
    """One complete environment check: the report and what it was made from."""

    report: EnvReport
    facts: EnvFacts
    inspection: InspectionRun


def run_check(python: str, timeout: float, on_fast: Callable[[EnvReport], None] | None = None) -> CheckRun:
    """Collect facts, report the fast findings through `on_fast`, run the inspection, return the full report.
    `timeout` bounds the whole check (a hanging interpreter included), give or take half a second."""
    deadline = time.monotonic() + timeout
    facts = collect_facts(python, timeout=min(timeout, CHILD_TIMEOUT_SECONDS))
    if on_fast is not None:
        on_fast(fast_report(facts))
    inspection = inspect_tensorflow(python, max(MIN_INSPECTION_SECONDS, deadline - time.monotonic()))
    return CheckRun(full_report(facts, inspection), facts, inspection)
