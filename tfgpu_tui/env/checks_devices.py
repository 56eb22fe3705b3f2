"""Does TensorFlow use the GPU: its device list (silent CPU fallback and its cause), the placement test."""

from __future__ import annotations

from collections.abc import Sequence

from tfgpu_tui.alerts import Severity
from tfgpu_tui.env.check_base import (
    Verdict,
    and_cuda_install,
    check,
    diagnoses,
    gpu_count,
    is_cuda_build,
    target_python,
    tensorflow_version,
)
from tfgpu_tui.env.checks_system import libcuda_fix, libcuda_missing_text
from tfgpu_tui.env.diagnoses import Diagnosis
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.inspection_data import InspectionResult, PlacementStatus

# The libraries TensorFlow loads before it registers a GPU, the one that decides the outcome first.
DECIDING_LIBRARIES = (
    "libcuda.",
    "libcudart",
    "libcudnn",
    "libcublasLt",
    "libcublas",
    "libcufft",
    "libcusolver",
    "libcusparse",
    "libnvJitLink",
    "libcurand",
    "libnccl",
)
# Which diagnosis best explains an empty GPU list, most specific first.
FALLBACK_CAUSES = (
    "DSO_LOAD_FAIL",
    "CVD_HIDES_ALL",
    "CUINIT_NO_DEVICE",
    "DRIVER_INSUFFICIENT",
    "CC_TOO_LOW",
    "CUDNN_VERSION_MISMATCH",
    "DSO_KERNEL_MISMATCH",
    "CUINIT_UNKNOWN",
    "CUINIT_COMPAT_HW",
    "NO_KERNEL_DRIVER",
    "CUDART_STUB_NO_DRIVER",
    "CUDA_RUNTIME_LOAD_ERR",
    "CANNOT_DLOPEN_GPU_LIBS",
)


