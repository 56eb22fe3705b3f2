"""What every environment check shares: the Verdict it returns, the registry, and helpers over the facts
and the parsed inspection result (TF version, CUDA build, install commands)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tfgpu_tui.env import compat, fixes
from tfgpu_tui.env.diagnoses import Diagnosis
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.inspection_data import InspectionResult


@dataclass(frozen=True)
class Verdict:
    """What a check function returns; the check's id and title are added around it."""

    status: Status
    detail: str
    why: str = ""
    fix: str = ""
    informational: bool = False
    link_tab: str | None = None


CheckFunction = Callable[[EnvFacts, InspectionResult | None], Verdict]


@dataclass(frozen=True)
class Check:
    """A registered check: its stable id, title, report place, whether it needs the inspection, function."""

    id: str
    title: str
    needs_inspection: bool
    run: CheckFunction
    needs_tensorflow: bool = False  # skipped (by evaluate) when the inspection could not inspect TensorFlow
    order: int = 0  # place in the report, lowest first


REGISTRY: dict[str, Check] = {}  # every registered check by id; checks.CHECKS puts them in report order


def check(
    check_id: str, title: str, order: int, needs_inspection: bool = False, needs_tensorflow: bool = False
) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check function under a stable id, at place `order` in the report (lowest first).

    Args:
        needs_inspection: pending until the TensorFlow inspection has answered.
        needs_tensorflow: also skipped when TensorFlow could not be read (implies needs_inspection).

    Raises:
        ValueError: the id or the order is already taken by another check.
    """

    def register(function: CheckFunction) -> CheckFunction:
        for other in REGISTRY.values():
            if other.id == check_id or other.order == order:
                raise ValueError(
                    f"check {check_id!r} (order {order}) clashes with {other.id!r} ({other.order})"
                )
        needs = needs_inspection or needs_tensorflow
        REGISTRY[check_id] = Check(check_id, title, needs, function, needs_tensorflow, order)
        return function

    return register


def report_order() -> list[Check]:
    """Every registered check, in report order."""
    return sorted(REGISTRY.values(), key=lambda item: item.order)


def target_python(facts: EnvFacts) -> str:
    return facts.interpreter.python


def pip_command(facts: EnvFacts, args: str) -> str:
    return f"{target_python(facts)} -m pip {args}"


def tensorflow_version(facts: EnvFacts, inspection: InspectionResult | None) -> str | None:
    """TensorFlow's version from the inspection, else from the installed distribution."""
    if (
        inspection is not None
        and inspection.data.tensorflow is not None
        and inspection.data.tensorflow.version
    ):
        return inspection.data.tensorflow.version
    distributions = facts.interpreter.tensorflow_distributions
    return next(iter(distributions.values()), None)


def is_cuda_build(facts: EnvFacts, inspection: InspectionResult | None) -> bool | None:
    """True/False from TF's build info; before the inspection, guessed from the distribution names."""
    if inspection is not None and inspection.data.cuda_build is not None:
        return inspection.data.cuda_build
    distributions = facts.interpreter.tensorflow_distributions
    if not distributions:
        return None
    return not all(name.endswith("-cpu") for name in distributions)


def tf_cuda(facts: EnvFacts, inspection: InspectionResult | None) -> str | None:
    """TF's CUDA version: from build_info, else the tested build for its version."""
    if inspection is not None and inspection.data.build.cuda_version:
        return inspection.data.build.cuda_version
    row = compat.build_row_for(tensorflow_version(facts, inspection))
    return row.cuda if row else None


def tf_cudnn(facts: EnvFacts, inspection: InspectionResult | None) -> str | None:
    """TF's cuDNN major.minor from the tested build (build_info only gives the major)."""
    row = compat.build_row_for(tensorflow_version(facts, inspection))
    if row is not None:
        return row.cudnn
    return inspection.data.build.cudnn_version if inspection is not None else None


def gpu_count(facts: EnvFacts) -> int:
    return len(facts.nvml.devices)


def gpu_list(facts: EnvFacts) -> str:
    names = [f"GPU {device.index}: {device.name}" for device in facts.nvml.devices]
    return ", ".join(names)


def cc_text(capability: tuple[int, int] | list[int]) -> str:
    return f"{capability[0]}.{capability[1]}"


def and_cuda_install(facts: EnvFacts, tf_version: str | None, replacing: tuple[str, ...] = ()) -> str:
    """The command that gives TensorFlow `tf_version` its CUDA libraries, for the target's Python
    (``fixes.gpu_install``)."""
    return fixes.gpu_install(facts, tf_version, replacing)


def diagnoses(inspection: InspectionResult | None) -> tuple[Diagnosis, ...]:
    """Problem diagnoses of TF's stderr (both runs), one per signature, in order of appearance."""
    return inspection.diagnoses if inspection is not None else ()


def tensorflow_unusable(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict | None:
    """A skipped verdict when the inspection could not say anything about TensorFlow, else None."""
    assert inspection is not None
    tf = inspection.data.tensorflow
    if (
        inspection.ok
        and tf is not None
        and tf.installed
        and not tf.error
        and inspection.data.physical_gpus is not None
    ):
        return None
    return Verdict(Status.SKIPPED, "TensorFlow could not be inspected (see “TensorFlow installed”).")


def gpu_capabilities(
    facts: EnvFacts, inspection: InspectionResult | None
) -> list[tuple[str, tuple[int, int]]]:
    """(GPU name, compute capability) from NVML, else from TensorFlow's device details."""
    found = [
        (f"GPU {device.index} {device.name}", device.compute_capability)
        for device in facts.nvml.devices
        if device.compute_capability
    ]
    if not found and inspection is not None:
        for gpu in inspection.data.physical_gpus or ():
            if gpu.compute_capability:
                found.append((gpu.label, gpu.compute_capability))
    return found
