"""Plain dataclasses for GPU and process state: what every source produces and every face reads.

Fallible fields are ``None`` plus a reason (in ``unavailable``), never sentinel numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tfgpu_tui.alerts import Alert


@dataclass(frozen=True)
class NvmlUnavailable:
    """Why there is nothing to monitor, and what to do about it."""

    kind: str  # library_not_found | driver_not_loaded | version_mismatch | no_permission | unknown
    message: str
    fix: str


@dataclass(frozen=True)
class DriverInfo:
    """Facts about the driver, read once at start."""

    driver_version: str | None
    cuda_driver_version: str | None  # newest CUDA the driver supports, e.g. "12.4"
    nvml_version: str | None


@dataclass(frozen=True)
class DeviceInfo:
    """Static facts about one GPU, read once and cached."""

    index: int
    name: str
    uuid: str | None
    memory_total_mib: float | None
    power_limit_w: float | None
    compute_capability: tuple[int, int] | None
    persistence_mode: bool | None
    pci_bus_id: str | None = None  # e.g. 00000000:01:00.0
    minor_number: int | None = None  # N of /dev/nvidiaN (nvmlDeviceGetMinorNumber): never assumed = index


MEASURING = "measuring"  # how Activity.why_none starts while GPM has one sample only


@dataclass(frozen=True)
class Activity:
    """What the GPU (or a MIG GPU instance) really did between two GPM samples (NVML's GPU Performance
    Monitoring, Hopper or newer): percentages 0-100 of the SMs busy, of the warps resident, of time in
    tensor, FP32 and FP16 pipes, of DRAM bandwidth, and PCIe MiB/s. A metric the GPU cannot measure is None,
    with why in `unavailable`; with `basis` "none" nothing was measured and `why_none` says why. Never
    derived from utilisation."""

    basis: str  # "gpm" | "none"
    why_none: str = ""
    sm_active: float | None = None
    sm_occupancy: float | None = None
    tensor_active: float | None = None
    hmma_active: float | None = None
    dram_active: float | None = None
    fp32_active: float | None = None
    fp16_active: float | None = None
    pcie_tx_mib_s: float | None = None
    pcie_rx_mib_s: float | None = None
    window_seconds: float | None = None  # between the two samples
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def measuring(self) -> bool:
        """GPM is there but has only its first sample: the numbers come with the next reading."""
        return self.basis == "none" and self.why_none.startswith(MEASURING)


def no_activity(why: str) -> Activity:
    """Activity that was not measured, and why."""
    return Activity("none", why)


def used_percent(used: float | None, total: float | None) -> float | None:
    """`used` as a percentage of `total`, when both are known."""
    if used is None or not total:
        return None
    return 100.0 * used / total


@dataclass(frozen=True)
class MigDevice:
    """One MIG device (a compute instance of a GPU instance) of a GPU in MIG mode: a GPU of its own to CUDA
    (`CUDA_VISIBLE_DEVICES=MIG-…`), with its own memory and processes; utilisation is not reported in MIG
    mode. Its memory belongs to its GPU instance (the CIs of one GI share it)."""

    gpu_index: int  # the parent GPU
    mig_index: int  # its index among the parent's MIG devices
    name: str  # e.g. NVIDIA A100-SXM4-80GB MIG 1g.10gb
    profile: str | None  # e.g. 1g.10gb
    uuid: str | None  # MIG-…, what CUDA_VISIBLE_DEVICES takes
    gpu_instance_id: int | None
    compute_instance_id: int | None
    memory_used_mib: float | None
    memory_total_mib: float | None
    lost: bool = False
    unavailable: dict[str, str] = field(default_factory=dict)
    activity: Activity | None = None  # its GPU instance's (shared by the instance's compute instances)

    @property
    def label(self) -> str:
        """How the faces name it: `0:2` is MIG device 2 of GPU 0."""
        return f"{self.gpu_index}:{self.mig_index}"

    @property
    def memory_percent(self) -> float | None:
        return used_percent(self.memory_used_mib, self.memory_total_mib)


@dataclass(frozen=True)
class DeviceSample:
    """One sample of one GPU's live readings. ``None`` means not available; ``unavailable`` says why."""

    index: int
    name: str
    utilization_percent: float | None
    memory_used_mib: float | None
    memory_total_mib: float | None
    temperature_c: float | None
    power_w: float | None
    power_limit_w: float | None
    fan_percent: float | None
    sm_clock_mhz: float | None
    performance_state: int | None
    lost: bool = False
    unavailable: dict[str, str] = field(default_factory=dict)
    # seconds this GPU has read 0 % while a TensorFlow process holds its memory (added by the Sampler)
    zero_util_seconds: float | None = None
    # read where the source has them (NVML); the last four only by an extended source (the exporter's)
    memory_util_percent: float | None = None  # memory controller busy %
    memory_free_mib: float | None = None
    mem_clock_mhz: float | None = None
    energy_mj: float | None = None  # total since the driver loaded
    pcie_tx_kbs: float | None = None  # KB/s over NVML's 20 ms window
    pcie_rx_kbs: float | None = None
    minor_number: int | None = None  # N of /dev/nvidiaN: joins the GPU to the device files processes hold
    mig_mode: bool = False  # in MIG mode: the work runs on `mig_devices`, utilisation is not reported
    mig_devices: tuple[MigDevice, ...] = ()
    # how well it is used (gpu/efficiency.py): read by NVML where the GPU answers, None where not read
    activity: Activity | None = None
    clock_events: int | None = None  # nvmlClocksEventReason bits now active (gpu/clock_events.py names them)
    # share of the busy readings over the efficiency window with a power, thermal or slowdown reason (added by
    # the Sampler; None until the GPU was busy)
    throttled_percent: float | None = None
    pcie_gen: int | None = None  # the link now (an idle link trains down to save power)
    pcie_width: int | None = None
    pcie_max_gen: int | None = None  # what the card and slot can do
    pcie_max_width: int | None = None
    compute_capability: tuple[int, int] | None = None

    @property
    def memory_percent(self) -> float | None:
        """Used memory as a percentage of total, when both are known."""
        return used_percent(self.memory_used_mib, self.memory_total_mib)


