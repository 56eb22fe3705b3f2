"""Ring buffers of per-GPU readings over the last few minutes, for the history plots."""

from __future__ import annotations

import operator
from collections import deque

from tfgpu_tui.gpu.model import DeviceSample

METRICS = ("utilization", "memory_percent")


class History:
    """Per-GPU time series of utilisation and memory use, trimmed to ``window_seconds``."""

    def __init__(self, window_seconds: float = 300.0) -> None:
        self.window_seconds = window_seconds
        self._points: dict[int, deque[tuple[float, float | None, float | None]]] = {}

    def add(self, timestamp: float, devices: list[DeviceSample]) -> None:
        """Record one sample of every device and drop points older than the window."""
        horizon = timestamp - self.window_seconds
        for device in devices:
            points = self._points.setdefault(device.index, deque())
            points.append((timestamp, device.utilization_percent, device.memory_percent))
            while points and points[0][0] < horizon:
                points.popleft()

    def series(self, gpu_index: int, metric: str) -> tuple[list[float], list[float]]:
        """(timestamps, values) for ``metric`` in {"utilization", "memory_percent"}; None readings skipped."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
        column = 1 + METRICS.index(metric)
        times: list[float] = []
        values: list[float] = []
        for point in self._points.get(gpu_index, ()):
            value = point[column]
            if value is not None:
                times.append(point[0])
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
