"""The GPU against TF's build: compiled architectures, mixed precision; nvcc, persistence mode (info)."""

from __future__ import annotations

from tfgpu_tui.env.check_base import (
    Verdict,
    cc_text,
    check,
    gpu_capabilities,
    is_cuda_build,
    tf_cuda,
)
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.inspection_data import InspectionResult


@check("compute_capability", "GPU architecture compiled into TensorFlow", order=110, needs_tensorflow=True)
def check_compute_capability(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = (
        "TensorFlow ignores a GPU below its lowest compiled architecture, and must JIT-compile PTX (slow "
        "first start, sometimes failing) for one newer than all of them."
    )
    gpus = gpu_capabilities(facts, inspection)
    compiled = list(inspection.data.build.cuda_compute_capabilities) if inspection is not None else []
    if not gpus or not compiled:
        reason = "no GPU" if not gpus else "TensorFlow's build lists no CUDA architectures"
        return Verdict(Status.SKIPPED, f"Nothing to compare ({reason}).", why)
    binaries = [_arch(item) for item in compiled if item.startswith("sm_")]
    ptx = [_arch(item) for item in compiled if item.startswith("compute_")]
    worst, notes = Status.OK, []
    for name, capability in gpus:
        status, note = _arch_support(capability, [a for a in binaries if a], [a for a in ptx if a])
        notes.append(f"{name} (cc {cc_text(capability)}): {note}")
        worst = max(worst, status, key=_severity_rank)
    fix = {
        Status.FAILURE: "Use an older TensorFlow release whose build includes this GPU's architecture "
        "(or build from source with TF_CUDA_COMPUTE_CAPABILITIES).",
        Status.WARNING: "Use a newer TensorFlow release built for this GPU (or a tf-nightly), and expect "
        "minutes of PTX compilation on first start.",
    }.get(worst, "")
    return Verdict(worst, f"Compiled for {', '.join(compiled)}. " + "; ".join(notes) + ".", why, fix)


def _arch(text: str) -> tuple[int, int] | None:
    digits = text.split("_", 1)[1].rstrip("af")
    return (int(digits[:-1]), int(digits[-1])) if digits.isdigit() and len(digits) >= 2 else None


def _arch_support(
    capability: tuple[int, int], binaries: list[tuple[int, int]], ptx: list[tuple[int, int]]
) -> tuple[Status, str]:
    """Whether a GPU runs a build's kernels: a same-major binary at or below it, else PTX at or below it."""
    lowest = min(binaries + ptx) if binaries + ptx else None
    if lowest is not None and capability < lowest:
        return Status.FAILURE, f"below the lowest compiled architecture {cc_text(lowest)}, so TF ignores it"
    if any(arch[0] == capability[0] and arch <= capability for arch in binaries):
        return Status.OK, "native kernels"
    if any(arch <= capability for arch in ptx):
        return Status.WARNING, "no native kernels; runs through PTX JIT compilation"
    return Status.FAILURE, "no compatible kernels or PTX"


def _severity_rank(status: Status) -> int:
    return {Status.FAILURE: 3, Status.WARNING: 2, Status.OK: 1}.get(status, 0)


@check("mixed_precision", "Mixed precision (Tensor Cores)", order=120)
def check_mixed_precision(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = (
        "mixed_float16 is fast only on compute capability >= 7.0 (Tensor Cores); mixed_bfloat16 needs "
        ">= 8.0. Keras 3 no longer warns about this."
    )
    gpus = gpu_capabilities(facts, inspection)
    if not gpus:
        return Verdict(Status.SKIPPED, "No GPU compute capability known.", why)
    notes, slow = [], []
    for name, capability in gpus:
        if capability >= (8, 0):
            notes.append(f"{name} (cc {cc_text(capability)}): mixed_float16 and mixed_bfloat16 both fast")
        elif capability >= (7, 0):
            notes.append(f"{name} (cc {cc_text(capability)}): mixed_float16 fast; bfloat16 needs cc 8.0")
        else:
            slow.append(name)
            notes.append(
                f"{name} (cc {cc_text(capability)}): no Tensor Cores, no speed-up from mixed precision"
            )
    if slow:
        return Verdict(
            Status.WARNING,
            "; ".join(notes) + ".",
            why,
            "Keep float32 on this GPU: `keras.mixed_precision.set_global_policy('float32')` (mixed_float16 "
            "only saves memory here).",
        )
    return Verdict(Status.OK, "; ".join(notes) + ".", why)


@check("nvcc", "nvcc (CUDA compiler)", order=130)
def check_nvcc(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = (
        "TensorFlow pip wheels bring their own CUDA runtime and never use nvcc; its version is not the CUDA "
        "TensorFlow uses."
    )
    nvcc = facts.nvcc
    if nvcc.path is None:
        return Verdict(
            Status.OK, "Not on PATH (not needed by TensorFlow pip wheels).", why, informational=True
        )
    cuda = tf_cuda(facts, inspection)
    versus = f"; TensorFlow uses CUDA {cuda}" if cuda and is_cuda_build(facts, inspection) else ""
    release = nvcc.release or f"version unknown ({nvcc.error})"
    return Verdict(Status.OK, f"nvcc {release} at {nvcc.path}{versus}.", why, informational=True)


@check("persistence_mode", "Persistence mode", order=140)
def check_persistence_mode(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = "With persistence mode off the driver unloads when idle: slower NVML queries and first CUDA start."
    devices = [device for device in facts.nvml.devices if device.persistence_mode is not None]
    if not devices:
        return Verdict(Status.SKIPPED, "Not known (no GPU, or NVML does not report it).", why)
    off = [str(device.index) for device in devices if not device.persistence_mode]
    if off:
        return Verdict(
            Status.OK,
            f"Off on GPU {', '.join(off)}.",
            why,
            "sudo nvidia-smi -pm 1   # optional",
            informational=True,
        )
    return Verdict(Status.OK, "On for every GPU.", why, informational=True)
