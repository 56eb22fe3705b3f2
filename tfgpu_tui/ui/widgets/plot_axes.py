"""Plot axes and legends shared by the plotext charts (training, batch probe): round, evenly spaced ticks
(`nice_ticks`) with labels alike (`tick_labels`), and the legend in the title (`legend_title`), where it
covers no data (plotext draws its own legend over the top-left of the canvas)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

TICK_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)  # tick spacings, times a power of ten (10 starts the next)
MAX_TICKS = 5
ROWS_PER_TICK = 2  # a y tick label every other row at most, so labels never touch


def legend_title(title: str, entries: Sequence[str]) -> str:
    """A plot's title with its legend: "loss per epoch: • loss  x val_loss"."""
    return f"{title}: {'  '.join(entries)}" if entries else title


def round_steps(raw: float) -> Iterator[float]:
    """Round spacings (1, 2, 2.5 or 5 times a power of ten) from the one just below `raw` upwards."""
    power = 10.0 ** math.floor(math.log10(raw))
    while True:
        yield from (m * power for m in TICK_STEPS[:-1])
        power *= 10


def span(low: float, high: float, step: float) -> tuple[float, int]:
    """The first tick at or below `low` and how many intervals of `step` reach `high` from it."""
    start = math.floor(low / step + 1e-9) * step
    return start, max(1, math.ceil((high - start) / step - 1e-9))


def nice_ticks(low: float, high: float, most: int = MAX_TICKS, integers: bool = False) -> list[float]:
    """Evenly spaced round values from at or below `low` to at or above `high`, at most ``most + 1`` of them
    (whole numbers when `integers`). A single value gets a small range around it."""
    if high < low:
        low, high = high, low
    if high == low:
        pad = 1.0 if integers else (abs(low) * 0.05 or 0.5)
        low, high = low - pad, high + pad
    most = max(most, 1)
    for step in round_steps((high - low) / most):
        if integers and step != int(step):
            continue
        start, count = span(low, high, step)
        if count <= most:
            return [round(start + index * step, 12) for index in range(count + 1)]
    raise AssertionError("unreachable: the spacings grow without bound")


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """The ticks with as many decimals as their spacing needs, all alike (``0.50 0.75 1.00``)."""
    if len(ticks) < 2:
        return [f"{t:g}" for t in ticks]
    step = ticks[1] - ticks[0]
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    if round(step * 10**decimals, 6) % 1:
        decimals += 1  # 2.5, 0.25 ...
    return [f"{t:.{decimals}f}" for t in ticks]
