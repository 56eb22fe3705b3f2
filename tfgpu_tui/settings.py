"""Settings shared by the app and the subcommands: one typed object, filled from defaults,
the config file and the command line (in that order of precedence, lowest first)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

MIN_INTERVAL_SECONDS = 0.25


@dataclass
class Settings:
    """Everything a user can set. Defaults are what a first-time user gets."""

    # General
    interval: float = 1.0
    readonly: bool = False
    demo: bool = False
    python: str = sys.executable
    # Monitor tab
    kill_grace_seconds: float = 5.0
    fallback_seconds: float = 60.0
    stale_minutes: float = 10.0
    memory_full_percent: float = 95.0
    starvation_minutes: float = 2.0
    starvation_util_percent: float = 50.0
    starvation_cpu_percent: float = 80.0  # of one core, as top and psutil count it
    memory_growth_percent: float = 90.0
    # Training tab
    log_path: Path = Path("train.log")
    log_path_given: bool = False
    checkpoints_dir: Path | None = None
    checkpoint_max_epochs: int = 5
    checkpoint_max_minutes: float = 30.0
    # Environment tab
    probe_timeout_seconds: float = 120.0
    # Batch probe tab
    probe_budget_mb: int | None = None
    # Settings file: one line per problem found in it (the app shows them as notifications)
    config_warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.interval < MIN_INTERVAL_SECONDS:
            raise ValueError(f"interval must be at least {MIN_INTERVAL_SECONDS} s, got {self.interval}")
