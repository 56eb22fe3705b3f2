"""A GPU source for tests that script NVML's readings in Python: a real (not simulated) source with no
device details, no history and nothing to close; a subclass gives `read`."""

from __future__ import annotations

from tfgpu_tui.gpu.source import GpuReading


class ScriptedSource:
    """What every scripted source shares; `read` gives the reading (here: no GPU, no error)."""

    simulated = False
    host = None

    def read(self) -> GpuReading:
        return GpuReading(None, None)

    def device_info(self) -> list:
        return []

    def past_samples(self, seconds: float, step: float) -> tuple:
        return ()

    def close(self) -> None:
        pass