@check("gpus_visible", "GPUs visible to TensorFlow", order=90, needs_tensorflow=True)
def check_gpus_visible(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = "With no GPU visible TensorFlow silently trains on the CPU, 10-100x slower."
    assert inspection is not None
    physical = inspection.data.physical_gpus or ()
    nvml_count = gpu_count(facts)
    if not is_cuda_build(facts, inspection):
        return Verdict(
            Status.SKIPPED, "A CPU-only build sees no GPU (see “GPU-enabled TensorFlow build”).", why
        )
    if physical:
        names = ", ".join(gpu.label for gpu in physical)
        if nvml_count > len(physical) and "CUDA_VISIBLE_DEVICES" not in facts.env_vars:
            return Verdict(
                Status.WARNING,
                f"TensorFlow sees {len(physical)} of {nvml_count} GPUs: {names}.",
                why,
                _cause_fix(diagnoses(inspection))
                or "Look for 'Ignoring visible gpu device' in the inspection log.",
            )
        return Verdict(Status.OK, f"TensorFlow sees {len(physical)} GPU(s): {names}.", why)
    if nvml_count == 0:
        return Verdict(Status.SKIPPED, "No NVIDIA GPU on this machine.", why)
    if facts.interpreter.libcuda_loaded is False:  # the cause, whatever else the log says
        return Verdict(
            Status.FAILURE,
            "Silent CPU fallback: " + libcuda_missing_text(facts),
            why,
            libcuda_fix(facts),
        )
    cause = _fallback_cause(inspection)
    detail = f"Silent CPU fallback: NVML sees {nvml_count} GPU(s) but TensorFlow sees none."
    if cause is not None:
        detail += f" Cause: {cause.meaning}"
        if cause.details.get("lib"):
            detail += f" (missing: {', '.join(_missing_libs(inspection))})"
        return Verdict(Status.FAILURE, detail, why, _cause_fix([cause], facts, inspection))
    return Verdict(
        Status.FAILURE,
        detail + " TensorFlow's log gave no reason.",
        why,
        f'Run `TF_CPP_MAX_VLOG_LEVEL=3 {target_python(facts)} -c "import tensorflow as tf; '
        "print(tf.config.list_physical_devices('GPU'))\"` and look for 'Could not load dynamic library'.",
    )


def _missing_libs(inspection: InspectionResult) -> list[str]:
    """The libraries that failed to load, the one that decides the outcome first; TensorRT's left out."""
    failed = {d.details["lib"] for d in inspection.log_matches if d.details.get("lib") and _decides(d)}
    return sorted(failed, key=deciding_rank)


def _decides(diagnosis: Diagnosis) -> bool:
    """A problem that can cost the GPU (not information such as TensorRT not found)."""
    return diagnosis.is_problem and diagnosis.severity is not Severity.INFO


def deciding_rank(library: str) -> tuple[int, str]:
    """Where a library stands in deciding whether TensorFlow registers a GPU: the driver's libcuda first,
    then the CUDA runtime, cuDNN, cuBLAS..."""
    rank = next((i for i, stem in enumerate(DECIDING_LIBRARIES) if library.startswith(stem)), 99)
    return rank, library


def _fallback_cause(inspection: InspectionResult) -> Diagnosis | None:
    found = [diagnosis for diagnosis in diagnoses(inspection) if _decides(diagnosis)]
    loads = sorted(
        (diagnosis for diagnosis in found if diagnosis.id == "DSO_LOAD_FAIL"),
        key=lambda diagnosis: deciding_rank(diagnosis.details.get("lib", "")),
    )
    if loads:
        return loads[0]
    by_id = {diagnosis.id: diagnosis for diagnosis in reversed(found)}
    return next((by_id[cause] for cause in FALLBACK_CAUSES if cause in by_id), None)


def _cause_fix(
    causes: Sequence[Diagnosis], facts: EnvFacts | None = None, inspection: InspectionResult | None = None
) -> str:
    """The fix of the first cause, made concrete (pip command) for missing libraries."""
    if not causes:
        return ""
    cause = causes[0]
    if facts is not None and cause.id == "DSO_LOAD_FAIL" and _in_pip(facts, cause.details.get("lib", "")):
        where = (
            f"$({target_python(facts)} -c 'import tensorflow as tf, os; print(os.path.dirname(tf.__file__))')"
        )
        return (
            f"{cause.details['lib']} is installed by pip but TensorFlow did not find it (a known TF 2.16 "
            f'problem): cd "{where}" && ln -svf ../nvidia/*/lib/*.so* .'
        )
    if (
        facts is not None
        and inspection is not None
        and cause.id in ("DSO_LOAD_FAIL", "CANNOT_DLOPEN_GPU_LIBS")
    ):
        return and_cuda_install(facts, tensorflow_version(facts, inspection))
    if cause.id in ("CVD_HIDES_ALL", "CUINIT_NO_DEVICE") and "CUDA_VISIBLE_DEVICES" in (
        facts.env_vars if facts else {}
    ):
        return "unset CUDA_VISIBLE_DEVICES   # " + cause.fix
    return cause.fix


def _in_pip(facts: EnvFacts, soname: str) -> bool:
    """Whether a pip NVIDIA package provides this exact soname (e.g. ``libcudnn.so.8``)."""
    return any(library.path.endswith("/" + soname) for library in facts.interpreter.pip_libraries)


@check("placement", "Placement test (matmul on GPU:0)", order=100, needs_tensorflow=True)
def check_placement(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = "Proves that an op really runs on the GPU, not only that a device is listed."
    assert inspection is not None
    placement = inspection.data.placement
    cpu = placement.cpu_seconds
    cpu_text = f"; the same on the CPU: {cpu * 1000:.1f} ms" if cpu is not None else ""
    status = placement.status
    if status is PlacementStatus.OK and "GPU" in (placement.device or ""):
        took = f" in {placement.seconds * 1000:.2f} ms" if placement.seconds is not None else ""
        return Verdict(Status.OK, f"A 1024x1024 matmul ran on {placement.device}{took}{cpu_text}.", why)
    if status is PlacementStatus.OK:
        return Verdict(
            Status.FAILURE,
            f"The matmul asked for GPU:0 but ran on {placement.device}{cpu_text}.",
            why,
            "See “GPUs visible to TensorFlow”.",
        )
    if status is PlacementStatus.FAILED:
        causes = diagnoses(inspection)
        return Verdict(
            Status.FAILURE,
            f"The matmul on GPU:0 failed: {placement.error}",
            why,
            _cause_fix(causes, facts, inspection) or "See the TensorFlow log findings below.",
        )
    return Verdict(Status.SKIPPED, f"Skipped: {placement.error or 'no GPU'}{cpu_text}.", why)
