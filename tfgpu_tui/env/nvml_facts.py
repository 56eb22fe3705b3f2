"""Driver, GPU and GPU-process facts for the environment check, read once through ``gpu.nvml.NvmlSource``
(the one home of NVML calls). Never raises: NVML trouble becomes ``error`` (an ``NvmlUnavailable``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tfgpu_tui.gpu.model import DeviceInfo, DriverInfo, NvmlUnavailable
from tfgpu_tui.gpu.nvml import NvmlSource
from tfgpu_tui.gpu.source import GpuProcess


@dataclass(frozen=True)
class NvmlFacts:
    """What NVML says: driver, static device info and the processes on each GPU, or why it could not."""

    error: NvmlUnavailable | None
    driver: DriverInfo | None
    devices: list[DeviceInfo] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)


def read_nvml_facts(source: NvmlSource | None = None) -> NvmlFacts:
    """Driver, devices and GPU processes from one NVML reading, or the reason NVML is not available."""
    source = source or NvmlSource()
    try:
        reading = source.read()
        if reading.error is not None:
            return NvmlFacts(reading.error, None)
        return NvmlFacts(None, reading.driver, source.device_info(), list(reading.processes))
    finally:
        source.close()