class HostState(Enum):
    """Whether a GPU process could be looked up on this host."""

    OK = "ok"
    NO_SUCH_PROCESS = "no such process"
    NO_PERMISSION = "no permission"
    ZOMBIE = "zombie"
    OTHER_NAMESPACE = "another container's or the host's process (not visible from this PID namespace)"


class Attribution(str, Enum):
    """Why a process row names the local process it names: the basis of joining an NVML entry to a process of
    this PID namespace (a str, so that it reads as its value)."""

    NVML = "nvml"  # NVML's PID is a local process that holds this GPU's device file
    DEVICE_FILE = "device-file"  # the GPU's only unmatched entry and its only unmatched local holder: certain
    START_ORDER = "start-order"  # several on both sides, paired by host-PID order and start time: a guess
    OTHER_NAMESPACE = "other-namespace"  # no local holder can be it: another container's or the host's
    UNRESOLVED = "unresolved"  # more entries than local holders: some are ours, which ones is not known

    @property
    def local(self) -> bool:
        """Whether the row is a process of this PID namespace (the only kind that may be signalled)."""
        return self in (Attribution.NVML, Attribution.DEVICE_FILE, Attribution.START_ORDER)

    @property
    def guess(self) -> bool:
        """Whether the join is a heuristic, labelled "probably" wherever it shows."""
        return self is Attribution.START_ORDER


@dataclass(frozen=True)
class JupyterKernel:
    """A Jupyter kernel recognised from its command line, and its notebook when the server told us."""

    kernel_id: str
    notebook_path: str | None = None
    why_unknown: str = ""
    execution_state: str | None = None
    last_activity: str | None = None
    # the server that lists it, asked with the token from its runtime file (no token in it): its kernel API
    # can shut the kernel down or restart it (gpu/kernel_actions.py); None when there is none to ask
    server_url: str | None = None

    @property
    def actions(self) -> tuple[str, ...]:
        """What the kernel's server can do to it through its API: `shutdown` and `restart`, or nothing."""
        return ("shutdown", "restart") if self.server_url else ()


@dataclass(frozen=True)
class ProcessIdentity:
    """What makes a process the same one: its PID and its start time (guards against PID reuse)."""

    pid: int
    create_time: float | None


