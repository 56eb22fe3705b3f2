"""A training run's report card: one line of efficiency over the time a watcher (notify, the dashboard, the
exporter) saw its process on a GPU: mean utilisation and SM/tensor activity, peak memory against the card,
time throttled, and the biggest win. No I/O; it says nothing of what it did not watch."""

from __future__ import annotations

from dataclasses import dataclass, field

from tfgpu_tui.gpu import clock_events
from tfgpu_tui.gpu.efficiency import Thresholds, is_training_job
from tfgpu_tui.gpu.model import Activity, DeviceSample, Snapshot

MIN_SAMPLES = 3  # fewer readings than this say nothing about a run
WIN_SHARE = 50.0  # a problem present in at least this share of the readings is worth naming


@dataclass
class _Means:
    """A running mean of readings that may be missing."""

    total: float = 0.0
    count: int = 0

    def add(self, value: float | None) -> None:
        if value is not None:
            self.total += value
            self.count += 1

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None


@dataclass
class RunEfficiency:
    """What one run's process did on its GPU(s), reading by reading."""

    first_seen: float
    last_seen: float
    gpus: set[str] = field(default_factory=set)  # "GPU 0", "GPU 0:2"
    readings: int = 0
    utilization: _Means = field(default_factory=_Means)
    sm_active: _Means = field(default_factory=_Means)
    tensor_active: _Means = field(default_factory=_Means)
    busy: int = 0  # readings with utilisation at least busy_util_percent
    throttled: int = 0  # ... of which a power, thermal or slowdown reason held
    sms_idle: int = 0  # busy readings with SM activity under sm_active_low_percent
    tensor_idle: int = 0  # readings with busy SMs and tensor activity near 0 (tensor-core GPUs)
    tensor_judged: int = 0  # readings where that could be told
    peak_mib: float = 0.0
    total_mib: float = 0.0

    def add(self, now: float, device: DeviceSample, activity: Activity | None, label: str, memory_mib: float,
            total_mib: float | None, t: Thresholds) -> None:  # fmt: skip
        """One reading of the run's process on `device` (or one of its MIG devices: `activity`, `label`)."""
        self.last_seen = now
        self.gpus.add(label)
        self.readings += 1
        util = device.utilization_percent
        self.utilization.add(util)
        sm = activity.sm_active if activity else None
        tensor = activity.tensor_active if activity else None
        self.sm_active.add(sm)
        self.tensor_active.add(tensor)
        if util is not None and util >= t.busy_util_percent:
            self.busy += 1
            self.throttled += bool((device.clock_events or 0) & clock_events.THROTTLING)
            self.sms_idle += sm is not None and sm < t.sm_active_low_percent
        cc = device.compute_capability
        tensor_gpu = cc is not None and cc >= (7, 0)
        if tensor_gpu and sm is not None and tensor is not None and sm >= t.sm_active_low_percent:
            self.tensor_judged += 1
            self.tensor_idle += tensor < t.tensor_idle_percent
        if memory_mib >= self.peak_mib:
            self.peak_mib, self.total_mib = memory_mib, total_mib or self.total_mib

    def line(self, t: Thresholds) -> str | None:
        """The report card in one line, or None when too little was watched."""
        if self.readings < MIN_SAMPLES:
            return None
        minutes = (self.last_seen - self.first_seen) / 60
        parts = [f"utilisation {_pct(self.utilization.mean)} mean"]
        if self.sm_active.count:
            parts.append(f"SM activity {_pct(self.sm_active.mean)}")
        if self.tensor_active.count:
            parts.append(f"tensor cores {_pct(self.tensor_active.mean)}")
        if not self.sm_active.count:
            parts.append("SM activity not measurable on this GPU")
        memory = f"peak memory {self.peak_mib / 1024:.1f} GiB"
        if self.total_mib:
            memory += f" of {self.total_mib / 1024:.0f} GiB ({100 * self.peak_mib / self.total_mib:.0f} %)"
        throttled = f"throttled {_share(self.throttled, self.busy)} of the busy time" if self.busy else ""
        text = f"Efficiency over the {minutes:.0f} min watched on {', '.join(sorted(self.gpus))}: "
        text += ", ".join(parts) + f"; {memory}" + (f"; {throttled}" if throttled else "") + "."
        win = self.biggest_win(t)
        return text + (f" Biggest win: {win}." if win else "")

    def biggest_win(self, t: Thresholds) -> str | None:
        """The largest problem present in at least WIN_SHARE % of the readings, with what to try."""
        wins: list[tuple[float, str]] = []
        if self.tensor_judged:
            share = 100 * self.tensor_idle / self.tensor_judged
            wins.append((share, f"tensor cores idle {share:.0f} % of the run: try mixed precision "
                                '(keras.mixed_precision.set_global_policy("mixed_float16"))'))  # fmt: skip
        if self.busy:
            share = 100 * self.sms_idle / self.busy
            wins.append((share, f"SMs mostly idle {share:.0f} % of the busy time: a larger batch or XLA "
                                "(jit_compile=True)"))  # fmt: skip
            share = 100 * self.throttled / self.busy
            wins.append(
                (share, f"throttled {share:.0f} % of the busy time: check the power limit and cooling")
            )
        small = t.over_provisioned_percent
        sm = self.sm_active.mean
        if self.total_mib and 100 * self.peak_mib / self.total_mib < small and sm is not None and sm < small:
            peak = 100 * self.peak_mib / self.total_mib
            wins.append((100 - peak, f"peak memory {peak:.0f} % of the card and SM activity {sm:.0f} %: a "
                                     "smaller GPU or a MIG slice"))  # fmt: skip
        best = max(wins, default=None)
        return best[1] if best is not None and best[0] >= WIN_SHARE else None


def _pct(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.0f} %"


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "N/A"


class RunWatch:
    """Report cards of the runs whose processes it is told to watch, fed one snapshot at a time."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.thresholds = thresholds
        self.runs: dict[int, RunEfficiency] = {}

    def observe(self, snapshot: Snapshot, pids: set[int]) -> None:
        """Add what the watched processes did in this snapshot (a PID no longer watched keeps its card)."""
        devices = {d.index: d for d in snapshot.devices if not d.lost}
        for row in snapshot.processes:
            if row.pid not in pids or row.gpu_index not in devices or not is_training_job(row):
                continue
            device = devices[row.gpu_index]
            activity, label, total = device.activity, f"GPU {device.index}", device.memory_total_mib
            mig = next((m for m in device.mig_devices if m.mig_index == row.mig_index), None)
            if row.mig_index is not None and mig is not None:
                activity, label, total = mig.activity, f"GPU {mig.label}", mig.memory_total_mib
            run = self.runs.setdefault(row.pid, RunEfficiency(snapshot.timestamp, snapshot.timestamp))
            run.add(snapshot.timestamp, device, activity, label, row.gpu_memory_mib or 0.0, total,
                    self.thresholds)  # fmt: skip

    def card(self, pid: int) -> str | None:
        """The run's report card, or None where it was not watched (long enough)."""
        run = self.runs.get(pid)
        return run.line(self.thresholds) if run is not None else None
