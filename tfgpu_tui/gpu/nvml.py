"""The one place that calls NVML (through nvidia-ml-py's ``pynvml`` module).

- Start-up failures become an ``NvmlUnavailable`` with the reason and its fix (retried now and then, so a
  driver loaded later is picked up); nothing raises to the caller.
- Static facts (name, UUID, power limit, compute capability) are read once.
- A field that answers NotSupported, FunctionNotFound or NoPermission is N/A from then on and is not
  queried again; other errors make it N/A for that refresh only.
- GpuIsLost marks the device lost for the rest of the session; the other GPUs carry on.
- Compute and graphics process lists are merged per GPU (a PID in both is one process); per-process SM %
  comes from nvmlDeviceGetProcessUtilization with nvtop's sanity filter.
- Where GPM is supported (Hopper or newer), each read takes a GPM sample of every GPU (in MIG mode: of every
  GPU instance) and computes SM, tensor, DRAM, FP and PCIe activity against the previous one, so GPM is read
  at the caller's pace and never faster than every 100 ms (docs/efficiency.md).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from tfgpu_tui.gpu.model import (
    MEASURING,
    Activity,
    DeviceInfo,
    DeviceSample,
    DriverInfo,
    MigDevice,
    NvmlUnavailable,
    no_activity,
)
from tfgpu_tui.gpu.source import GpuProcess, GpuReading, PastSample

MIB = 2**20
RETRY_INIT_SECONDS = 30.0
LOOKBACK_US = 1_000_000  # first process-utilisation query looks one second back

# NVML return codes (nvml.h); stable across driver versions, so they are spelled out here.
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
LIB_RM_VERSION_MISMATCH = 18

INVALID_ARGUMENT = 2
PERMANENT_REASONS = {
    NOT_SUPPORTED: "not supported by this GPU",
    FUNCTION_NOT_FOUND: "not offered by this driver (older than nvidia-ml-py)",
    NO_PERMISSION: "needs more privileges",
}

INIT_FAILURES = {
    LIBRARY_NOT_FOUND: (
        "library_not_found",
        "The NVIDIA driver library (libnvidia-ml.so.1) was not found: no NVIDIA driver is installed here, "
        "or this container was started without the NVIDIA runtime.",
        "Install the NVIDIA driver (Ubuntu: `sudo ubuntu-drivers install`, then reboot); in Docker start the "
        "container with `--gpus all` (NVIDIA Container Toolkit).",
    ),
    DRIVER_NOT_LOADED: (
        "driver_not_loaded",
        "The NVIDIA driver is installed but its kernel module is not loaded.",
        "Run `sudo modprobe nvidia`; if that fails, see `sudo dmesg | grep -i nvidia` (Secure Boot may block "
        "the unsigned module) or reboot.",
    ),
    LIB_RM_VERSION_MISMATCH: (
        "version_mismatch",
        "The NVIDIA kernel module and libnvidia-ml.so are different versions: the driver was upgraded "
        "without a reboot.",
        "Reboot, or reload the module: `sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && "
        "sudo modprobe nvidia` (stop everything using the GPU first).",
    ),
    NO_PERMISSION: (
        "no_permission",
        "Not allowed to open the NVIDIA device files (/dev/nvidia*).",
        "Add your user to the group that owns /dev/nvidia* (`ls -l /dev/nvidia*`, often `video`) and log in "
        "again; in a container, start it with `--gpus all`.",
    ),
}


MIG_UTILIZATION = "not reported in MIG mode (NVML reports no utilisation for a GPU in MIG mode or its slices)"
MIG_PARENT_MEMORY = (
    "not readable for the whole GPU in MIG mode without privileges: each MIG device shows its own"
)


def mig_parent_reasons(unavailable: dict[str, str]) -> dict[str, str]:
    """Why a GPU in MIG mode shows no utilisation (never reported) and, unprivileged, no memory."""
    reasons = dict(unavailable, utilization=MIG_UTILIZATION)
    if "memory" in reasons:
        reasons["memory"] = MIG_PARENT_MEMORY
    return reasons


# Activity field -> NVML GPM metric id (nvml.h NVML_GPM_METRIC_*): only what the screen, the exporter and the
# diagnoses use
GPM_METRICS = {
    "sm_active": 2,  # SM_UTIL
    "sm_occupancy": 3,  # SM_OCCUPANCY
    "tensor_active": 5,  # ANY_TENSOR_UTIL
    "hmma_active": 7,  # HMMA_TENSOR_UTIL
    "dram_active": 10,  # DRAM_BW_UTIL
    "fp32_active": 12,  # FP32_UTIL
    "fp16_active": 13,  # FP16_UTIL
    "pcie_tx_mib_s": 20,  # PCIE_TX_PER_SEC
    "pcie_rx_mib_s": 21,  # PCIE_RX_PER_SEC
}
GPM_MIN_SECONDS = 0.11  # nvml.h: the samples "should be" more than 100 ms apart (10 ms for clock jitter)
NO_GPM = "not measurable on this GPU (GPM needs Hopper or newer)"
GPM_OLD_DRIVER = "not measurable with this driver or nvidia-ml-py (GPM needs driver 520 or newer)"
GPM_MEASURING = f"{MEASURING}: GPM compares two samples at least 100 ms apart, and this is the first"
GPM_MIG_PARENT = "in MIG mode each GPU instance's activity is measured on its MIG devices"


def gpm_refusal(exc: Exception) -> str:
    """Why GPM cannot measure, from the error of a GPM call."""
    value = getattr(exc, "value", None)
    if value == NOT_SUPPORTED:
        return NO_GPM
    if value == FUNCTION_NOT_FOUND or isinstance(exc, AttributeError):
        return GPM_OLD_DRIVER
    if value in PERMANENT_REASONS:
        return f"not measurable: GPM {PERMANENT_REASONS[value]}"
    return f"not measurable: GPM support could not be read ({exc})"


def _mig_sampler(nvml: ModuleType, handle: Any, gpu_instance: int) -> Callable[[Any], Any]:
    """Fills a GPM sample buffer with one GPU instance's counters."""
    return lambda sample: nvml.nvmlGpmMigSampleGet(handle, gpu_instance, sample)


