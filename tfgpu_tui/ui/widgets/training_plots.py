"""plotext charts of a training run: loss per epoch, and loss within the current epoch."""

from __future__ import annotations

import math
from collections.abc import Sequence

from textual_plotext import PlotextPlot

from tfgpu_tui.training.run import EpochRecord


def finite_points(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    """Drop nan/inf points (plotext cannot draw them)."""
    kept = [(x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(y)]
    return [x for x, _ in kept], [y for _, y in kept]


class EpochLossPlot(PlotextPlot):
    """loss and val_loss of the latest fit() call, one point per epoch; a vertical line where a callback
    changed the learning rate (ReduceLROnPlateau, LearningRateScheduler)."""

    def show(self, epochs: Sequence[EpochRecord]) -> None:
        """Plot these epochs."""
        plt = self.plt
        plt.clear_figure()
        plt.title("loss per epoch")
        for name, color in (("loss", "cyan"), ("val_loss", "orange")):
            xs, ys = finite_points(
                [e.epoch for e in epochs if name in e.metrics],
                [e.metrics[name] for e in epochs if name in e.metrics],
            )
            if xs:
                plt.plot(xs, ys, label=name, color=color, marker="braille")
        self.marked_epochs = changes = [e.epoch for e in epochs if e.lr_change is not None]
        for epoch in changes:
            plt.vline(epoch, "magenta")
        if changes:
            plt.title("loss per epoch (| learning rate changed)")
        if epochs:
            plt.xlabel("epoch")
            numbers = sorted({e.epoch for e in epochs})
            if len(numbers) <= 12:
                plt.xticks(numbers)
        self.refresh()


class StepLossPlot(PlotextPlot):
    """loss against step within the current epoch (Keras' running mean)."""

    def show(self, points: Sequence[tuple[int, float]], epoch: int | None) -> None:
        """Plot (step, loss) points."""
        plt = self.plt
        plt.clear_figure()
        plt.title(f"loss in epoch {epoch}" if epoch else "loss in the current epoch")
        xs, ys = finite_points([p[0] for p in points], [p[1] for p in points])
        if xs:
            plt.plot(xs, ys, label="loss", color="cyan", marker="braille")
            plt.xlabel("step")
        self.refresh()
