"""Where the default memory budget comes from: a GPU's free memory (read through `gpu.nvml`, the one place
that calls NVML), or the host's available memory on the CPU."""

from __future__ import annotations

from dataclasses import dataclass

import psutil

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


def default_budget(device: str) -> Budget:
    """What the device has free: total minus used memory for ``GPU:N``, available host memory for ``CPU``."""
    if device == "CPU":
        return Budget(psutil.virtual_memory().available / MB, "available host memory (CPU)")
    index = int(device.split(":")[1])
    samples, reason = read_gpus()
    sample = next((s for s in samples if s.index == index), None)
    if sample is None or sample.memory_total_mib is None or sample.memory_used_mib is None:
        why = reason or f"NVML does not report the memory of {device}"
        return Budget(None, f"cannot read the free memory of {device} ({why}); give a budget in MB")
    return Budget(sample.memory_total_mib - sample.memory_used_mib, f"free memory on {device}")


def gpu_devices() -> list[str]:
    """``GPU:0``... for every GPU NVML sees; empty without NVML or a driver."""
    samples, _ = read_gpus()
    return [f"GPU:{s.index}" for s in samples]