class _Lost(Exception):
    """The GPU answered GpuIsLost."""


@dataclass
class _Device:
    """One GPU: its handle, static facts and which fields it does not support."""

    index: int
    handle: Any
    name: str
    info: DeviceInfo | None = None
    lost: bool = False
    unsupported: dict[str, str] = field(default_factory=dict)
    last_seen_us: int = 0
    mig: list[_Mig] | None = None  # in MIG mode: its MIG devices (each a CUDA device of its own)
    gpm: _Gpm | None = None  # where GPM is supported: its pair of samples
    gpm_why_none: str = NO_GPM
    pcie_max: tuple[int | None, int | None] = (None, None)  # generation, width


@dataclass
class _Gpm:
    """A pair of GPM sample buffers of one GPU or GPU instance: each `activity()` takes a new sample and
    compares it with the previous one (at least GPM_MIN_SECONDS older)."""

    nvml: ModuleType
    take: Callable[[Any], Any]  # fills a sample buffer (nvmlGpmSampleGet or nvmlGpmMigSampleGet)
    clock: Callable[[], float] = time.monotonic
    buffers: list[Any] = field(default_factory=list)
    previous: Any = None
    taken_at: float = 0.0
    last: Activity = field(default_factory=lambda: no_activity(GPM_MEASURING))
    failed: str | None = None  # a permanent failure: GPM stays off

    def activity(self) -> Activity:
        """The activity since the previous sample (the last one again if that is under 100 ms old)."""
        if self.failed:
            return no_activity(self.failed)
        now = self.clock()
        if self.previous is not None and now - self.taken_at <= GPM_MIN_SECONDS:
            return self.last
        nvml = self.nvml
        try:
            if not self.buffers:
                self.buffers = [nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()]
            sample = self.buffers[1] if self.previous is self.buffers[0] else self.buffers[0]
            self.take(sample)
        except Exception as exc:
            return self._failed(exc)
        if self.previous is None:
            self.previous, self.taken_at = sample, now
            return self.last
        try:
            self.last = self._compare(self.previous, sample, now - self.taken_at)
        except Exception as exc:
            self.last = no_activity(f"GPM could not compare its samples: {exc}")
        self.previous, self.taken_at = sample, now
        return self.last

    def _failed(self, exc: Exception) -> Activity:
        value = getattr(exc, "value", None)
        if value == GPU_IS_LOST:
            raise _Lost from None
        if value in PERMANENT_REASONS or isinstance(exc, AttributeError):
            self.failed = gpm_refusal(exc)
        return no_activity(self.failed or f"GPM sample failed: {exc}")

    def _compare(self, first: Any, second: Any, seconds: float) -> Activity:
        """nvmlGpmMetricsGet over two samples: each metric's value, or None with NVML's reason."""
        nvml = self.nvml
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(GPM_METRICS)
        request.sample1, request.sample2 = first, second
        for slot, metric in enumerate(GPM_METRICS.values()):
            request.metrics[slot].metricId = metric
        nvml.nvmlGpmMetricsGet(request)
        values: dict[str, float | None] = {}
        unavailable: dict[str, str] = {}
        for slot, name in enumerate(GPM_METRICS):
            entry = request.metrics[slot]
            if entry.nvmlReturn == 0:
                values[name] = round(float(entry.value), 2)
            else:
                values[name] = None
                code = int(entry.nvmlReturn)
                unavailable[name] = PERMANENT_REASONS.get(code, f"NVML error {code}")
        return Activity("gpm", "", **values, window_seconds=round(seconds, 3), unavailable=unavailable)

    def close(self) -> None:
        """Free the sample buffers."""
        for buffer in self.buffers:
            with contextlib.suppress(Exception):
                self.nvml.nvmlGpmSampleFree(buffer)
        self.buffers, self.previous = [], None


