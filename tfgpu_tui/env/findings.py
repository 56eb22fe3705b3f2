"""The result of an environment check: findings, the report that holds them, its exit code and JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from tfgpu_tui.exit_status import EXIT_CHECK_FAILED, EXIT_CHECK_WARNINGS, EXIT_OK


class Status(Enum):
    """How a check came out. PENDING only exists while the TensorFlow inspection is still running."""

    OK = "ok"
    WARNING = "warning"
    FAILURE = "failure"
    SKIPPED = "skipped"
    PENDING = "pending"


STATUS_ICONS = {
    Status.OK: "✔",
    Status.WARNING: "⚠",
    Status.FAILURE: "✘",
    Status.SKIPPED: "–",
    Status.PENDING: "…",
}
INFO_ICON = "ℹ"


@dataclass(frozen=True)
class Finding:
    """One check's outcome.

    Attributes:
        id: stable identifier, e.g. ``driver`` or ``gpus_visible`` (log findings: ``log:<SIGNATURE_ID>``).
        status: ok / warning / failure / skipped (pending while the inspection runs).
        title: what was checked, a few words.
        detail: what was found.
        why: why it matters.
        fix: the exact fix, a command where one exists; empty when nothing needs doing.
        informational: an ok finding that is worth knowing but needs no action (nvcc, persistence mode).
        link_tab: a tab that shows more (e.g. ``monitor`` for GPU processes), else None.
    """

    id: str
    status: Status
    title: str
    detail: str
    why: str = ""
    fix: str = ""
    informational: bool = False
    link_tab: str | None = None

    @property
    def icon(self) -> str:
        return INFO_ICON if self.informational and self.status is Status.OK else STATUS_ICONS[self.status]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status.value,
            "title": self.title,
            "detail": self.detail,
            "why": self.why,
            "fix": self.fix,
            "informational": self.informational,
        }


def pending(check_id: str, title: str) -> Finding:
    """The placeholder shown for a TensorFlow check while the inspection runs."""
    return Finding(check_id, Status.PENDING, title, "Waiting for the TensorFlow inspection...")


@dataclass
class EnvReport:
    """Findings plus the facts behind them (for `check --json` and the Markdown report)."""

    findings: list[Finding]
    facts: dict[str, Any] = field(default_factory=dict)
    complete: bool = True

    @property
    def worst(self) -> Status:
        statuses = {finding.status for finding in self.findings}
        for status in (Status.FAILURE, Status.WARNING):
            if status in statuses:
                return status
        return Status.OK

    def exit_code(self) -> int:
        """0: everything ok (or skipped), 1: warnings, 3: a failure (2 is a bad command line)."""
        return {Status.FAILURE: EXIT_CHECK_FAILED, Status.WARNING: EXIT_CHECK_WARNINGS}.get(
            self.worst, EXIT_OK
        )

    def counts(self) -> dict[str, int]:
        """How many findings have each status."""
        counts = {status.value: 0 for status in Status if status is not Status.PENDING}
        for finding in self.findings:
            counts[finding.status.value] = counts.get(finding.status.value, 0) + 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.worst.value,
            "counts": self.counts(),
            "findings": [finding.as_dict() for finding in self.findings],
            "facts": self.facts,
        }
