"""The batch probe's plot: peak memory (left axis) and throughput (right axis) against batch size."""

from __future__ import annotations

from collections.abc import Sequence

from textual_plotext import PlotextPlot

from tfgpu_tui.probe.trial import Trial


class ProbePlot(PlotextPlot):
    """Peak memory of each trial (fits and does-not-fit apart), the budget line, and samples per second."""

    def show_trials(self, trials: Sequence[Trial], budget_mb: float | None) -> None:
        """Redraw for these trials and budget."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title("Peak memory and throughput by batch size")
        plt.xlabel("batch size")
        plt.ylabel("peak MB", yside="left")
        ordered = sorted((t for t in trials if t.peak_mb is not None), key=lambda t: t.batch_size)
        fitting = [t for t in ordered if t.fits]
        over = [t for t in ordered if not t.fits]
        if fitting:
            sizes = [t.batch_size for t in fitting]
            plt.plot(sizes, [t.peak_mb for t in fitting], marker="dot", color="green", label="peak MB (fits)")
        if over:
            sizes = [t.batch_size for t in over]
            plt.scatter(sizes, [t.peak_mb for t in over], marker="x", color="red", label="peak MB (too big)")
        timed = [t for t in ordered if t.fits and t.samples_per_second is not None]
        if timed:
            sizes = [t.batch_size for t in timed]
            speeds = [t.samples_per_second for t in timed]
            plt.plot(sizes, speeds, marker="dot", color="cyan", yside="right", label="samples/s")
            plt.ylabel("samples/s", yside="right")
        if budget_mb and ordered:
            plt.hline(budget_mb, color="yellow")
        self.refresh()
