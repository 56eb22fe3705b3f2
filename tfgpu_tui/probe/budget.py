"""Where the default memory budget comes from: a GPU's free memory (read through `gpu.nvml`, the one place
that calls NVML), or the host's available memory on the CPU."""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from tfgpu_tui.gpu.cuda_devices import CudaDevice, mig_cuda_devices
from tfgpu_tui.gpu.model import DeviceSample
from tfgpu_tui.gpu.nvml import NvmlSource

MB = 2**20


@dataclass(frozen=True)
class Budget:
    """A default budget in MB and where it came from (shown to the user); ``mb`` is None with a reason."""

    mb: float | None
    source: str


def read_gpus() -> tuple[list[DeviceSample], str]:
    """Every GPU's current sample, or an empty list and why (NVML missing, no driver ...)."""
    source = NvmlSource()
    try:
        reading = source.read()
    finally:
        source.close()
    if reading.error is not None:
        return [], reading.error.message
    return reading.devices, ""


CPU_ALTERNATIVE = "probe the CPU with --device CPU"


def missing_gpu(device: str, samples: list[DeviceSample], reason: str) -> str | None:
    """Why ``GPU:N`` cannot be probed here (no GPU visible, or not that one), naming the CPU alternative;
    None when NVML lists it (or for the CPU)."""
    if device == "CPU":
        return None
    index = int(device.split(":")[1])
    if any(s.index == index for s in samples):
        return None
    if not samples:
        why = f" ({reason.rstrip('.')})" if reason else ": NVML lists no GPU"
        return f"there is no {device} to probe{why}; {CPU_ALTERNATIVE}"
    listed = ", ".join(f"GPU:{s.index}" for s in samples)
    has = f"this machine has {len(samples)} GPU(s) ({listed})"
    return f"there is no {device}: {has}; pick one, or {CPU_ALTERNATIVE}"


def device_problem(device: str) -> str | None:
    """`missing_gpu` when NVML answers and does not list the device; None when it lists it, or when NVML
    cannot be read (then the trial's child tells what TensorFlow sees)."""
    if device == "CPU":
        return None
    samples, reason = read_gpus()
    return None if reason else missing_gpu(device, samples, reason)


def default_budget(device: str) -> Budget:
    """What the device has free: total minus used memory for ``GPU:N``, available host memory for ``CPU``;
    ``mb`` None with the reason (the device is missing, or NVML does not report its memory)."""
    if device == "CPU":
        return Budget(psutil.virtual_memory().available / MB, "available host memory (CPU)")
    index = int(device.split(":")[1])
    samples, reason = read_gpus()
    mapped = mig_cuda_devices(samples, os.environ.get("CUDA_VISIBLE_DEVICES"))
    if mapped is not None:  # in MIG mode TensorFlow's GPU:N is a slice: its memory is the budget
        return _slice_budget(device, index, *mapped)
    missing = missing_gpu(device, samples, reason)
    if missing is not None:
        return Budget(None, missing)
    sample = next((s for s in samples if s.index == index), None)
    if sample is None or sample.memory_total_mib is None or sample.memory_used_mib is None:
        why = reason or f"NVML does not report the memory of {device}"
        return Budget(None, f"cannot read the free memory of {device} ({why}); give a budget in MB")
    return Budget(sample.memory_total_mib - sample.memory_used_mib, f"free memory on {device}")


def _slice_budget(device: str, index: int, found: list[CudaDevice], why: str) -> Budget:
    """The free memory of the MIG device TensorFlow numbers `device`, or why it is not known."""
    cuda = next((c for c in found if c.ordinal == index), None)
    if cuda is None:
        why = why or f"CUDA_VISIBLE_DEVICES names {len(found)} MIG device(s)"
        return Budget(
            None,
            f"{device} is a MIG device here and {why}; name one with CUDA_VISIBLE_DEVICES=MIG-… "
            "(`tfgpu-tui gpus` lists them), or give a budget in MB",
        )
    if cuda.memory_total_mib is None or cuda.memory_used_mib is None:
        return Budget(None, f"cannot read the free memory of {cuda.name}; give a budget in MB")
    return Budget(cuda.memory_total_mib - cuda.memory_used_mib, f"free memory on {device}, {cuda.name}")


def gpu_devices() -> list[str]:
    """``GPU:0``... for every GPU NVML sees; empty without NVML or a driver."""
    samples, _ = read_gpus()
    return [f"GPU:{s.index}" for s in samples]
