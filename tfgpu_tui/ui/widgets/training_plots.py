"""plotext charts of a training run: loss per epoch, and loss within the current epoch. Axes get round,
evenly spaced ticks (`nice_ticks`); a single point is named in the title rather than drawn on a made-up
range."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from textual_plotext import PlotextPlot

from tfgpu_tui.training.run import EpochRecord
from tfgpu_tui.training.text_format import format_value

TICK_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)  # tick spacings, times a power of ten (10 starts the next)
MAX_TICKS = 5
ROWS_PER_TICK = 2  # a y tick label every other row at most, so labels never touch


def finite_points(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    """Drop nan/inf points (plotext cannot draw them)."""
    kept = [(x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(y)]
    return [x for x, _ in kept], [y for _, y in kept]


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


class _LossPlot(PlotextPlot):
    """A loss chart whose y axis has evenly spaced round ticks."""

    def _y_axis(self, values: Sequence[float]) -> None:
        if not values:
            return
        rows = max(self.size.height - 5, 2)  # less the title, the frame and the x labels
        ticks = nice_ticks(min(values), max(values), max(1, min(MAX_TICKS, rows // ROWS_PER_TICK)))
        self.plt.ylim(ticks[0], ticks[-1])
        self.plt.yticks(ticks, tick_labels(ticks))


class EpochLossPlot(_LossPlot):
    """loss and val_loss of the latest fit() call, one point per epoch; a vertical line where a callback
    changed the learning rate (ReduceLROnPlateau, LearningRateScheduler)."""

    DEFAULT_CSS = """
    EpochLossPlot { height: 1fr; width: 1fr; min-width: 30; }
    """

    def show(self, epochs: Sequence[EpochRecord]) -> None:
        """Plot these epochs."""
        plt = self.plt
        plt.clear_figure()
        plt.title("loss per epoch")
        values: list[float] = []
        for name, color in (("loss", "cyan"), ("val_loss", "orange")):
            xs, ys = finite_points(
                [e.epoch for e in epochs if name in e.metrics],
                [e.metrics[name] for e in epochs if name in e.metrics],
            )
            if xs:
                plt.plot(xs, ys, label=name, color=color, marker="braille")
                values += ys
        self._y_axis(values)
        self.marked_epochs = changes = [e.epoch for e in epochs if e.lr_change is not None]
        for epoch in changes:
            plt.vline(epoch, "magenta")
        if changes:
            plt.title("loss per epoch (| learning rate changed)")
        if epochs:
            plt.xlabel("epoch")
            numbers = sorted({e.epoch for e in epochs})
            ticks = numbers if len(numbers) <= 12 else nice_ticks(numbers[0], numbers[-1], integers=True)
            if len(numbers) == 1:
                plt.xlim(numbers[0] - 1, numbers[0] + 1)  # one epoch: in the middle, not on a made-up range
            plt.xticks(ticks, [f"{t:g}" for t in ticks])
        self.refresh()


class StepLossPlot(_LossPlot):
    """loss against step within the current epoch (Keras' running mean)."""

    DEFAULT_CSS = """
    StepLossPlot { height: 1fr; width: 1fr; min-width: 30; }
    """

    def show(self, points: Sequence[tuple[int, float]], epoch: int | None) -> None:
        """Plot (step, loss) points; a single one is named in the title (one point is no curve)."""
        plt = self.plt
        plt.clear_figure()
        title = f"loss in epoch {epoch}" if epoch else "loss in the current epoch"
        xs, ys = finite_points([p[0] for p in points], [p[1] for p in points])
        self.points_drawn = len(xs) if len(xs) > 1 else 0
        if len(xs) == 1:
            plt.title(f"{title}: {format_value(ys[0])} at step {xs[0]:g} (one update, no curve yet)")
        else:
            plt.title(title)
        if len(xs) > 1:
            plt.plot(xs, ys, label="loss", color="cyan", marker="braille")
            plt.xlabel("step")
            self._y_axis(ys)
            ticks = nice_ticks(min(xs), max(xs), integers=True)
            plt.xlim(ticks[0], ticks[-1])
            plt.xticks(ticks, [f"{t:g}" for t in ticks])
        self.refresh()
