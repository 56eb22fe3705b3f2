"""A fake ``pynvml`` module at the function level, with nvidia-ml-py's error classes, for the NVML tests.

Configure GPUs, processes and failures, then hand it to ``NvmlSource(nvml=fake)``. Every call is counted
in ``calls`` so tests can check that unsupported fields are not re-queried.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

CODES = {
    "Uninitialized": 1,
    "InvalidArgument": 2,
    "NotSupported": 3,
    "NoPermission": 4,
    "NotFound": 6,
    "DriverNotLoaded": 9,
    "Timeout": 10,
    "LibraryNotFound": 12,
    "FunctionNotFound": 13,
    "GpuIsLost": 15,
    "LibRmVersionMismatch": 18,
    "Unknown": 999,
}


class NVMLError(Exception):
    """Like pynvml.NVMLError: ``NVMLError(value)`` returns the matching subclass."""

    by_value: dict[int, type[NVMLError]] = {}

    def __new__(cls, value: int):
        if cls is NVMLError:
            cls = NVMLError.by_value.get(value, NVMLError)
        error = Exception.__new__(cls)
        error.value = value
        return error

    def __init__(self, value: int) -> None:
        self.value = value

    def __str__(self) -> str:
        return f"NVML error {self.value}"


for _name, _code in CODES.items():
    _cls = type(f"NVMLError_{_name}", (NVMLError,), {})
    NVMLError.by_value[_code] = _cls
    globals()[f"NVMLError_{_name}"] = _cls


@dataclass
class FakeGpu:
    name: str = "NVIDIA Fake H100"
    total_mib: int = 81920
    used_mib: int = 1024
    util: int = 50
    temp: int = 60
    power_mw: int = 200000
    limit_mw: int = 700000
    fan: int = 40
    sm_clock: int = 1980
    pstate: int = 0
    compute: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, MiB or None)
    graphics: list[tuple[int, int | None]] = field(default_factory=list)
    samples: list[tuple[int, int, int]] = field(default_factory=list)  # (pid, smUtil, timestamp us)
    errors: dict[str, int] = field(default_factory=dict)  # field -> NVML code raised by that query
    mig: list[FakeGpu] | None = None  # in MIG mode: its MIG devices (each a FakeGpu with gi/ci)
    gi: int = 0  # a MIG device's GPU instance and compute instance IDs
    ci: int = 0
    clock_events: int = 0  # nvmlClocksEventReason bits
    pcie: tuple[int, int, int, int] = (5, 16, 5, 16)  # generation, width now; their maximum


class FakePynvml:
    """The parts of pynvml that NvmlSource calls."""

    NVMLError = NVMLError

    def __init__(self, gpus: list[FakeGpu] | None = None, init_error: int | None = None) -> None:
        self.gpus = gpus if gpus is not None else [FakeGpu()]
        # handles: the GPUs' indices, then their MIG devices' (not counted by nvmlDeviceGetCount)
        self.devices = list(self.gpus) + [mig for gpu in self.gpus for mig in gpu.mig or []]
        self.init_error = init_error
        self.calls: Counter[str] = Counter()
        self.per_gpu: Counter[int] = Counter()
        self.missing: set[str] = set()  # functions the "driver" lacks: FunctionNotFound
        for name, code in CODES.items():
            setattr(self, f"NVMLError_{name}", NVMLError.by_value[code])

    def _gpu(self, handle: int, query: str) -> FakeGpu:
        self.calls[query] += 1
        self.per_gpu[handle] += 1
        if query in self.missing:
            raise NVMLError(CODES["FunctionNotFound"])
        gpu = self.devices[handle]
        code = gpu.errors.get(query, gpu.errors.get("all"))
        if code is not None:
            raise NVMLError(code)
        return gpu

    # -- system ---------------------------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.calls["init"] += 1
        if self.init_error is not None:
            raise NVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls["shutdown"] += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlSystemGetDriverVersion(self) -> str:
        return "550.54.15"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 12040

    def nvmlSystemGetNVMLVersion(self) -> str:
        return "12.550.54.15"

    # -- device ---------------------------------------------------------------------------------------------
    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._gpu(index, "handle")
        return index

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._gpu(h, "name").name

    def nvmlDeviceGetUUID(self, h: int) -> str:
        self._gpu(h, "uuid")
        return f"GPU-fake-{h}"

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        gpu = self._gpu(h, "memory")
        used = gpu.used_mib + sum(m or 0 for _, m in gpu.compute)
        return SimpleNamespace(
            total=gpu.total_mib * 2**20, used=used * 2**20, free=(gpu.total_mib - used) * 2**20
        )

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return self._gpu(h, "power_limit").limit_mw

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        self._gpu(h, "cc")
        return (9, 0)

    def nvmlDeviceGetPersistenceMode(self, h: int) -> int:
        self._gpu(h, "persistence")
        return 1

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(gpu=self._gpu(h, "util").util, memory=10)

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return self._gpu(h, "temp").temp

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self._gpu(h, "power").power_mw

    def nvmlDeviceGetFanSpeed(self, h: int) -> int:
        return self._gpu(h, "fan").fan

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        return self._gpu(h, "clock").sm_clock

    def nvmlDeviceGetPerformanceState(self, h: int) -> int:
        return self._gpu(h, "pstate").pstate

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return self._gpu(h, "clock_events").clock_events

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return self._gpu(h, "pcie").pcie[0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return self._gpu(h, "pcie").pcie[1]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return self._gpu(h, "pcie_max").pcie[2]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return self._gpu(h, "pcie_max").pcie[3]

    def nvmlGpmQueryDeviceSupport(self, h: int) -> SimpleNamespace:
        self._gpu(h, "gpm")
        return SimpleNamespace(isSupportedDevice=0)  # GPM is tested against fakenvml, which computes it

    # -- MIG ------------------------------------------------------------------------------------------------
    def _is_mig(self, h: int) -> bool:
        return h >= len(self.gpus)

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        gpu = self._gpu(h, "mig_mode")
        if self._is_mig(h):
            raise NVMLError(CODES["NotSupported"])
        return [1, 1] if gpu.mig is not None else [0, 0]

    def nvmlDeviceGetMaxMigDeviceCount(self, h: int) -> int:
        return 7 if self._gpu(h, "mig_count").mig is not None else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: int, index: int) -> int:
        migs = self._gpu(h, "mig_handle").mig
        if migs is None:
            raise NVMLError(CODES["NotSupported"])
        if index >= len(migs):
            raise NVMLError(CODES["NotFound"])
        return self.devices.index(migs[index])

    def nvmlDeviceGetGpuInstanceId(self, h: int) -> int:
        return self._gpu(h, "gi").gi

    def nvmlDeviceGetComputeInstanceId(self, h: int) -> int:
        return self._gpu(h, "ci").ci

    def _procs(self, h: int, query: str, entries_of: str) -> list[SimpleNamespace]:
        gpu = self._gpu(h, query)
        entries = getattr(gpu, entries_of)
        return [
            SimpleNamespace(pid=pid, usedGpuMemory=None if m is None else m * 2**20) for pid, m in entries
        ]

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        return self._procs(h, "compute_v3", "compute")

    def nvmlDeviceGetComputeRunningProcesses_v2(self, h: int) -> list[SimpleNamespace]:
        return self._procs(h, "compute_v2", "compute")

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        return self._procs(h, "graphics_v3", "graphics")

    def nvmlDeviceGetGraphicsRunningProcesses_v2(self, h: int) -> list[SimpleNamespace]:
        return self._procs(h, "graphics_v2", "graphics")

    def nvmlDeviceGetProcessUtilization(self, h: int, last_seen: int) -> list[SimpleNamespace]:
        gpu = self._gpu(h, "proc_util")
        if not gpu.samples:
            raise NVMLError(CODES["NotFound"])
        return [SimpleNamespace(pid=p, smUtil=sm, memUtil=0, timeStamp=ts) for p, sm, ts in gpu.samples]


def now_us() -> int:
    """The current time in microseconds, as NVML stamps samples."""
    return time.time_ns() // 1000
