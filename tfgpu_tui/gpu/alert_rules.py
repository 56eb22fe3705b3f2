"""Alert rules over successive snapshots: silent CPU fallback, stale VRAM holders, memory nearly full,
GPUs that fell off the bus, and the live diagnoses: input-pipeline starvation and TensorFlow's whole-card
pre-allocation on a shared GPU. Each alert says what is wrong and what to do.

The rules keep a little state (since when a GPU has been idle, since when a process has held memory at 0 %
SM, running means per TensorFlow process), so windows longer than the history plots cost next to nothing.
What needs action (see ``tfgpu_tui.alerts.ACTION_KINDS``) comes first, worst offender first; advice after.
tfgpu-tui's own children (``ProcessRow.own_child``) never raise an alert.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

from tfgpu_tui.alerts import Alert, Severity, ordered
from tfgpu_tui.durations import minutes_text
from tfgpu_tui.gpu.history import RollingMeans
from tfgpu_tui.gpu.model import Attribution, DeviceSample, HostState, MigDevice, ProcessRow, used_percent
from tfgpu_tui.settings import Settings
from tfgpu_tui.sizes import size_text

FALLBACK_PROCESS_FIX = (
    'In that environment run `python -c "import tensorflow as tf; '
    "print(tf.config.list_physical_devices('GPU'))\"`; an empty list means a CPU-only TensorFlow or missing "
    "CUDA libraries (the Environment tab's “GPUs visible to TensorFlow” finding, or `tfgpu-tui check`, says "
    "which); also check CUDA_VISIBLE_DEVICES"
)
FALLBACK_IDLE_FIX = (
    "Log device placement (`tf.debugging.set_log_device_placement(True)`); if the ops are on the GPU, speed "
    "up the input pipeline (`dataset.prefetch(tf.data.AUTOTUNE)`, `num_parallel_calls`)"
)
UNATTRIBUTED_MIN_MIB = 2048.0
UNATTRIBUTED_IN_CONTAINER_FIX = (
    "Inside this container the driver lists only this container's processes: the rest is another "
    "container's or the host's. If you rent this GPU whole, ask the provider to free it (or restart the "
    "instance); on a shared server, the host's administrator can find it with `sudo fuser -v /dev/nvidia*`"
)
UNATTRIBUTED_FIX = (
    "Processes in other containers or PID namespaces, or ones this user may not list, can hold it: on the "
    "host run `sudo fuser -v /dev/nvidia*` (or `sudo lsof /dev/nvidia*`)"
)
STARVATION_FIX = (
    "Prepare batches in parallel and ahead of the GPU: `ds = ds.map(parse, "
    "num_parallel_calls=tf.data.AUTOTUNE).cache().batch(256).prefetch(tf.data.AUTOTUNE)` (cache() after "
    "the costly map when the data fits in memory; prefetch last); for a Keras PyDataset pass workers=8, "
    "use_multiprocessing=True"
)
MEMORY_GROWTH_FIX = (
    "Let it take memory as needed: before any TensorFlow op run `for gpu in "
    "tf.config.list_physical_devices('GPU'): tf.config.experimental.set_memory_growth(gpu, True)`, or start "
    "it with `TF_FORCE_GPU_ALLOW_GROWTH=true python train.py`; to cap it instead use "
    "`tf.config.set_logical_device_configuration(gpu, "
    "[tf.config.LogicalDeviceConfiguration(memory_limit=8192)])`"
)
# Where the Environment tab explains a CPU fallback: whether TensorFlow sees a GPU at all (that finding
# defers to "cpu_only_build" for a CPU-only wheel), and whether an op placed on GPU:0 really runs there.
# On a full shared GPU, a TensorFlow process holding at least this share most likely took "all that was left".
FULL_GPU_MAJORITY_PERCENT = 50.0
NO_GPU_FINDING = "environment:gpus_visible"
PLACEMENT_FINDING = "environment:placement"
ProcessKey = tuple[int, "float | None", "int | None"]
# A TensorFlow process without GPU memory is flagged once it has stayed so this long (at most
# fallback_seconds): a training job imports TensorFlow a moment before it creates its GPU context.
CPU_FALLBACK_GRACE_SECONDS = 2.0
CPU_FALLBACK_SETTLED_SECONDS = 10.0  # a process this old that has TensorFlow but no GPU memory: no grace
KILL_HINT = "select its row in the Monitor and press k"
IDLE_KERNEL_STATES = ("idle", "starting", "dead")
MEMORY_FULL_FIX = (
    "New work will fail with OOM: end idle holders (stale kernels), lower the batch size, or let TensorFlow "
    "grow memory on demand (`tf.config.experimental.set_memory_growth(gpu, True)`)"
)


def _describe(row: ProcessRow) -> str:
    pid = f"PID {row.pid}" + (f", NVML's {row.host_pid}" if row.local and row.host_pid is not None else "")
    if row.jupyter is not None:
        return f"Jupyter kernel {row.jupyter.notebook_path or row.jupyter.kernel_id} ({pid})"
    command = (row.command or "").split(" ")
    return f"{pid} ({' '.join(command[:3])})" if row.command else pid


def _key(row: ProcessRow) -> ProcessKey:
    """A process on one GPU, robust to PID reuse."""
    return (row.pid, row.create_time, row.gpu_index)


def _forget_gone(state: dict, live: set) -> None:
    """Drop the remembered state of processes that no longer meet a rule's preconditions."""
    for key in [k for k in state if k not in live]:
        del state[key]


