"""Settings shared by the app and the subcommands: one typed object, filled from defaults,
the config file and the command line (in that order of precedence, lowest first).

Every number a user can set has a `Range`; the settings file and the command line check values against it,
so a value such as `interval = 1e10` becomes a warning and the default, never an overflow later on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Range:
    """Closed interval [low, high] of finite numbers; `low_open` excludes `low` itself."""

    low: float
    high: float
    low_open: bool = False

    def contains(self, value: float) -> bool:
        """Whether `value` is finite and inside the interval."""
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def describe(self) -> str:
        """e.g. "between 0.25 and 3600", "more than 0 and at most 100"."""
        if self.low_open:
            return f"more than {self.low:g} and at most {self.high:g}"
        return f"between {self.low:g} and {self.high:g}"


MIN_INTERVAL_SECONDS = 0.25
INTERVAL = Range(MIN_INTERVAL_SECONDS, 3600.0)
TIMEOUT_SECONDS = Range(1.0, 86400.0)
GRACE_SECONDS = Range(0.0, 600.0)
PERCENT = Range(0.0, 100.0, low_open=True)
MINUTES = Range(0.0, 7 * 24 * 60.0, low_open=True)
CPU_PERCENT = Range(0.0, 100.0 * 1024, low_open=True)  # of one core; up to 1024 cores
BUDGET_MB = Range(0.0, 16.0 * 1024 * 1024, low_open=True)  # up to 16 TiB
EPOCHS = Range(1, 1_000_000)
# Settings renamed (old key -> new key); the old names are still read, with a deprecation warning.
RENAMED_KEYS = {
    "probe_timeout_seconds": "env_check_timeout_seconds",
    "probe_budget_mb": "batch_budget_mb",
}


@dataclass
class Settings:
    """Everything a user can set. Defaults are what a first-time user gets."""

    # General
    interval: float = 1.0
    readonly: bool = False
    demo_gpus: int = 2  # GPUs in the --demo scene (--demo-gpus)
    demo: bool = False
    python: str | None = None  # chosen with --python or the settings file; None: tfgpu-tui finds one
    # Least privilege (what a web session gets by default; see serve/policy.py and docs/security.md)
    least_privilege: bool = False
    allow_kill: bool = False  # with least_privilege: signals allowed after all
    allow_code: bool = False  # with least_privilege: module:function models and model files allowed
    log_root: Path | None = None  # logs only under this directory (least privilege: the log's directory)
    # Monitor tab
    kill_grace_seconds: float = 5.0
    fallback_seconds: float = 15.0  # a GPU at 0 % this long while TensorFlow holds its memory
    stale_minutes: float = 10.0
    memory_full_percent: float = 95.0
    starvation_minutes: float = 2.0
    starvation_util_percent: float = 50.0
    starvation_cpu_percent: float = 80.0  # of one core, as top and psutil count it
    memory_growth_percent: float = 90.0
    # How well the GPUs are used (gpu/efficiency.py, docs/efficiency.md)
    efficiency_minutes: float = 2.0  # the window of busy_not_working, tensor_cores_idle, throttled, pcie
    busy_util_percent: float = 80.0  # utilisation at which a GPU counts as busy
    sm_active_low_percent: float = 50.0  # GPM SM activity below this is ineffective (DCGM: under 0.5)
    tensor_idle_percent: float = 5.0  # tensor activity below this is "near 0"
    throttled_percent: float = 20.0  # share of the busy time throttled that is reported
    over_provisioned_minutes: float = 10.0  # a training job watched this long ...
    over_provisioned_percent: float = 25.0  # ... that peaked below this share of memory and SMs
    # Training tab
    log_path: Path = Path("train.log")
    log_path_given: bool = False
    checkpoints_dir: Path | None = None
    checkpoint_max_epochs: int = 5
    checkpoint_max_minutes: float = 30.0
    # Environment tab
    env_check_timeout_seconds: float = 120.0
    # Batch probe tab
    batch_budget_mb: int | None = None
    # Hosts tab (the fleet view): shown when either source is given
    prometheus_url: str | None = None  # --prometheus: read every exporter through Prometheus's HTTP API
    remote_hosts: tuple[str, ...] = ()  # --remote: tfgpu-tui exporters scraped directly (HOST:PORT or URL)
    fleet_refresh_seconds: float = 2.0
    # notify: Apprise URLs (secrets: never printed), events sent, thresholds
    notify_urls: tuple[str, ...] = ()
    notify_events: tuple[str, ...] = ("finished", "crashed", "nan", "stalled", "gpu_idle")
    notify_stall_minutes: float = 10.0  # a log silent this long while its writer lives has stalled
    notify_idle_minutes: float = 30.0  # a GPU at 0 % this long while no followed log grows is idle
    # Settings file: one line per problem found in it (the app shows them as notifications)
    config_warnings: list[str] = field(default_factory=list)
    config_refused: dict[str, str] = field(default_factory=dict)  # key -> what was wrong with its value

    def __post_init__(self) -> None:
        if not INTERVAL.contains(self.interval):
            raise ValueError(f"interval must be {INTERVAL.describe()} s, got {self.interval}")

    # Old names of two settings ("probe" named two different things), for callers not yet renamed.
    @property
    def probe_timeout_seconds(self) -> float:
        return self.env_check_timeout_seconds

    @property
    def probe_budget_mb(self) -> int | None:
        return self.batch_budget_mb
