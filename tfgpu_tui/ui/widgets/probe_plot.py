"""The batch probe's plot: peak memory (left axis) and throughput (right axis) against batch size."""

from __future__ import annotations

from collections.abc import Sequence

from textual_plotext import PlotextPlot

from tfgpu_tui.probe.trial import Trial
from tfgpu_tui.ui.widgets.plot_axes import nice_ticks

# Each series its own marker (readable without colour); the legend is the title, where it covers no data.
FITS, TOO_BIG, SPEED, BUDGET = "•", "x", "+", "─"


class ProbePlot(PlotextPlot):
    """Peak memory of each trial (fits and does-not-fit apart), the budget line, and samples per second; axes
    in whole numbers (batch sizes, MB, samples/s) with their units."""

    def show_trials(self, trials: Sequence[Trial], budget_mb: float | None) -> None:
        """Redraw for these trials and budget."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("batch size")
        plt.ylabel("peak MB", yside="left")
        ordered = sorted((t for t in trials if t.peak_mb is not None), key=lambda t: t.batch_size)
        fitting = [t for t in ordered if t.fits]
        over = [t for t in ordered if not t.fits]
        legend: list[str] = []
        if fitting:
            sizes = [t.batch_size for t in fitting]
            plt.plot(sizes, [t.peak_mb for t in fitting], marker=FITS, color="green")
            legend.append(f"{FITS} peak MB")
        if over:
            sizes = [t.batch_size for t in over]
            plt.scatter(sizes, [t.peak_mb for t in over], marker=TOO_BIG, color="red")
            legend.append(f"{TOO_BIG} too big")
        timed = [t for t in ordered if t.fits and t.samples_per_second is not None]
        if timed:
            sizes = [t.batch_size for t in timed]
            speeds = [t.samples_per_second or 0.0 for t in timed]
            plt.plot(sizes, speeds, marker=SPEED, color="cyan", yside="right")
            plt.ylabel("samples/s", yside="right")
            whole_ticks(plt, speeds, "right")
            legend.append(f"{SPEED} samples/s (right)")
        memory = [t.peak_mb or 0.0 for t in ordered] + ([budget_mb] if budget_mb and ordered else [])
        if budget_mb and ordered:
            plt.hline(budget_mb, color="yellow")
            legend.append(f"{BUDGET} budget")
        if ordered:
            whole_ticks(plt, memory, "left")
            sizes = [t.batch_size for t in ordered]
            ticks = nice_ticks(min(sizes), max(sizes), integers=True)
            plt.xlim(ticks[0], ticks[-1])
            plt.xticks(ticks, [f"{t:,.0f}" for t in ticks])
        plt.title("  ".join(legend) if legend else "Peak memory and throughput by batch size")
        self.refresh()


def whole_ticks(plt: object, values: Sequence[float], side: str) -> None:
    """Round, whole-number ticks (with thousands separators) over `values` on the `side` y axis."""
    ticks = nice_ticks(min(values), max(values), integers=True)
    plt.ylim(ticks[0], ticks[-1], yside=side)  # type: ignore[attr-defined]
    plt.yticks(ticks, [f"{t:,.0f}" for t in ticks], yside=side)  # type: ignore[attr-defined]
