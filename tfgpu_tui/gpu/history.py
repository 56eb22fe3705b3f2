"""Ring buffers of per-GPU readings over the last few minutes, for the history plots."""

from __future__ import annotations

import math
import operator
from array import array
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass

from tfgpu_tui.gpu.model import DeviceSample

METRICS = ("utilization", "memory_percent")


class _Columns:
    """One GPU's points as flat arrays of doubles, a missing reading as NaN: 24 bytes a point, where a tuple
    of three floats costs some 140 (8 GPUs over 5 minutes at 1 s: 62 KiB instead of 298, by tracemalloc)."""

    __slots__ = ("times", "values")

    def __init__(self) -> None:
        self.times = array("d")
        self.values = tuple(array("d") for _ in METRICS)

    def append(self, timestamp: float, readings: tuple[float | None, ...]) -> None:
        self.times.append(timestamp)
        for column, reading in zip(self.values, readings, strict=True):
            column.append(math.nan if reading is None else reading)

    def drop_before(self, horizon: float) -> None:
        old = bisect_left(self.times, horizon)  # times only grow
        if old:
            for column in (self.times, *self.values):
                del column[:old]


class History:
    """Per-GPU time series of utilisation and memory use, trimmed to ``window_seconds``."""

    def __init__(self, window_seconds: float = 300.0) -> None:
        self.window_seconds = window_seconds
        self._points: dict[int, _Columns] = {}

    def add(self, timestamp: float, devices: list[DeviceSample]) -> None:
        """Record one sample of every device and drop points older than the window."""
        horizon = timestamp - self.window_seconds
        for device in devices:
            points = self._points.get(device.index)
            if points is None:
                points = self._points[device.index] = _Columns()
            points.append(timestamp, (device.utilization_percent, device.memory_percent))
            points.drop_before(horizon)

    def series(self, gpu_index: int, metric: str) -> tuple[list[float], list[float]]:
        """(timestamps, values) for ``metric`` in {"utilization", "memory_percent"}; None readings skipped."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
        points = self._points.get(gpu_index)
        if points is None:
            return [], []
        times: list[float] = []
        values: list[float] = []
        for timestamp, value in zip(points.times, points.values[METRICS.index(metric)], strict=True):
            if not math.isnan(value):
                times.append(timestamp)
                values.append(value)
        return times, values

    def gpu_indices(self) -> list[int]:
        """The GPUs that have any recorded points."""
        return sorted(self._points)

    def clear(self) -> None:
        """Forget everything (e.g. when the source changes)."""
        self._points.clear()


class RollingMeans:
    """Means of a few readings over a sliding time window, O(1) per sample (running sums, no rescans).

    Used by the alert rules for windows of minutes per process (e.g. GPU utilisation and the process's
    CPU % for input-pipeline starvation); ``None`` readings are not recorded.
    """

    def __init__(self, window_seconds: float, columns: int) -> None:
        self.window_seconds = window_seconds
        self.first_seen: float | None = None
        self._points: deque[tuple[float, tuple[float, ...]]] = deque()
        self._sums = [0.0] * columns

    def add(self, timestamp: float, values: tuple[float, ...]) -> None:
        """Record one sample and drop those older than the window."""
        if self.first_seen is None:
            self.first_seen = timestamp
        self._points.append((timestamp, values))
        self._sums = list(map(operator.add, self._sums, values))
        horizon = timestamp - self.window_seconds
        while self._points[0][0] < horizon:
            _, old = self._points.popleft()
            self._sums = list(map(operator.sub, self._sums, old))

    def covers(self, now: float) -> bool:
        """Whether samples have been recorded for at least the whole window."""
        return self.first_seen is not None and now - self.first_seen >= self.window_seconds

    def means(self) -> tuple[float, ...]:
        """The mean of each column over the window (zeros when empty)."""
        count = len(self._points)
        return tuple(total / count if count else 0.0 for total in self._sums)


Series = tuple[list[float], list[float]]


@dataclass(frozen=True)
class GpuHistory:
    """One GPU's plotted series, x in seconds relative to now (negative = in the past)."""

    index: int
    utilization: Series
    memory_percent: Series


def relative_series(series: Series, now: float) -> Series:
    """Turn (timestamps, percentages) into (seconds before `now`, percentages clamped to 0-100); plotext
    fails on points outside the axis limits."""
    times, values = series
    return [t - now for t in times], [min(100.0, max(0.0, value)) for value in values]