@dataclass(frozen=True)
class ProcessRow:
    """One process holding a GPU context (or a TensorFlow process on the CPU), with host details."""

    pid: int
    gpu_index: int | None  # None: a TensorFlow process that holds no GPU memory
    gpu_memory_mib: float | None
    sm_percent: float | None
    host_state: HostState
    user: str | None = None
    uid: int | None = None
    command: str | None = None
    cpu_percent: float | None = None
    host_memory_mib: float | None = None
    running_seconds: float | None = None
    create_time: float | None = None
    tensorflow_loaded: bool | None = None
    jupyter: JupyterKernel | None = None
    parent_pid: int | None = None  # added by the GPU core: a zombie's parent is the one to end
    own_child: bool = False  # a tfgpu-tui child (environment or batch probe): never alerted on
    gpus_hidden: bool = False  # its CUDA_VISIBLE_DEVICES hides every GPU: on the CPU on purpose
    idle_seconds: float | None = None  # how long it has held GPU memory at 0 % SM (added by the Sampler)
    mig_index: int | None = None  # the MIG device of GPU gpu_index it runs on (MigDevice.mig_index)
    # Inside a container (a PID namespace of its own) NVML's PIDs may not be ours (gpu/attribution.py):
    # None on the host, where NVML's PID is the local one
    attribution: Attribution | None = None
    host_pid: int | None = None  # NVML's PID where it is not the local `pid` (the only one, for another's)
    memory_note: str | None = None  # why gpu_memory_mib is None, or that it is an estimate
    memory_estimated: bool = False  # gpu_memory_mib is the whole GPU's use ("≈"), not reported per process

    @property
    def identity(self) -> ProcessIdentity:
        return ProcessIdentity(self.pid, self.create_time)

    @property
    def device_label(self) -> str:
        """Where it runs: `0`, `0:2` (MIG device 2 of GPU 0), or `CPU`."""
        if self.gpu_index is None:
            return "CPU"
        return str(self.gpu_index) if self.mig_index is None else f"{self.gpu_index}:{self.mig_index}"

    @property
    def device_key(self) -> tuple[int, int | None] | None:
        """The device whose memory it holds: (GPU, MIG device or None); None on the CPU."""
        return None if self.gpu_index is None else (self.gpu_index, self.mig_index)

    @property
    def local(self) -> bool:
        """Whether `pid` is a process of this PID namespace (not another namespace's NVML PID)."""
        return self.attribution is None or self.attribution.local

    @property
    def local_pid(self) -> int | None:
        """The PID of this process here, or None for another namespace's entry."""
        return self.pid if self.local else None

    @property
    def basis(self) -> str | None:
        """The attribution as the faces print it: "nvml" where NVML's PID is the process's own (the host),
        None for a TensorFlow process on the CPU."""
        if self.attribution is not None:
            return self.attribution.value
        return Attribution.NVML.value if self.gpu_index is not None else None

    @property
    def nvml_pid(self) -> int:
        """The PID NVML lists for this entry."""
        return self.pid if self.host_pid is None else self.host_pid


@dataclass(frozen=True)
class HostStats:
    """The host's own CPU and memory, shown even when there is no GPU."""

    cpu_percent: float
    cpu_count: int
    memory_used_mib: float
    memory_total_mib: float
    load_average: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class Diagnosis:
    """Why a GPU (or a job on it) is not used better, in plain words: `kind` (gpu/efficiency.py's KINDS), the
    GPU (and MIG device) and process it is about, a one-line `summary` with its number, the `basis` (which
    metrics over which window) and the `fix`."""

    kind: str
    gpu_index: int
    pid: int | None
    summary: str
    basis: str
    fix: str
    mig_index: int | None = None
    value: float | None = None  # the number it rests on (a percentage), for the exporter

    @property
    def subject(self) -> str:
        """What it is about as alerts name it: `PID 4242`, `GPU 0` or `GPU 0:2`."""
        if self.pid is not None:
            return f"PID {self.pid}"
        return f"GPU {self.gpu_index}" + ("" if self.mig_index is None else f":{self.mig_index}")


@dataclass(frozen=True)
class Snapshot:
    """Everything one refresh knows; the monitor tab, the header, alerts and `gpus --json` read it."""

    timestamp: float
    simulated: bool
    error: NvmlUnavailable | None
    driver: DriverInfo | None
    devices: list[DeviceSample]
    processes: list[ProcessRow]
    host: HostStats | None
    alerts: list[Alert]
    sample_ms: float = 0.0
    processes_pending: bool = False  # the GPUs alone were read (ui/startup.py): processes follow
    diagnoses: list[Diagnosis] = field(default_factory=list)  # how well the GPUs are used (gpu/efficiency.py)
