"""GPU events from the feed's snapshots: the Monitor's own alerts (stale holders, memory full, lost GPUs,
CPU fallback), plus a GPU idle while nothing trains, which only notify asks about (an instance billed for
nothing)."""

from __future__ import annotations

from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.durations import minutes_text
from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.notify.events import Event, EventKind

# The Monitor's alert kinds that are events, and which.
ALERT_EVENTS = {
    "stale_vram": EventKind.STALE_KERNEL,
    "memory_full": EventKind.MEMORY_FULL,
    "gpu_lost": EventKind.GPU_LOST,
    "cpu_fallback": EventKind.CPU_FALLBACK,
}
IDLE_FIX = "If the work is done, stop the instance; else start the next job"
NVML_LOST_FIX = "Check `nvidia-smi` and `dmesg` (an Xid error); the machine may need a reboot"


class GpuEvents:
    """Turns successive snapshots into the GPU events that hold now.

    Args:
        host: the machine's name for the messages.
        idle_seconds: a GPU at 0 % this long while no followed log grows is idle.
    """

    def __init__(self, host: str, idle_seconds: float) -> None:
        self.host = host
        self.idle_seconds = idle_seconds
        self._idle_since: dict[int, float] = {}
        self._had_gpus = False

    def evaluate(self, snapshot: Snapshot, training_since: float | None) -> list[Event]:
        """The events that hold in `snapshot`. `training_since`: when a followed log last grew (wall clock),
        None when none ever did: a GPU counts as idle only over a span in which no log grew."""
        events = [
            self._from_alert(alert)
            for alert in snapshot.alerts
            if alert.kind in ALERT_EVENTS and alert.severity > Severity.INFO
        ]
        if snapshot.error is not None:
            self._idle_since.clear()
            if self._had_gpus:  # NVML worked earlier in this run: the GPUs are gone, not absent
                message = f"The GPUs cannot be read any more: {snapshot.error.message}"
                events.append(
                    Event(EventKind.GPU_LOST, "gpu_lost:nvml", self.host, "NVML", message, NVML_LOST_FIX)
                )
            return events
        self._had_gpus = self._had_gpus or bool(snapshot.devices)
        events += self._idle(snapshot, training_since)
        return events

    def _from_alert(self, alert: Alert) -> Event:
        kind = ALERT_EVENTS[alert.kind]
        subject = alert.subject or "this machine"
        return Event(kind, f"{kind.value}:{subject}", self.host, subject, alert.message, alert.fix)

    def _idle(self, snapshot: Snapshot, training_since: float | None) -> list[Event]:
        now = snapshot.timestamp
        events = []
        seen = set()
        for device in snapshot.devices:
            seen.add(device.index)
            if device.lost or device.utilization_percent != 0:
                self._idle_since.pop(device.index, None)
                continue
            since = self._idle_since.setdefault(device.index, now)
            if training_since is not None:
                since = max(since, training_since)
            idle = now - since
            if idle < self.idle_seconds:
                continue
            subject = f"GPU {device.index} ({device.name})"
            message = (
                f"GPU {device.index} ({device.name}) has been at 0 % for {minutes_text(idle, words=True)} "
                "and no followed training log has grown: the instance is billed for nothing."
            )
            events.append(
                Event(
                    EventKind.GPU_IDLE, f"gpu_idle:GPU {device.index}", self.host, subject, message, IDLE_FIX
                )
            )
        for index in [i for i in self._idle_since if i not in seen]:
            del self._idle_since[index]
        return events