@dataclass
class _Mig(_Device):
    """One MIG device of a GPU in MIG mode: its own handle, memory and processes."""

    mig_index: int = 0
    uuid: str | None = None
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


def mig_profile(name: str) -> str | None:
    """The profile in a MIG device's name: `NVIDIA A100-SXM4-80GB MIG 1g.10gb` -> `1g.10gb`."""
    head, found, profile = name.rpartition(" MIG ")
    return profile.strip() or None if found else None


def unavailable_from_error(error: Exception) -> NvmlUnavailable:
    """The NvmlUnavailable for an exception raised by nvmlInit."""
    value = getattr(error, "value", None)
    if value in INIT_FAILURES:
        kind, message, fix = INIT_FAILURES[value]
        return NvmlUnavailable(kind, message, fix)
    return NvmlUnavailable(
        "unknown",
        f"NVML could not start: {error}",
        "Run `nvidia-smi`: it prints the driver's own explanation.",
    )


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _cuda_version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"


class NvmlSource:
    """A GpuSource backed by NVML; never raises from ``read()``."""

    simulated = False
    host = None  # the real host is inspected by processes.HostInspector

    def __init__(
        self,
        nvml: ModuleType | None = None,
        clock: Callable[[], float] = time.monotonic,
        retry_seconds: float = RETRY_INIT_SECONDS,
        extended: bool = False,
    ) -> None:
        self._nvml = nvml
        self._extended = extended  # also read memory clock, energy and PCIe throughput (the exporter's)
        self._clock = clock
        self._retry_seconds = retry_seconds
        self._started = False
        self._error: NvmlUnavailable | None = None
        self._tried_at: float | None = None
        self._devices: list[_Device] = []
        self._driver: DriverInfo | None = None
        self._process_fns: dict[str, list[Callable[[Any], Any]]] = {}

    # -- start-up -------------------------------------------------------------------------------------------
    def _module(self) -> ModuleType:
        if self._nvml is None:
            import pynvml  # nvidia-ml-py

            self._nvml = pynvml
        return self._nvml

    def _ensure_started(self) -> None:
        if self._started:
            return
        now = self._clock()
        if self._tried_at is not None and now - self._tried_at < self._retry_seconds:
            return
        self._tried_at = now
        try:
            nvml = self._module()
        except ImportError:
            self._error = NvmlUnavailable(
                "library_not_found",
                "The Python bindings for NVML (nvidia-ml-py) are not installed.",
                "`pip install nvidia-ml-py` (never the old `pynvml` package).",
            )
            return
        try:
            nvml.nvmlInit()
        except Exception as exc:  # NVMLError subclasses, or OSError from a broken library
            self._error = unavailable_from_error(exc)
            return
        try:
            count = nvml.nvmlDeviceGetCount()
        except Exception as exc:
            self._error = unavailable_from_error(exc)
            self._shutdown()
            return
        if count == 0:
            self._driver = self._read_driver(nvml)  # the driver runs; only the GPUs are missing
            self._error = NvmlUnavailable(
                "no_devices",
                "The NVIDIA driver is running but reports no GPUs.",
                "Check `nvidia-smi -L`; in a container pass `--gpus all`; check CUDA_VISIBLE_DEVICES is not "
                "hiding them.",
            )
            self._shutdown()
            return
        self._error = None
        self._started = True
        self._driver = self._read_driver(nvml)
        self._process_fns = self._process_functions(nvml)
        self._devices = [self._open_device(nvml, index) for index in range(count)]

    def _read_driver(self, nvml: ModuleType) -> DriverInfo:
        def get(fn_name: str, convert: Callable[[Any], str]) -> str | None:
            try:
                return convert(getattr(nvml, fn_name)())
            except Exception:
                return None

        return DriverInfo(
            get("nvmlSystemGetDriverVersion", _text),
            get("nvmlSystemGetCudaDriverVersion", _cuda_version),
            get("nvmlSystemGetNVMLVersion", _text),
        )

    def _process_functions(self, nvml: ModuleType) -> dict[str, list[Callable[[Any], Any]]]:
        """Process-list functions per kind, newest struct version first (older drivers lack the newest)."""
        found: dict[str, list[Callable[[Any], Any]]] = {}
        for kind in ("Compute", "Graphics"):
            names = [f"nvmlDeviceGet{kind}RunningProcesses", f"nvmlDeviceGet{kind}RunningProcesses_v2"]
            found[kind.lower()] = [getattr(nvml, name) for name in names if hasattr(nvml, name)]
        return found

    def _open_device(self, nvml: ModuleType, index: int) -> _Device:
        """Get the handle and the static facts of one GPU (read once)."""
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as exc:
            device = _Device(index, None, f"GPU {index}")
            device.lost = getattr(exc, "value", None) == GPU_IS_LOST
            device.unsupported["all"] = f"no handle: {exc}"
            return device
        device = _Device(index, handle, f"GPU {index}", last_seen_us=time.time_ns() // 1000 - LOOKBACK_US)
        try:
            device.name = _text(
                self._query(device, "name", lambda: nvml.nvmlDeviceGetName(handle)) or device.name
            )
            uuid = self._query(device, "uuid", lambda: nvml.nvmlDeviceGetUUID(handle))
            memory = self._query(device, "memory", lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
            limit = self._query(device, "power_limit", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
            cc = self._query(
                device, "compute_capability", lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle)
            )
            persistence = self._query(
                device, "persistence_mode", lambda: nvml.nvmlDeviceGetPersistenceMode(handle)
            )
            pci = self._query(device, "pci_info", lambda: nvml.nvmlDeviceGetPciInfo(handle))
            minor = self._query(device, "minor_number", lambda: nvml.nvmlDeviceGetMinorNumber(handle))
            mode = self._query(device, "mig_mode", lambda: nvml.nvmlDeviceGetMigMode(handle))
            if mode is not None and int(mode[0]) == 1:
                device.mig = self._open_mig_devices(nvml, device)
            device.pcie_max = (
                self._query(device, "pcie_max_gen", lambda: nvml.nvmlDeviceGetMaxPcieLinkGeneration(handle)),
                self._query(device, "pcie_max_width", lambda: nvml.nvmlDeviceGetMaxPcieLinkWidth(handle)),
            )
            self._open_gpm(nvml, device)
        except _Lost:
            device.lost = True
            return device
        device.info = DeviceInfo(
            index,
            device.name,
            _text(uuid) if uuid is not None else None,
            memory.total / MIB if memory is not None else None,
            limit / 1000 if limit is not None else None,
            tuple(cc) if cc is not None else None,  # type: ignore[arg-type]
            bool(persistence) if persistence is not None else None,
            _text(pci.busId) if pci is not None else None,
            int(minor) if isinstance(minor, int) else None,
        )
        return device

    def _open_gpm(self, nvml: ModuleType, device: _Device) -> None:
        """Whether the GPU supports GPM; if so, a sample pair for it, or in MIG mode one per GPU instance
        (shared by the instance's MIG devices)."""
        try:
            supported = bool(nvml.nvmlGpmQueryDeviceSupport(device.handle).isSupportedDevice)
        except Exception as exc:
            value = getattr(exc, "value", None)
            if value == GPU_IS_LOST:
                raise _Lost from None
            device.gpm_why_none = gpm_refusal(exc)
            return
        if not supported:
            return
        if device.mig is None:
            device.gpm = _Gpm(nvml, lambda sample: nvml.nvmlGpmSampleGet(device.handle, sample))
            return
        device.gpm_why_none = GPM_MIG_PARENT
        instances: dict[int, _Gpm] = {}
        for mig in device.mig:
            gi = mig.gpu_instance_id
            if gi is None:
                mig.gpm_why_none = "not measurable: its GPU instance ID is unknown"
                continue
            if gi not in instances:
                instances[gi] = _Gpm(nvml, _mig_sampler(nvml, device.handle, gi))
            mig.gpm = instances[gi]

    def _activity(self, device: _Device) -> Activity:
        """The GPU's (or MIG device's) activity since the last read, or why there is none."""
        return device.gpm.activity() if device.gpm is not None else no_activity(device.gpm_why_none)

    def _open_mig_devices(self, nvml: ModuleType, parent: _Device) -> list[_Mig]:
        """The MIG devices of a GPU in MIG mode, with their static facts (name, UUID, instance IDs)."""
        count = self._query(parent, "mig_count", lambda: nvml.nvmlDeviceGetMaxMigDeviceCount(parent.handle))
        found: list[_Mig] = []
        for index in range(int(count or 0)):
            try:
                handle = nvml.nvmlDeviceGetMigDeviceHandleByIndex(parent.handle, index)
            except Exception as exc:
                if getattr(exc, "value", None) == GPU_IS_LOST:
                    raise _Lost from None
                continue  # no MIG device at that index (NotFound)
            mig = _Mig(parent.index, handle, f"{parent.name} MIG", mig_index=index)
            found.append(self._open_mig(nvml, mig))
        return found

    def _open_mig(self, nvml: ModuleType, mig: _Mig) -> _Mig:
        """Read one MIG device's static facts."""
        handle = mig.handle
        mig.name = _text(self._query(mig, "name", lambda: nvml.nvmlDeviceGetName(handle)) or mig.name)
        uuid = self._query(mig, "uuid", lambda: nvml.nvmlDeviceGetUUID(handle))
        mig.uuid = _text(uuid) if uuid is not None else None
        mig.gpu_instance_id = self._query(mig, "gi", lambda: nvml.nvmlDeviceGetGpuInstanceId(handle))
        mig.compute_instance_id = self._query(mig, "ci", lambda: nvml.nvmlDeviceGetComputeInstanceId(handle))
        return mig

    def _read_mig(self, mig: _Mig) -> tuple[MigDevice, list[GpuProcess]]:
        """One MIG device's memory and processes (utilisation is not reported in MIG mode)."""
        nvml = self._nvml
        assert nvml is not None
        transient: dict[str, str] = {}
        memory = None
        processes: list[GpuProcess] = []
        activity = None
        if not mig.lost:
            try:
                read = nvml.nvmlDeviceGetMemoryInfo
                memory = self._query(mig, "memory", lambda: read(mig.handle), transient)
                processes = [replace(p, mig_index=mig.mig_index, sm_percent=None)
                             for p in self._processes(mig, transient, utilization=False)]  # fmt: skip
                activity = self._activity(mig)
            except _Lost:
                mig.lost = True
        sample = MigDevice(
            mig.index, mig.mig_index, mig.name, mig_profile(mig.name), mig.uuid, mig.gpu_instance_id,
            mig.compute_instance_id, memory.used / MIB if memory is not None else None,
            memory.total / MIB if memory is not None else None, mig.lost,
            {"utilization": MIG_UTILIZATION, **mig.unsupported, **transient}, activity,
        )  # fmt: skip
        return sample, processes

    def _shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self._module().nvmlShutdown()

    # -- queries --------------------------------------------------------------------------------------------
    def _query(
        self, device: _Device, name: str, call: Callable[[], Any], transient: dict | None = None
    ) -> Any:
        """Run one NVML query; None (and why) when it fails. Raises _Lost on GpuIsLost."""
        if name in device.unsupported:
            return None
        try:
            return call()
        except Exception as exc:
            value = getattr(exc, "value", None)
            if value == GPU_IS_LOST:
                raise _Lost from None
            if value in PERMANENT_REASONS:
                device.unsupported[name] = PERMANENT_REASONS[value]
            elif transient is not None:
                transient[name] = str(exc) or type(exc).__name__
            return None

    def driver_info(self) -> DriverInfo | None:
        """The driver NVML reported at start-up, also where it lists no GPU (`read` then gives the error);
        None where NVML did not start."""
        return self._driver

    def device_info(self) -> list[DeviceInfo]:
        """Static facts of every GPU that answered at start-up."""
        return [d.info for d in self._devices if d.info is not None]

    def past_samples(self, seconds: float, step: float) -> tuple[PastSample, ...]:
        """A real source has no recorded past."""
        return ()

    def read(self) -> GpuReading:
        """One reading of every GPU and its processes; an error instead when NVML is unavailable."""
        self._ensure_started()
        if not self._started:
            return GpuReading(self._error, None)
        devices: list[DeviceSample] = []
        processes: list[GpuProcess] = []
        for device in self._devices:
            sample, device_processes = self._read_device(device)
            devices.append(sample)
            processes.extend(device_processes)
        return GpuReading(None, self._driver, devices, processes)

    def _empty_sample(self, device: _Device) -> DeviceSample:
        """A sample with no readings: the GPU is lost, or it gave no handle at start-up."""
        limit = device.info.power_limit_w if device.info else None
        total = device.info.memory_total_mib if device.info else None
        reason = (
            "GPU is lost (fell off the bus)" if device.lost else device.unsupported.get("all", "no handle")
        )
        return DeviceSample(
            device.index, device.name, None, None, total, None, None, limit, None, None, None,
            lost=device.lost, unavailable={"all": reason},
        )  # fmt: skip

    def _read_device(self, device: _Device) -> tuple[DeviceSample, list[GpuProcess]]:
        if device.lost or device.handle is None:
            return self._empty_sample(device), []
        nvml = self._nvml
        assert nvml is not None
        handle = device.handle
        transient: dict[str, str] = {}

        def query(name: str, call: Callable[[], Any]) -> Any:
            return self._query(device, name, call, transient)

        try:
            memory = query("memory", lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
            util = query("utilization", lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
            temperature = query("temperature", lambda: nvml.nvmlDeviceGetTemperature(handle, 0))
            power = query("power", lambda: nvml.nvmlDeviceGetPowerUsage(handle))
            fan = query("fan", lambda: nvml.nvmlDeviceGetFanSpeed(handle))
            clock = query("sm_clock", lambda: nvml.nvmlDeviceGetClockInfo(handle, 1))  # NVML_CLOCK_SM
            pstate = query("performance_state", lambda: nvml.nvmlDeviceGetPerformanceState(handle))
            # in MIG mode the work and the memory are the MIG devices': the parent's own process list (with
            # privileges) repeats theirs, and without privileges it is refused
            processes = self._processes(device, transient) if device.mig is None else []
            migs = [self._read_mig(mig) for mig in device.mig or []]
            extra = self._extended_readings(device, query) if self._extended else {}
            events = query("clock_events", lambda: self._clock_events(handle))
            link_gen = query("pcie_gen", lambda: nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle))
            link_width = query("pcie_width", lambda: nvml.nvmlDeviceGetCurrPcieLinkWidth(handle))
            activity = self._activity(device)
        except _Lost:
            device.lost = True
            return self._empty_sample(device), []
        info = device.info
        sample = DeviceSample(
            index=device.index,
            name=device.name,
            utilization_percent=float(util.gpu) if util is not None else None,
            memory_used_mib=memory.used / MIB if memory is not None else None,
            memory_total_mib=memory.total / MIB
            if memory is not None
            else (info.memory_total_mib if info else None),
            temperature_c=float(temperature) if temperature is not None else None,
            power_w=power / 1000 if power is not None else None,
            power_limit_w=info.power_limit_w if info else None,
            fan_percent=float(fan) if fan is not None else None,
            sm_clock_mhz=float(clock) if clock is not None else None,
            performance_state=int(pstate) if pstate is not None else None,
            unavailable={**device.unsupported, **transient},
            memory_util_percent=float(util.memory) if util is not None else None,
            memory_free_mib=memory.free / MIB if memory is not None else None,
            minor_number=info.minor_number if info else None,
            activity=activity,
            clock_events=int(events) if events is not None else None,
            pcie_gen=int(link_gen) if link_gen is not None else None,
            pcie_width=int(link_width) if link_width is not None else None,
            pcie_max_gen=device.pcie_max[0],
            pcie_max_width=device.pcie_max[1],
            compute_capability=info.compute_capability if info else None,
            **extra,
        )
        if device.mig is not None:
            sample = replace(
                sample,
                mig_mode=True,
                mig_devices=tuple(mig for mig, _ in migs),
                unavailable=mig_parent_reasons(sample.unavailable),
            )
            processes = [p for _, mig_processes in migs for p in mig_processes]
        return sample, processes

    def _clock_events(self, handle: Any) -> int:
        """The clock event reasons now active (nvidia-ml-py before 12.535 names them throttle reasons)."""
        nvml = self._nvml
        read = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if read is None:
            read = getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons")  # noqa: B009 (mypy: Optional)
        return int(read(handle))

    def _extended_readings(self, device: _Device, query: Callable[[str, Callable[[], Any]], Any]) -> dict:
        """Memory clock, total energy and PCIe throughput (four more calls per GPU) as DeviceSample fields."""
        nvml = self._nvml
        assert nvml is not None
        handle = device.handle
        mem_clock = query("mem_clock", lambda: nvml.nvmlDeviceGetClockInfo(handle, 2))  # NVML_CLOCK_MEM
        energy = query("energy", lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
        tx = query("pcie_tx", lambda: nvml.nvmlDeviceGetPcieThroughput(handle, 0))  # NVML_PCIE_UTIL_TX_BYTES
        rx = query("pcie_rx", lambda: nvml.nvmlDeviceGetPcieThroughput(handle, 1))
        return {
            "mem_clock_mhz": float(mem_clock) if mem_clock is not None else None,
            "energy_mj": float(energy) if energy is not None else None,
            "pcie_tx_kbs": float(tx) if tx is not None else None,
            "pcie_rx_kbs": float(rx) if rx is not None else None,
        }

    def _list_processes(self, device: _Device, kind: str, transient: dict[str, str]) -> list[Any]:
        """One process list, falling back to an older struct version on FunctionNotFound."""
        functions = self._process_fns.get(kind, [])
        while functions:
            try:
                return list(functions[0](device.handle))
            except Exception as exc:
                value = getattr(exc, "value", None)
                if value == GPU_IS_LOST:
                    raise _Lost from None
                if value == FUNCTION_NOT_FOUND and len(functions) > 1:
                    functions.pop(0)
                    continue
                if value in PERMANENT_REASONS:
                    device.unsupported[f"{kind}_processes"] = PERMANENT_REASONS[value]
                    self._process_fns[kind] = []
                else:
                    transient[f"{kind}_processes"] = str(exc)
                return []
        return []

    def _processes(
        self, device: _Device, transient: dict[str, str], utilization: bool = True
    ) -> list[GpuProcess]:
        """Compute and graphics processes of one GPU (or MIG device), one entry per PID, with their SM %
        (`utilization` False: not asked, as in MIG mode)."""
        memory: dict[int, float | None] = {}
        for kind in ("compute", "graphics"):
            if f"{kind}_processes" in device.unsupported:
                continue
            for entry in self._list_processes(device, kind, transient):
                used = entry.usedGpuMemory
                mib = used / MIB if used is not None else None
                if entry.pid not in memory or (mib is not None and mib > (memory[entry.pid] or 0)):
                    memory[entry.pid] = mib
        if not memory:
            return []
        sm = self._process_utilization(device, set(memory), transient) if utilization else None
        return [GpuProcess(pid, device.index, mib, sm.get(pid, 0.0) if sm is not None else None)
                for pid, mib in memory.items()]  # fmt: skip

    def _process_utilization(
        self, device: _Device, pids: set[int], transient: dict[str, str]
    ) -> dict[int, float] | None:
        """SM % per PID since the last query; None when the GPU cannot tell.

        nvtop's filter: keep a sample only for a listed PID, with values <= 100 and a timestamp newer than
        the newest seen before; everything else counts as 0 %.
        """
        name = "process_utilization"
        if name in device.unsupported:
            return None
        nvml = self._nvml
        assert nvml is not None
        try:
            samples = nvml.nvmlDeviceGetProcessUtilization(device.handle, device.last_seen_us)
        except Exception as exc:
            value = getattr(exc, "value", None)
            if value == GPU_IS_LOST:
                raise _Lost from None
            if value == NOT_FOUND:  # nothing ran since the last query: an idle GPU
                return {}
            if value in PERMANENT_REASONS:
                device.unsupported[name] = PERMANENT_REASONS[value]
                return None
            transient[name] = str(exc)
            return {}
        result: dict[int, float] = {}
        newest = device.last_seen_us
        for s in samples:
            if s.pid not in pids or s.smUtil > 100 or s.timeStamp <= device.last_seen_us:
                continue
            result[s.pid] = max(result.get(s.pid, 0.0), float(s.smUtil))
            newest = max(newest, s.timeStamp)
        device.last_seen_us = newest
        return result

    def close(self) -> None:
        """Free the GPM samples and shut NVML down."""
        for device in self._devices:
            for gpm in {id(d.gpm): d.gpm for d in [device, *(device.mig or [])] if d.gpm}.values():
                gpm.close()
        if self._started:
            self._shutdown()
            self._started = False
