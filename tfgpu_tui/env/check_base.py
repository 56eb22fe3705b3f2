"""What every environment check shares: the Verdict it returns, the registry, and helpers over the facts
and the probe's output (TF version, build info, install commands)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tfgpu_tui.env import compat
from tfgpu_tui.env.diagnoses import Diagnosis, diagnose_lines
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.probe_runner import ProbeRun


@dataclass(frozen=True)
class Verdict:
    """What a check function returns; the check's id and title are added around it."""

    status: Status
    detail: str
    why: str = ""
    fix: str = ""
    informational: bool = False
    link_tab: str | None = None


@dataclass(frozen=True)
class Check:
    """A registered check: its stable id, title, whether it needs the probe, and its function."""

    id: str
    title: str
    needs_probe: bool
    run: Callable[[EnvFacts, ProbeRun | None], Verdict]
    needs_tensorflow: bool = False  # skipped (by evaluate) when the probe could not inspect TensorFlow


CHECKS: list[Check] = []  # every registered check; checks.CHECKS puts them in report order


def check(check_id: str, title: str, needs_probe: bool = False, needs_tensorflow: bool = False) -> Callable:
    """Register a check function under a stable id (its place in the report is set in checks.py).

    Args:
        needs_probe: pending until the TensorFlow probe has answered.
        needs_tensorflow: also skipped when the probe could not inspect TensorFlow (implies needs_probe).
    """

    def register(function: Callable[[EnvFacts, ProbeRun | None], Verdict]) -> Callable:
        needs = needs_probe or needs_tensorflow
        CHECKS.append(Check(check_id, title, needs, function, needs_tensorflow))
        return function

    return register


def target_python(facts: EnvFacts) -> str:
    return facts.interpreter.python


def pip_command(facts: EnvFacts, args: str) -> str:
    return f"{target_python(facts)} -m pip {args}"


def tensorflow_version(facts: EnvFacts, probe: ProbeRun | None) -> str | None:
    if probe is not None and (probe.data.get("tensorflow") or {}).get("version"):
        return probe.data["tensorflow"]["version"]
    distributions = facts.interpreter.tensorflow_distributions
    return next(iter(distributions.values()), None)


def build_info(probe: ProbeRun | None) -> dict:
    return (probe.data.get("build_info") or {}) if probe is not None else {}


def is_cuda_build(facts: EnvFacts, probe: ProbeRun | None) -> bool | None:
    """True/False from TF's build info; before the probe, guessed from the installed distribution names."""
    build = build_info(probe)
    if "is_cuda_build" in build:
        return bool(build["is_cuda_build"])
    if probe is not None and probe.data.get("built_with_cuda") is not None:
        return bool(probe.data["built_with_cuda"])
    distributions = facts.interpreter.tensorflow_distributions
    if not distributions:
        return None
    return not all(name.endswith("-cpu") for name in distributions)


def tf_cuda(facts: EnvFacts, probe: ProbeRun | None) -> str | None:
    """TF's CUDA version: from build_info, else the tested build for its version."""
    build = build_info(probe)
    value = build.get("cuda_version") or build.get("cuda_version_number")
    if value:
        return str(value)
    row = compat.build_row_for(tensorflow_version(facts, probe))
    return row.cuda if row else None


def tf_cudnn(facts: EnvFacts, probe: ProbeRun | None) -> str | None:
    """TF's cuDNN major.minor from the tested build (build_info only gives the major)."""
    row = compat.build_row_for(tensorflow_version(facts, probe))
    if row is not None:
        return row.cudnn
    build = build_info(probe)
    value = build.get("cudnn_version") or build.get("cudnn_version_number")
    return str(value) if value else None


def gpu_count(facts: EnvFacts) -> int:
    return len(facts.nvml.devices)


def gpu_list(facts: EnvFacts) -> str:
    names = [f"GPU {device.index}: {device.name}" for device in facts.nvml.devices]
    return ", ".join(names)


def cc_text(capability: tuple[int, int] | list[int]) -> str:
    return f"{capability[0]}.{capability[1]}"


def and_cuda_install(facts: EnvFacts, tf_version: str | None) -> str:
    """The command that installs TF with its CUDA libraries from pip (a plain install before TF 2.14)."""
    numbers = compat.version_tuple(tf_version)
    if numbers is not None and numbers[:2] < (2, 14):
        row = compat.build_row_for(tf_version)
        needs = f"CUDA {row.cuda} and cuDNN {row.cudnn}" if row else "the CUDA and cuDNN of its tested build"
        return (
            pip_command(facts, f"install 'tensorflow=={tf_version}'") + f"   # and install {needs} yourself"
        )
    pinned = f"=={tf_version}" if tf_version else ""
    return pip_command(facts, f"install 'tensorflow[and-cuda]{pinned}'")


def diagnoses(probe: ProbeRun | None) -> list[Diagnosis]:
    """Problem diagnoses of TF's stderr (both runs), one per signature, in order of appearance."""
    if probe is None:
        return []
    seen: dict[str, Diagnosis] = {}
    for found in diagnose_lines(probe.stderr_lines):
        seen.setdefault(found.id, found)
    return list(seen.values())


def tensorflow_unusable(facts: EnvFacts, probe: ProbeRun | None) -> Verdict | None:
    """A skipped verdict when the probe could not say anything about TensorFlow, else None."""
    assert probe is not None
    tf = probe.data.get("tensorflow") or {}
    if probe.outcome.ok and tf.get("installed") and not tf.get("error") and "physical_gpus" in probe.data:
        return None
    return Verdict(Status.SKIPPED, "TensorFlow could not be inspected (see “TensorFlow installed”).")


def tf_gpu_text(gpu: dict) -> str:
    name = gpu.get("device_name") or gpu.get("name", "GPU")
    capability = gpu.get("compute_capability")
    return f"{name} (cc {cc_text(capability)})" if capability else str(name)


def gpu_capabilities(facts: EnvFacts, probe: ProbeRun | None) -> list[tuple[str, tuple[int, int]]]:
    """(GPU name, compute capability) from NVML, else from TensorFlow's device details."""
    found = [
        (f"GPU {device.index} {device.name}", device.compute_capability)
        for device in facts.nvml.devices
        if device.compute_capability
    ]
    if not found and probe is not None:
        for gpu in probe.data.get("physical_gpus") or []:
            if gpu.get("compute_capability"):
                found.append((tf_gpu_text(gpu), tuple(gpu["compute_capability"][:2])))
    return found
