"""What each tab must show before its picture is taken or its lines are read (the snapshot and
values-whole tests), on the demo: each waits for that state, then for what it scheduled to run. The waits
are hang guards, generous for a loaded machine: under two CPU hogs and a test suite (load 12 on 2 cores)
the Environment tab took over 20 s to finish its checks."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot
from textual.widgets import DataTable

from tests.helpers.waiting import wait_until
from tfgpu_tui.ui.environment import EnvironmentTab
from tfgpu_tui.ui.monitor import MonitorTab
from tfgpu_tui.ui.training import TrainingTab
from tfgpu_tui.ui.widgets.epoch_table import EpochTable
from tfgpu_tui.ui.widgets.history_plot import HistoryPlot
from tfgpu_tui.ui.widgets.probe_form import ProbeForm, columns_that_fit
from tfgpu_tui.ui.widgets.training_plots import EpochLossPlot


async def settled(pilot: Pilot) -> None:
    """What the last state change scheduled has run: its animations, then the refresh they asked for."""
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def screen_still(pilot: Pilot, frames: int = 3) -> None:
    """The picture the app would export is the same `frames` times running, a frame apart: what its last
    state change laid out and drew has reached the screen (the snapshot tests, whose demo is frozen, take
    their picture next). Under load a picture was taken with a pane laid out but its plot not drawn yet."""
    pictures: list[str] = []

    def still() -> bool:
        pictures.append(pilot.app.export_screenshot(simplify=True))
        del pictures[:-frames]
        return len(pictures) == frames and len(set(pictures)) == 1

    await wait_until(pilot, still, timeout=60)


async def monitor_ready(pilot: Pilot) -> None:
    tab = pilot.app.query_one(MonitorTab)
    await wait_until(pilot, lambda: tab.snapshot is not None and pilot.app.all_alerts, timeout=60)
    plots = list(tab.query(HistoryPlot))  # where the screen has room for them: each drawn with its history
    await wait_until(pilot, lambda: all(plot.history is not None for plot in plots), timeout=60)
    await settled(pilot)


async def environment_ready(pilot: Pilot) -> None:
    tab = pilot.app.query_one(EnvironmentTab)
    await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=60)
    tab.reveal("cuda_libraries")  # a finding with a fix
    table = tab.query_one("#env-findings", DataTable)

    def revealed() -> bool:  # selected, and scrolled into view (the picture was taken before, under load)
        finding = tab.selected_finding()
        top, rows = int(table.scroll_y), table.size.height - table.header_height
        return finding is not None and finding.id == "cuda_libraries" and top <= table.cursor_row < top + rows

    await wait_until(pilot, revealed, timeout=60)
    await settled(pilot)


async def training_ready(pilot: Pilot) -> None:
    tab = pilot.app.query_one(TrainingTab)
    table = pilot.app.query_one(EpochTable)
    epochs = pilot.app.query_one(EpochLossPlot)
    await wait_until(
        pilot,
        lambda: table.row_count >= 1 and epochs.epochs_drawn == table.row_count and tab.plots_show_latest,
        timeout=60,
    )
    await settled(pilot)


async def probe_ready(pilot: Pilot) -> None:
    form = pilot.app.query_one(ProbeForm)

    def columns_settled() -> bool:  # as many groups a row as fit
        widths = [group.outer_size.width for group in form.query(".form-group")]
        wanted = columns_that_fit(widths, form.content_region.width) if all(widths) else 0
        return form.styles.grid_size_columns == wanted

    await wait_until(pilot, columns_settled, timeout=60)
    await settled(pilot)


READY: dict[str, Callable[[Pilot], object]] = {
    "monitor": monitor_ready,
    "environment": environment_ready,
    "training": training_ready,
    "probe": probe_ready,
}
