"""What a GPU source and a process host provide to the Sampler (NVML or the simulation)."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from tfgpu_tui.gpu.model import DeviceInfo, DeviceSample, DriverInfo, HostStats, NvmlUnavailable, ProcessRow


@dataclass(frozen=True)
class GpuProcess:
    """One process as the GPU driver reports it, before host details are added."""

    pid: int
    gpu_index: int
    memory_mib: float | None
    sm_percent: float | None
    mig_index: int | None = None  # the MIG device of that GPU it runs on (GPUs in MIG mode)


@dataclass(frozen=True)
class GpuReading:
    """One reading of every GPU: devices and their processes, or why there are none."""

    error: NvmlUnavailable | None
    driver: DriverInfo | None
    devices: list[DeviceSample] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)


class SignalResult(str, Enum):
    """How signalling a process ended (a str, so that it reads as its value)."""

    ENDED = "ended"
    STILL_ALIVE = "still_alive"
    PERMISSION_DENIED = "permission_denied"
    ALREADY_GONE = "already_gone"
    PID_REUSED = "pid_reused"
    REFUSED = "refused"  # the process no longer is what the row said (it let go of the GPU's device file)
    ERROR = "error"


@dataclass(frozen=True)
class SignalOutcome:
    """What happened when a process was signalled (before checking whether GPU memory was freed); `result`
    given as a string is checked and made a SignalResult."""

    result: SignalResult
    message: str
    signals_sent: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "result", SignalResult(self.result))


class ProcessHost(Protocol):
    """Host-side knowledge about processes: details, CPU TensorFlow processes, host stats, signals."""

    def describe(
        self, processes: list[GpuProcess], reading: GpuReading | None = None
    ) -> list[ProcessRow]: ...

    def cpu_tensorflow(self, exclude: set[int]) -> list[ProcessRow]: ...

    @property
    def own_pid_namespace(self) -> bool:
        """Whether NVML's PIDs may not be this namespace's (a container without --pid=host)."""
        ...

    def holders_of(self, gpu_index: int) -> list[ProcessRow]:
        """The local processes holding that GPU's device file now (inside a container; else empty)."""
        ...

    def stats(self) -> HostStats | None: ...

    def terminate(
        self,
        row: ProcessRow,
        grace_seconds: float,
        on_progress: Callable[[str], None] | None = None,
        first_signal: signal.Signals = signal.SIGTERM,
    ) -> SignalOutcome: ...

    def close(self) -> None: ...


# (seconds ago, reading, process rows): one point of a source's recorded past
PastSample = tuple[float, GpuReading, list[ProcessRow]]


class GpuSource(Protocol):
    """Something that reads GPUs: NVML or the simulation. Everything the Sampler uses is declared here."""

    @property
    def simulated(self) -> bool:
        """True for the simulation (its snapshots are labelled SIMULATED)."""
        ...

    @property
    def host(self) -> ProcessHost | None:
        """The source's own process host (the simulation's), or None for the real host's HostInspector."""
        ...

    def read(self) -> GpuReading:
        """One reading of every GPU and its processes (an error instead when there are none)."""
        ...

    def device_info(self) -> list[DeviceInfo]:
        """Static facts of every GPU (persistence mode...); empty when the source has none."""
        ...

    def past_samples(self, seconds: float, step: float) -> Iterable[PastSample]:
        """The recorded past, every ``step`` s over the last ``seconds``, oldest first (real ones: none)."""
        ...

    def close(self) -> None:
        """Release what the source holds."""
        ...
