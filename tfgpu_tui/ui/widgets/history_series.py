"""One GPU's history as plotted: the series and their colours (no plotting library, so the Monitor's first
frame does not wait for plotext; the plot widget is in history_plot.py)."""

from __future__ import annotations

from dataclasses import dataclass

Series = tuple[list[float], list[float]]
# Line colours; the GPU card colours its "Util" and "Mem" labels the same, so it doubles as the legend.
UTILIZATION_COLOR = "cyan"
MEMORY_COLOR = "magenta"


@dataclass(frozen=True)
class GpuHistory:
    """One GPU's plotted series, x in seconds relative to now (negative = in the past)."""

    index: int
    utilization: Series
    memory_percent: Series


def relative_series(series: tuple[list[float], list[float]], now: float) -> Series:
    """Turn (timestamps, percentages) into (seconds before `now`, percentages clamped to 0-100); plotext
    fails on points outside the axis limits."""
    times, values = series
    return [t - now for t in times], [min(100.0, max(0.0, value)) for value in values]