def _iso_seconds(text: str | None) -> float | None:
    """Seconds since the epoch from an ISO 8601 time as Jupyter writes it; None when unparsable."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class AlertRules:
    """Evaluates the rules for one snapshot at a time, remembering how long conditions have held."""

    def __init__(self, settings: Settings, own_uid: int | None = None) -> None:
        self.settings = settings
        self.own_uid = os.geteuid() if own_uid is None and hasattr(os, "geteuid") else own_uid
        self._gpu_idle_since: dict[int, float] = {}
        self._process_idle_since: dict[ProcessKey, float] = {}
        self._cpu_since: dict[ProcessKey, float] = {}
        self._starvation_means: dict[ProcessKey, RollingMeans] = {}
        self.zero_util_seconds: dict[int, float] = {}  # GPU -> seconds at 0 % while TensorFlow holds memory
        self.idle_seconds: dict[ProcessKey, float] = {}  # process -> seconds holding memory at 0 % SM
        self.own_pid_namespace = False  # inside a container: NVML's lists omit other namespaces' processes

    def evaluate(self, now: float, devices: list[DeviceSample], processes: list[ProcessRow]) -> list[Alert]:
        """The alerts that hold now: what needs action first (worst first), then advice."""
        watched = [row for row in processes if not row.own_child]
        alerts = self._lost(devices)
        alerts += self._cpu_fallback(now, devices, watched)
        alerts += self._stale(now, devices, watched)
        alerts += self._memory_full(devices)
        alerts += self._starvation(now, devices, watched)
        alerts += self._memory_growth(devices, watched)
        alerts += self._unattributed(devices, processes)
        return ordered(alerts)

    def idle_for(self, row: ProcessRow) -> float | None:
        """Seconds the process has held GPU memory at 0 % SM (as of the last evaluation), or None."""
        return self.idle_seconds.get(_key(row))

    def _lost(self, devices: list[DeviceSample]) -> list[Alert]:
        return [
            Alert(
                "gpu_lost",
                Severity.CRITICAL,
                f"GPU {d.index} ({d.name}) has fallen off the bus (NVML: GPU is lost)",
                "Check `dmesg` for an Xid 79 error; the machine usually needs a reboot (ask your provider)",
                f"GPU {d.index}",
            )
            for d in devices
            if d.lost
        ]

    def _cpu_fallback(
        self, now: float, devices: list[DeviceSample], processes: list[ProcessRow]
    ) -> list[Alert]:
        alerts = self._cpu_processes(now, devices, processes)
        holders: dict[int, ProcessRow] = {}  # GPU -> its biggest TensorFlow holder
        for row in processes:
            if row.tensorflow_loaded and row.gpu_index is not None and (row.gpu_memory_mib or 0) > 0:
                best = holders.get(row.gpu_index)
                if best is None or (row.gpu_memory_mib or 0) > (best.gpu_memory_mib or 0):
                    holders[row.gpu_index] = row
        self.zero_util_seconds = {}
        for device in devices:
            holder = holders.get(device.index)
            if device.lost or device.utilization_percent != 0 or holder is None:
                self._gpu_idle_since.pop(device.index, None)
                continue
            since = self._gpu_idle_since.setdefault(device.index, now)
            self.zero_util_seconds[device.index] = now - since
            if now - since >= self.settings.fallback_seconds:
                alerts.append(
                    Alert(
                        "cpu_fallback",
                        Severity.WARNING,
                        f"GPU {device.index} at 0 % over {minutes_text(now - since)} while "
                        f"{_describe(holder)} holds {size_text(holder.gpu_memory_mib or 0)} of it: the work "
                        "is running on the CPU or starved for input",
                        FALLBACK_IDLE_FIX,
                        f"GPU {device.index}",
                        PLACEMENT_FINDING,
                    )
                )
        return alerts

    def _cpu_processes(
        self, now: float, devices: list[DeviceSample], processes: list[ProcessRow]
    ) -> list[Alert]:
        """TensorFlow processes holding no GPU memory while a GPU is there; other users' and those that
        hide the GPUs on purpose (CUDA_VISIBLE_DEVICES) at info level."""
        live: set[ProcessKey] = set()
        alerts: list[Alert] = []
        if not any(not d.lost for d in devices):
            self._cpu_since.clear()
            return alerts
        grace = min(CPU_FALLBACK_GRACE_SECONDS, self.settings.fallback_seconds)
        for row in processes:
            if row.gpu_index is not None or not row.tensorflow_loaded:
                continue
            key = _key(row)
            live.add(key)
            settled = (row.running_seconds or 0.0) >= CPU_FALLBACK_SETTLED_SECONDS
            if now - self._cpu_since.setdefault(key, now - grace if settled else now) < grace:
                continue
            others = row.uid is not None and self.own_uid is not None and row.uid != self.own_uid
            if row.gpus_hidden:
                severity, why = Severity.INFO, "its CUDA_VISIBLE_DEVICES hides the GPUs, so on purpose"
            elif others:
                severity, why = Severity.INFO, f"another user's job ({row.user or row.uid})"
            else:
                severity, why = Severity.WARNING, "it is running on the CPU"
            alerts.append(
                Alert(
                    "cpu_fallback",
                    severity,
                    f"{_describe(row)} has TensorFlow loaded but holds no GPU memory: {why}",
                    FALLBACK_PROCESS_FIX,
                    f"PID {row.pid}",
                    NO_GPU_FINDING,
                )
            )
        _forget_gone(self._cpu_since, live)
        return alerts

    def _stale(self, now: float, devices: list[DeviceSample], processes: list[ProcessRow]) -> list[Alert]:
        """Processes holding GPU memory at 0 % SM for longer than stale_minutes: from the Jupyter server's
        last activity when it says the kernel is idle (so on the first sample), else since we began watching.
        """
        limit = self.settings.stale_minutes * 60
        gpu_busy = {d.index: d.utilization_percent for d in devices}
        memory_percent = {d.index: d.memory_percent for d in devices}
        live: set[ProcessKey] = set()
        found: list[tuple[float, float, Alert]] = []
        self.idle_seconds = {}
        for row in processes:
            key = _key(row)
            # the server's last activity counts unless it says the kernel is busy ("starting" for long: no
            # client ever connected, so nothing can be running in it)
            kernel_idle = row.jupyter is not None and row.jupyter.execution_state in IDLE_KERNEL_STATES
            # without per-process SM % (older GPUs), an idle GPU or an idle kernel is the best evidence
            if row.gpu_index is None or not row.gpu_memory_mib:
                continue
            busy = row.sm_percent if row.sm_percent is not None else gpu_busy.get(row.gpu_index)
            if row.sm_percent is None and kernel_idle:
                busy = 0
            if busy != 0:
                continue
            live.add(key)
            since = self._process_idle_since.setdefault(key, now)
            if kernel_idle and row.jupyter is not None:
                activity = _iso_seconds(row.jupyter.last_activity)
                if activity is not None:
                    since = min(since, activity)
            idle = max(0.0, now - since)
            self.idle_seconds[key] = idle
            if idle < limit:
                continue
            starved = (memory_percent.get(row.gpu_index) or 0.0) >= self.settings.memory_full_percent
            found.append((-row.gpu_memory_mib, -idle, self._stale_alert(row, idle, starved)))
        _forget_gone(self._process_idle_since, live)
        return [alert for _, _, alert in sorted(found, key=lambda item: item[:2])]

    def _stale_alert(self, row: ProcessRow, idle: float, starved: bool) -> Alert:
        """The stale-holder alert: what holds how much, since when, and the fix that applies to it (another
        namespace's entry is not the user's to end: advice, unless this container is short of memory)."""
        held = f"{'≈ ' if row.memory_estimated else ''}{size_text(row.gpu_memory_mib or 0)}"
        severity = Severity.WARNING
        if not row.local:
            message = (
                f"NVML's PID {row.nvml_pid}, another container's or the host's process, has held {held} on "
                f"GPU {row.gpu_index} at 0 % SM, idle for {minutes_text(idle)}"
            )
            fix = (
                "It is not yours and cannot be ended from here: if you rent this GPU whole, ask the provider "
                "to free it (or restart the instance); on a server you share, its owner or the host's "
                "administrator can end it (`sudo fuser -v /dev/nvidia*` on the host names it)"
            )
            if row.attribution is Attribution.UNRESOLVED:
                message = message.replace("another container's or the host's process", "possibly yours")
            if not starved:
                severity = Severity.INFO
            return Alert("stale_vram", severity, message, fix, f"GPU {row.gpu_index}")
        if row.host_state is not HostState.OK:
            fix = "It cannot be inspected here, so it cannot be ended from here"
        elif row.uid is not None and self.own_uid not in (None, 0) and row.uid != self.own_uid:
            fix = f"It belongs to {row.user or row.uid}: ask them to end it (only they or root may)"
        elif row.jupyter is not None:
            fix = (
                f"Shut the kernel down from Jupyter (Kernel > Shut Down), or {KILL_HINT} (a Jupyter server "
                "then restarts it empty, without the memory)"
            )
        else:
            fix = f"If it is finished, end it: {KILL_HINT} (or `kill -TERM {row.pid}`)"
        idle_for = minutes_text(idle)
        message = f"{_describe(row)} has held {held} on GPU {row.gpu_index} at 0 % SM, idle for {idle_for}"
        if row.attribution is not None and row.attribution.guess:
            message += " (probably this process: paired by start order)"
        return Alert("stale_vram", severity, message, fix, f"PID {row.pid}")

    def _starvation(
        self, now: float, devices: list[DeviceSample], processes: list[ProcessRow]
    ) -> list[Alert]:
        """A TensorFlow process holds GPU memory, its GPU's utilisation averages under the threshold over the
        window and the process keeps a CPU core busy: the input pipeline cannot keep up.

        Means, not every sample: a starved GPU runs in bursts whenever a batch arrives. A mean of exactly 0 %
        is left to the CPU-fallback rule (the GPU does no work at all, so placement is the likelier cause).
        """
        window = self.settings.starvation_minutes * 60
        utilization = {d.index: d.utilization_percent for d in devices if not d.lost}
        live: set[ProcessKey] = set()
        alerts = []
        for row in processes:
            gpu_util = utilization.get(row.gpu_index) if row.gpu_index is not None else None
            if (
                not row.tensorflow_loaded
                or not row.gpu_memory_mib
                or gpu_util is None
                or row.cpu_percent is None
            ):
                continue
            key = _key(row)
            live.add(key)
            means = self._starvation_means.get(key)
            if means is None or means.window_seconds != window:
                means = self._starvation_means[key] = RollingMeans(window, 2)
            means.add(now, (gpu_util, row.cpu_percent))
            if not means.covers(now):
                continue
            mean_util, mean_cpu = means.means()
            starving = 0 < mean_util < self.settings.starvation_util_percent
            if not (starving and mean_cpu >= self.settings.starvation_cpu_percent):
                continue
            alerts.append(
                Alert(
                    "input_starvation",
                    Severity.WARNING,
                    f"{_describe(row)}: GPU {row.gpu_index} averaged {mean_util:.0f} % utilisation over "
                    f"{minutes_text(window)} while the process kept {mean_cpu:.0f} % CPU busy: the input "
                    "pipeline cannot feed the GPU",
                    STARVATION_FIX,
                    f"PID {row.pid}",
                )
            )
        _forget_gone(self._starvation_means, live)
        return alerts

    def _memory_growth(self, devices: list[DeviceSample], processes: list[ProcessRow]) -> list[Alert]:
        """A TensorFlow process holds nearly a whole GPU (or MIG slice) that other processes share (or it is
        full and it holds most of it): TensorFlow's default pre-allocation starves the others.

        Alone on a card, holding ~95 % is just that default and harms no one, so it is not reported.
        """
        alerts = []
        for memory in memory_views(devices):
            total = memory.total_mib
            sharing = [row for row in processes if memory.holds(row)]
            if memory.lost or not total or len({r.pid for r in sharing}) < 2:
                continue
            full = (memory.percent or 0.0) >= self.settings.memory_full_percent
            for row in sharing:
                share = 100.0 * (row.gpu_memory_mib or 0.0) / total
                if not row.tensorflow_loaded or not (
                    share >= self.settings.memory_growth_percent
                    or (full and share >= FULL_GPU_MAJORITY_PERCENT)
                ):
                    continue
                others = len({r.pid for r in sharing if r.pid != row.pid})
                alerts.append(
                    Alert(
                        "memory_growth_off",
                        Severity.INFO,
                        f"{_describe(row)} holds {row.gpu_memory_mib:.0f} MiB ({share:.0f} %) of "
                        f"{memory.name}, which {others} other process{'es' if others > 1 else ''} share: "
                        "TensorFlow pre-allocates nearly all free memory unless memory growth is on, so the "
                        "others are left with little or none (out-of-memory errors)",
                        MEMORY_GROWTH_FIX,
                        f"PID {row.pid}",
                    )
                )
        return alerts

    def _memory_full(self, devices: list[DeviceSample]) -> list[Alert]:
        alerts = []
        for memory in memory_views(devices):
            percent = memory.percent
            if percent is not None and percent >= self.settings.memory_full_percent:
                alerts.append(
                    Alert(
                        "memory_full",
                        Severity.CRITICAL if percent >= 99 else Severity.WARNING,
                        f"{memory.name} memory is {percent:.0f} % full "
                        f"({memory.used_mib:.0f} of {memory.total_mib:.0f} MiB)",
                        MEMORY_FULL_FIX,
                        memory.subject,
                    )
                )
        return alerts

    def _unattributed(self, devices: list[DeviceSample], processes: list[ProcessRow]) -> list[Alert]:
        """GPU memory in use that no listed process accounts for (hidden holders)."""
        alerts = []
        for memory in memory_views(devices):
            if memory.lost or memory.used_mib is None or not memory.total_mib:
                continue
            held = [row.gpu_memory_mib for row in processes if memory.holds(row)]
            if any(mib is None for mib in held):  # per-process memory unknown (WDDM, a container)
                continue
            missing = memory.used_mib - sum(mib or 0.0 for mib in held)
            if missing >= max(UNATTRIBUTED_MIN_MIB, 0.1 * memory.total_mib):
                alerts.append(
                    Alert(
                        "unattributed_vram",
                        Severity.INFO,
                        f"{memory.name}: {missing:.0f} MiB in use is not held by any listed process",
                        UNATTRIBUTED_IN_CONTAINER_FIX if self.own_pid_namespace else UNATTRIBUTED_FIX,
                        memory.subject,
                    )
                )
        return alerts


@dataclass(frozen=True)
class MemoryView:
    """One pool of GPU memory: a GPU, or in MIG mode a GPU instance (shared by its compute instances)."""

    gpu_index: int
    mig_indices: tuple[int, ...] | None  # None: the whole GPU
    name: str  # "GPU 0", or "MIG 1g.10gb (GPU 0:2)"
    subject: str  # "GPU 0", "GPU 0:2"
    used_mib: float | None
    total_mib: float | None
    lost: bool

    @property
    def percent(self) -> float | None:
        return used_percent(self.used_mib, self.total_mib)

    def holds(self, row: ProcessRow) -> bool:
        """Whether the process's memory is in this pool."""
        if row.gpu_index != self.gpu_index:
            return False
        return row.mig_index is None if self.mig_indices is None else row.mig_index in self.mig_indices


def memory_views(devices: list[DeviceSample]) -> list[MemoryView]:
    """Every memory pool: each GPU not in MIG mode, and each GPU instance of a GPU in MIG mode (its
    parent's aggregate, readable with privileges only, repeats them)."""
    views = []
    for d in devices:
        if not d.mig_mode:
            name = f"GPU {d.index}"
            views.append(MemoryView(d.index, None, name, name, d.memory_used_mib, d.memory_total_mib, d.lost))
            continue
        by_instance: dict[object, list[MigDevice]] = {}
        for mig in d.mig_devices:
            key = mig.gpu_instance_id if mig.gpu_instance_id is not None else ("mig", mig.mig_index)
            by_instance.setdefault(key, []).append(mig)
        for members in by_instance.values():
            first = members[0]
            labels = " and ".join(m.label for m in members)
            name = f"MIG {first.profile or first.name} (GPU {labels})"
            indices = tuple(m.mig_index for m in members)
            used, total = first.memory_used_mib, first.memory_total_mib
            lost = d.lost or first.lost
            views.append(MemoryView(d.index, indices, name, f"GPU {first.label}", used, total, lost))
    return views
