"""A plotext chart of one GPU's utilisation and memory use over the last few minutes."""

from __future__ import annotations

from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from tfgpu_tui.gpu.history import GpuHistory, Series, relative_series
from tfgpu_tui.ui.widgets.history_series import MEMORY_COLOR, UTILIZATION_COLOR

__all__ = ["MEMORY_COLOR", "UTILIZATION_COLOR", "GpuHistory", "HistoryPlot", "Series", "relative_series"]


# Marks that differ without colour: the two series stay apart where they overlap (NO_COLOR, 16 colours).
UTILIZATION_MARKER = "braille"
MEMORY_MARKER = "dot"
LEGEND = "⣀ utilisation %   • memory %"
LEGEND_FROM_LINES = 9  # a taller plot has a line to spare for the legend


def _minute_ticks(window_seconds: float) -> tuple[list[float], list[str]]:
    minutes = max(1, int(window_seconds // 60))
    ticks = [-60.0 * m for m in range(minutes, 0, -1)] + [0.0]
    return ticks, [f"-{m}m" for m in range(minutes, 0, -1)] + ["now"]


class HistoryPlot(PlotextPlot):
    """Utilisation % and memory % of one GPU, both on a 0-100 axis, over `window_seconds`."""

    def __init__(self, index: int, window_seconds: float = 300.0) -> None:
        super().__init__(id=f"gpu-history-{index}")
        self.index = index
        self.window_seconds = window_seconds
        self.history: GpuHistory | None = None

    def on_mount(self) -> None:
        super().on_mount()
        self._draw()

    def on_resize(self) -> None:
        self._draw()  # the legend comes and goes with the height

    def show(self, history: GpuHistory) -> None:
        """Plot these series (replacing the previous ones)."""
        self.history = history
        self._draw()

    def render(self) -> RenderResult:
        """The plot; a plotext failure shows as a line of text instead of taking the app down."""
        try:
            return super().render()
        except Exception as error:  # noqa: BLE001 - plotext raises plain IndexError/ValueError on odd input
            return Text(f"plot unavailable: {error!r}", style="dim")

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.xlim(-self.window_seconds, 0)
        plt.ylim(0, 100)
        plt.yticks([0, 50, 100])
        plt.xticks(*_minute_ticks(self.window_seconds))
        plt.title(LEGEND if self.size.height >= LEGEND_FROM_LINES else "")
        if self.history is not None:
            for (xs, ys), color, marker in (
                (self.history.utilization, UTILIZATION_COLOR, UTILIZATION_MARKER),
                (self.history.memory_percent, MEMORY_COLOR, MEMORY_MARKER),
            ):
                if xs:
                    plt.plot(xs, ys, color=color, marker=marker)
        self.refresh()
