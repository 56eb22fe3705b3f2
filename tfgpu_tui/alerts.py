"""The one alert type every part of the dashboard raises: what is wrong, how bad, and what to do."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum


class Severity(IntEnum):
    """How urgent an alert is; a larger value is more urgent."""

    INFO = 0
    WARNING = 1
    CRITICAL = 2


class AlertKind(str, Enum):
    """The kinds of alert the GPU monitor, the efficiency diagnoses and the app raise (`kind` in JSON; the
    enum's members are strings). Two families are named by their own ids instead: ``training_<problem id>``
    (training/problems.py) and ``env_<check id>`` (the Environment tab's findings)."""

    CPU_FALLBACK = "cpu_fallback"
    STALE_VRAM = "stale_vram"
    MEMORY_FULL = "memory_full"
    GPU_LOST = "gpu_lost"
    INPUT_STARVATION = "input_starvation"
    MEMORY_GROWTH_OFF = "memory_growth_off"
    UNATTRIBUTED_VRAM = "unattributed_vram"
    PERSISTENCE_OFF = "persistence_off"
    NO_GPU = "no_gpu"  # raised alongside Snapshot.error: nothing to monitor
    INTERNAL = "internal"  # a bug of ours, said rather than hidden
    # The efficiency diagnoses (gpu/efficiency.py); its `input_bound` is raised as INPUT_STARVATION.
    BUSY_NOT_WORKING = "busy_not_working"
    TENSOR_CORES_IDLE = "tensor_cores_idle"
    THROTTLED = "throttled"
    PCIE_LINK_DEGRADED = "pcie_link_degraded"
    OVER_PROVISIONED = "over_provisioned"
    PROBE_ERROR = "probe_error"  # the Batch probe tab's

    def __str__(self) -> str:
        return self.value


#: What the Monitor raises and docs/gpu-monitor.md's table lists: all but the Batch probe's own.
MONITOR_ALERT_KINDS = frozenset(AlertKind) - {AlertKind.PROBE_ERROR}


@dataclass(frozen=True)
class Alert:
    """A condition worth the user's attention.

    Attributes:
        kind: a stable identifier such as ``cpu_fallback`` or ``stale_vram`` (used in JSON output).
        severity: how urgent it is.
        message: what is wrong, in one sentence.
        fix: what to do about it (a command or a snippet where one exists).
        subject: what it is about, e.g. ``GPU 0`` or ``PID 4242``; empty when global.
        link: where the dashboard explains more, as ``<tab id>:<item id>`` (e.g. ``environment:gpus_visible``
            is the Environment tab's finding with that id); empty when there is nothing to jump to.
        short: the alert in a few words for one line, e.g. ``CPU fallback: PID 1234 train.py``; empty lets the
            dashboard make one from the kind and subject.
    """

    kind: str  # an AlertKind, or a family's ``training_<id>`` / ``env_<id>``
    severity: Severity
    message: str
    fix: str = ""
    subject: str = ""
    link: str = ""
    short: str = ""

    def as_dict(self) -> dict[str, str]:
        """The alert as plain JSON-ready data."""
        return {
            "kind": str(self.kind),
            "severity": self.severity.name.lower(),
            "message": self.message,
            "fix": self.fix,
            "subject": self.subject,
            "link": self.link,
        }


# What needs someone to act (a process to end, a job on the wrong device, a GPU gone): these always outrank
# advice (memory growth, persistence mode, environment findings), whatever the severities.
ACTION_KINDS = frozenset(
    {AlertKind.CPU_FALLBACK, AlertKind.STALE_VRAM, AlertKind.MEMORY_FULL, AlertKind.GPU_LOST}
)


def needs_action(alert: Alert) -> bool:
    """Whether the alert is about something to act on now rather than advice."""
    return alert.kind in ACTION_KINDS and alert.severity > Severity.INFO


def rank(alert: Alert) -> tuple[bool, Severity]:
    """Sort key, larger first: action before advice, then severity."""
    return (needs_action(alert), alert.severity)


def ordered(alerts: list[Alert]) -> list[Alert]:
    """The alerts most urgent first (stable: equals keep the order they were raised in)."""
    return sorted(alerts, key=rank, reverse=True)


def most_urgent(alerts: list[Alert]) -> Alert | None:
    """The alert for the header: an action before any advice, then the most severe, the first raised among
    equals; None for an empty list."""
    best: Alert | None = None
    for alert in alerts:
        if best is None or rank(alert) > rank(best):
            best = alert
    return best
