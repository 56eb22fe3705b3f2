"""The one alert type every part of the dashboard raises: what is wrong, how bad, and what to do."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Severity(IntEnum):
    """How urgent an alert is; a larger value is more urgent."""

    INFO = 0
    WARNING = 1
    CRITICAL = 2


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
    """

    kind: str
    severity: Severity
    message: str
    fix: str = ""
    subject: str = ""
    link: str = ""

    def as_dict(self) -> dict[str, str]:
        """The alert as plain JSON-ready data."""
        return {
            "kind": self.kind,
            "severity": self.severity.name.lower(),
            "message": self.message,
            "fix": self.fix,
            "subject": self.subject,
            "link": self.link,
        }


def most_urgent(alerts: list[Alert]) -> Alert | None:
    """The most severe alert, the first one raised among equals; None for an empty list."""
    best: Alert | None = None
    for alert in alerts:
        if best is None or alert.severity > best.severity:
            best = alert
    return best
