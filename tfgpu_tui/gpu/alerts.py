"""Alert rules over successive snapshots: silent CPU fallback, stale VRAM holders, memory nearly full,
and GPUs that fell off the bus. Each alert says what is wrong and what to do.

The rules keep a little state (since when a GPU has been idle, since when a process has held memory at 0 %
SM), so windows longer than the history plots (e.g. 10 minutes) cost nothing.
"""

from __future__ import annotations

from datetime import datetime

from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.gpu.model import DeviceSample, HostState, ProcessRow
from tfgpu_tui.settings import Settings

FALLBACK_PROCESS_FIX = (
    'In that environment run `python -c "import tensorflow as tf; '
    "print(tf.config.list_physical_devices('GPU'))\"`; an empty list means a CPU-only TensorFlow or missing "
    "CUDA libraries (see the Environment tab); also check CUDA_VISIBLE_DEVICES"
)
FALLBACK_IDLE_FIX = (
    "Log device placement (`tf.debugging.set_log_device_placement(True)`); if the ops are on the GPU, speed "
    "up the input pipeline (`dataset.prefetch(tf.data.AUTOTUNE)`, `num_parallel_calls`)"
)
UNATTRIBUTED_MIN_MIB = 2048.0
UNATTRIBUTED_FIX = (
    "Processes in other containers or PID namespaces, or ones this user may not list, can hold it: on the "
    "host run `sudo fuser -v /dev/nvidia*` (or `sudo lsof /dev/nvidia*`)"
)
MEMORY_FULL_FIX = (
    "New work will fail with OOM: end idle holders (stale kernels), lower the batch size, or let TensorFlow "
    "grow memory on demand (`tf.config.experimental.set_memory_growth(gpu, True)`)"
)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _describe(row: ProcessRow) -> str:
    if row.jupyter is not None:
        return f"Jupyter kernel {row.jupyter.notebook_path or row.jupyter.kernel_id} (PID {row.pid})"
    command = (row.command or "").split(" ")
    return f"PID {row.pid} ({' '.join(command[:3])})" if row.command else f"PID {row.pid}"


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

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._gpu_idle_since: dict[int, float] = {}
        self._process_idle_since: dict[tuple[int, float | None, int | None], float] = {}

    def evaluate(self, now: float, devices: list[DeviceSample], processes: list[ProcessRow]) -> list[Alert]:
        """The alerts that hold now, most actionable first."""
        alerts = self._lost(devices)
        alerts += self._cpu_fallback(now, devices, processes)
        alerts += self._stale(now, devices, processes)
        alerts += self._memory_full(devices)
        alerts += self._unattributed(devices, processes)
        return alerts

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
        alerts = []
        if any(not d.lost for d in devices):
            for row in processes:
                if row.gpu_index is None and row.tensorflow_loaded:
                    alerts.append(
                        Alert(
                            "cpu_fallback",
                            Severity.WARNING,
                            f"{_describe(row)} has TensorFlow loaded but holds no GPU memory: "
                            "it is running on the CPU",
                            FALLBACK_PROCESS_FIX,
                            f"PID {row.pid}",
                        )
                    )
        tf_gpus = {r.gpu_index for r in processes if r.tensorflow_loaded and (r.gpu_memory_mib or 0) > 0}
        for device in devices:
            idle = device.utilization_percent == 0 and device.index in tf_gpus
            if not idle:
                self._gpu_idle_since.pop(device.index, None)
                continue
            since = self._gpu_idle_since.setdefault(device.index, now)
            if now - since >= self.settings.fallback_seconds:
                alerts.append(
                    Alert(
                        "cpu_fallback",
                        Severity.WARNING,
                        f"GPU {device.index} has been at 0 % for {_minutes(now - since)} while a TensorFlow "
                        "process holds its memory: the work is running on the CPU or starved for input",
                        FALLBACK_IDLE_FIX,
                        f"GPU {device.index}",
                    )
                )
        return alerts

    def _stale(self, now: float, devices: list[DeviceSample], processes: list[ProcessRow]) -> list[Alert]:
        limit = self.settings.stale_minutes * 60
        gpu_busy = {d.index: d.utilization_percent for d in devices}
        live: set[tuple[int, float | None, int | None]] = set()
        found: list[tuple[bool, float, Alert]] = []
        for row in processes:
            key = (row.pid, row.create_time, row.gpu_index)
            # without per-process SM % (older GPUs), an idle GPU is the best evidence there is
            busy = row.sm_percent if row.sm_percent is not None else gpu_busy.get(row.gpu_index)
            if row.gpu_index is None or not row.gpu_memory_mib or busy != 0:
                continue
            live.add(key)
            since = self._process_idle_since.setdefault(key, now)
            if row.jupyter is not None and row.jupyter.execution_state == "idle":
                activity = _iso_seconds(row.jupyter.last_activity)
                if activity is not None:
                    since = min(since, activity)
            idle = now - since
            if idle < limit:
                continue
            fix = (
                "Shut the kernel down from Jupyter (Kernel > Shut Down) or select the row and press k"
                if row.jupyter is not None
                else "If it is finished, end it: select the row and press k (or `kill -TERM <pid>`)"
            )
            if row.host_state is not HostState.OK:
                fix = "It is not visible on this host; end it where it runs (the container needs --pid=host)"
            message = (
                f"{_describe(row)} has held {row.gpu_memory_mib:.0f} MiB on GPU {row.gpu_index} "
                f"with 0 % SM for {_minutes(idle)}"
            )
            alert = Alert("stale_vram", Severity.WARNING, message, fix, f"PID {row.pid}")
            found.append((row.jupyter is None, -idle, alert))
        for key in [k for k in self._process_idle_since if k not in live]:
            del self._process_idle_since[key]
        return [alert for _, _, alert in sorted(found, key=lambda item: item[:2])]

    def _memory_full(self, devices: list[DeviceSample]) -> list[Alert]:
        alerts = []
        for device in devices:
            percent = device.memory_percent
            if percent is not None and percent >= self.settings.memory_full_percent:
                alerts.append(
                    Alert(
                        "memory_full",
                        Severity.CRITICAL if percent >= 99 else Severity.WARNING,
                        f"GPU {device.index} memory is {percent:.0f} % full "
                        f"({device.memory_used_mib:.0f} of {device.memory_total_mib:.0f} MiB)",
                        MEMORY_FULL_FIX,
                        f"GPU {device.index}",
                    )
                )
        return alerts

    def _unattributed(self, devices: list[DeviceSample], processes: list[ProcessRow]) -> list[Alert]:
        """GPU memory in use that no listed process accounts for (hidden holders)."""
        alerts = []
        for device in devices:
            if device.lost or device.memory_used_mib is None or not device.memory_total_mib:
                continue
            held = [r.gpu_memory_mib for r in processes if r.gpu_index == device.index]
            if any(mib is None for mib in held):  # per-process memory unknown (WDDM, MIG): cannot tell
                continue
            missing = device.memory_used_mib - sum(mib or 0.0 for mib in held)
            if missing >= max(UNATTRIBUTED_MIN_MIB, 0.1 * device.memory_total_mib):
                alerts.append(
                    Alert(
                        "unattributed_vram",
                        Severity.INFO,
                        f"GPU {device.index}: {missing:.0f} MiB in use is not held by any listed process",
                        UNATTRIBUTED_FIX,
                        f"GPU {device.index}",
                    )
                )
        return alerts
