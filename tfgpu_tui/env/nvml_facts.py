"""Driver, GPU and GPU-process facts for the environment check, read once through ``gpu.nvml.NvmlSource``
(the one home of NVML calls). Never raises: NVML trouble becomes ``error`` (an ``NvmlUnavailable``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tfgpu_tui.gpu.model import DeviceInfo, DeviceSample, DriverInfo, MigDevice, NvmlUnavailable
from tfgpu_tui.gpu.nvml import NvmlSource
from tfgpu_tui.gpu.source import GpuProcess


@dataclass(frozen=True)
class NvmlFacts:
    """What NVML says: driver, static device info and the processes on each GPU, or why it could not."""

    error: NvmlUnavailable | None
    driver: DriverInfo | None
    devices: list[DeviceInfo] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    readings: list[DeviceSample] = field(default_factory=list)  # the live sample (MIG mode, MIG devices)

    @property
    def mig_devices(self) -> list[MigDevice]:
        """The MIG devices ("slices") of the GPUs in MIG mode."""
        return [mig for device in self.readings for mig in device.mig_devices]


def read_nvml_facts(source: NvmlSource | None = None) -> NvmlFacts:
    """Driver, devices and GPU processes from one NVML reading, or the reason NVML is not available."""
    source = source or NvmlSource()
    try:
        reading = source.read()
        if reading.error is not None:
            return NvmlFacts(reading.error, source.driver_info())  # a driver that lists no GPU has a version
        info = source.device_info()
        return NvmlFacts(None, reading.driver, info, list(reading.processes), list(reading.devices))
    finally:
        source.close()
