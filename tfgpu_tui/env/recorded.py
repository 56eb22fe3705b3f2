"""Recorded environments: facts and inspection output saved as JSON, replayed without a GPU or TensorFlow.

Used by the tests (``tests/fixtures/env/*.json``) and, put on the simulated machine by env/simulated.py, the
`--demo` Environment tab. A recording holds
``nvml``, ``interpreter``, ``system_libraries``, ``ld_library_path``, ``ld_library_dirs``, ``env_vars``,
``nvcc`` (the shape of ``EnvFacts.as_dict()``) plus ``inspection`` (its JSON object, or null when it
failed), ``inspection_error`` ({kind, message}), ``stderr`` and ``retry_stderr`` (null: no re-run).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

from tfgpu_tui.env.facts import EnvFacts, InterpreterFacts, LibraryFile, NvccFacts, readable_packages
from tfgpu_tui.env.nvml_facts import NvmlFacts
from tfgpu_tui.env.tf_inspection import InspectionOutcome, InspectionRun
from tfgpu_tui.gpu.model import DeviceInfo, DeviceSample, DriverInfo, MigDevice, NvmlUnavailable
from tfgpu_tui.gpu.source import GpuProcess

DEMO_RECORDING = "demo_environment.json"


def _library(data: dict[str, Any]) -> LibraryFile:
    version = data.get("version")
    return LibraryFile(
        data["stem"],
        tuple(version) if version else None,
        data["path"],
        data["origin"],
        data.get("version_source", "file name"),
    )


def _nvml(data: dict[str, Any]) -> NvmlFacts:
    error = data.get("error")
    driver = data.get("driver")
    devices = [
        DeviceInfo(**{**device, "compute_capability": tuple(device["compute_capability"] or ()) or None})
        for device in data.get("devices", [])
    ]
    return NvmlFacts(
        NvmlUnavailable(**error) if error else None,
        DriverInfo(**driver) if driver else None,
        devices,
        [GpuProcess(**{"sm_percent": None, **process}) for process in data.get("processes", [])],
        [_reading(device) for device in data.get("readings", [])],
    )


def _reading(data: dict[str, Any]) -> DeviceSample:
    migs = tuple(MigDevice(**mig) for mig in data.get("mig_devices", []))
    return DeviceSample(**{**data, "mig_devices": migs})


def facts_from_dict(data: dict[str, Any]) -> EnvFacts:
    """EnvFacts from its JSON form."""
    interpreter = dict(data["interpreter"])
    interpreter["pip_libraries"] = [_library(item) for item in interpreter.get("pip_libraries", [])]
    interpreter["packages"] = readable_packages(interpreter.get("packages", {}))
    return EnvFacts(
        nvml=_nvml(data["nvml"]),
        interpreter=InterpreterFacts(**interpreter),
        system_libraries=[_library(item) for item in data.get("system_libraries", [])],
        ld_library_path=[_library(item) for item in data.get("ld_library_path", [])],
        ld_library_dirs=list(data.get("ld_library_dirs", [])),
        env_vars=dict(data.get("env_vars", {})),
        nvcc=NvccFacts(**data.get("nvcc", {"path": None})),
    )


def inspection_from_dict(data: dict[str, Any]) -> InspectionRun:
    """The InspectionRun a recording describes (with its VLOG re-run when it has one)."""
    error = data.get("inspection_error") or {}
    outcome = InspectionOutcome(
        error.get("kind"), error.get("message", ""), data.get("inspection"), data.get("stderr", ""), 5.0, 0
    )
    retry_stderr = data.get("retry_stderr")
    if retry_stderr is None:
        return InspectionRun(outcome)
    retry = InspectionOutcome(
        None, "", data.get("inspection"), retry_stderr, 5.0, 0, {"TF_CPP_MAX_VLOG_LEVEL": "1"}
    )
    return InspectionRun(outcome, retry)


def load_recording(path: Path) -> tuple[EnvFacts, InspectionRun]:
    """Facts and inspection run from a recording file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return facts_from_dict(data), inspection_from_dict(data)


def demo_recording_dict() -> dict[str, Any]:
    """The shipped demo recording (a GPU machine with problems worth showing) as plain data; `--demo` puts
    it on the simulated machine (env/simulated.py)."""
    text = resources.files("tfgpu_tui.data").joinpath(DEMO_RECORDING).read_text(encoding="utf-8")
    return json.loads(text)


def demo_recording() -> tuple[EnvFacts, InspectionRun]:
    """The shipped demo recording as it was recorded (tests use it as a fixture)."""
    data = demo_recording_dict()
    return facts_from_dict(data), inspection_from_dict(data)


def recording_dict(facts: EnvFacts, inspection: InspectionRun) -> dict[str, Any]:
    """A recording of a real run (the inverse of load_recording)."""
    outcome = inspection.outcome
    data = asdict(facts)
    data.pop("collect_seconds", None)
    data["inspection"] = outcome.data
    data["inspection_error"] = (
        {"kind": outcome.error_kind, "message": outcome.message} if outcome.error_kind else None
    )
    data["stderr"] = outcome.stderr
    data["retry_stderr"] = inspection.retry.stderr if inspection.retry is not None else None
    return data
