"""plotext charts of a training run: loss per epoch, and loss within the current epoch. Axes get round,
evenly spaced ticks (`nice_ticks`); a single point is named in the title rather than drawn on a made-up
range."""

from __future__ import annotations

import math
from collections.abc import Sequence

from textual_plotext import PlotextPlot

from tfgpu_tui.training.run import EpochRecord
from tfgpu_tui.training.text_format import format_value
from tfgpu_tui.ui.widgets.plot_axes import MAX_TICKS, ROWS_PER_TICK, legend_title, nice_ticks, tick_labels

# Each series its own marker, so the plots read without colour (NO_COLOR, a monochrome terminal); the legend
# is in the title, where it covers no data (plotext draws its own legend over the top-left of the canvas).
# loss is a fine curve (braille dots), val_loss an `x` at each epoch: where they meet, both still show.
EPOCH_MARKERS = {"loss": "braille", "val_loss": "x"}
EDGE_ROOM = 0.03  # of the epoch axis's span, left free at each end
EPOCH_LEGEND = {"loss": "⠒⠒", "val_loss": "x"}


def finite_points(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    """Drop nan/inf points (plotext cannot draw them)."""
    kept = [(x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(y)]
    return [x for x, _ in kept], [y for _, y in kept]


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
    epochs_drawn = 0  # the epochs of the last `show` (what a test waits for)

    def show(self, epochs: Sequence[EpochRecord]) -> None:
        """Plot these epochs."""
        plt = self.plt
        plt.clear_figure()
        values: list[float] = []
        drawn: list[str] = []
        for name, color in (("loss", "cyan"), ("val_loss", "orange")):
            xs, ys = finite_points(
                [e.epoch for e in epochs if name in e.metrics],
                [e.metrics[name] for e in epochs if name in e.metrics],
            )
            if xs:
                draw = plt.plot if name == "loss" else plt.scatter  # the curve, then a mark at each epoch
                draw(xs, ys, color=color, marker=EPOCH_MARKERS[name])  # the title is the legend
                values += ys
                drawn.append(f"{EPOCH_LEGEND[name]} {name}")
        self._y_axis(values)
        self.epochs_drawn = len(epochs)
        self.marked_epochs = changes = [e.epoch for e in epochs if e.lr_change is not None]
        for epoch in changes:
            plt.vline(epoch, "magenta")
        plt.title(legend_title("loss per epoch", drawn + (["| learning rate changed"] if changes else [])))
        if epochs:
            plt.xlabel("epoch")
            numbers = sorted({e.epoch for e in epochs})
            ticks = numbers if len(numbers) <= 12 else nice_ticks(numbers[0], numbers[-1], integers=True)
            if len(numbers) == 1:
                plt.xlim(numbers[0] - 1, numbers[0] + 1)  # one epoch: in the middle, not on a made-up range
            else:  # a little room at each end: the first and last epochs' marks stand clear of the frame
                pad = (max(numbers[-1], ticks[-1]) - min(numbers[0], ticks[0])) * EDGE_ROOM
                plt.xlim(min(numbers[0], ticks[0]) - pad, max(numbers[-1], ticks[-1]) + pad)
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
            plt.plot(xs, ys, color="cyan", marker=EPOCH_MARKERS["loss"])  # one series: the title names it
            plt.xlabel("step")
            self._y_axis(ys)
            ticks = nice_ticks(min(xs), max(xs), integers=True)
            plt.xlim(ticks[0], ticks[-1])
            plt.xticks(ticks, [f"{t:g}" for t in ticks])
        self.refresh()
