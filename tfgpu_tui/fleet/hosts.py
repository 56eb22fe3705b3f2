"""What the fleet view knows about each host: the same Snapshot dataclasses the Monitor shows, rebuilt from
Prometheus series, plus whether the host is being scraped and each followed training log's progress."""

from __future__ import annotations

from dataclasses import dataclass, field

from tfgpu_tui.alerts import Alert, most_urgent
from tfgpu_tui.gpu.model import Snapshot


@dataclass(frozen=True)
class TrainingSummary:
    """One followed training log as an exporter reports it."""

    log: str
    epoch: int | None = None
    total_epochs: int | None = None
    step: int | None = None
    total_steps: int | None = None
    loss: float | None = None
    eta_seconds: float | None = None
    samples_per_second: float | None = None
    finished: bool = False
    metrics: dict[str, float] = field(default_factory=dict)  # the last finished epoch's


@dataclass(frozen=True)
class HostSnapshot:
    """One host of the fleet.

    Attributes:
        key: how the host is reached (Prometheus's ``instance`` label, or HOST:PORT given to --remote).
        hostname: the exporter's Hostname label (the key until the host was first read).
        up: the last scrape worked; reason: why not (or, when up, why it has no GPUs); "" when all is well.
        scrape_age: seconds since the last successful scrape, None when never.
        snapshot: the GPUs, processes (top N per GPU), host CPU and alerts; None before the first scrape.
    """

    key: str
    hostname: str
    up: bool
    reason: str = ""
    scrape_age: float | None = None
    snapshot: Snapshot | None = None
    training: tuple[TrainingSummary, ...] = ()

    @property
    def worst_alert(self) -> Alert | None:
        return most_urgent(self.snapshot.alerts) if self.snapshot else None


@dataclass(frozen=True)
class FleetView:
    """Every host at one refresh, and what went wrong reading them (Prometheus unreachable ...)."""

    hosts: tuple[HostSnapshot, ...]
    source: str
    error: str = ""
    read_ms: float = 0.0
