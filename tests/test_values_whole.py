"""No value cut mid-word at 80x24 (issue 30 item 5): the Training status keeps "20.0 steps/s" together, and
the Batch probe's running trial reads "running", not "runnin"."""

from __future__ import annotations

import re

from textual.widgets import DataTable
from waiting import wait_until

from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.batch_probe import BatchProbeTab
from tfgpu_tui.ui.widgets.training_panes import RunStatus


async def test_training_status_breaks_only_between_values_at_80x24() -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="training")
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.query_one("#training-status", RunStatus)
        await wait_until(pilot, lambda: "steps/s" in str(status.render()), timeout=30)
        lines = [line.strip() for line in str(status.render()).splitlines()]
        for line in lines:
            assert not re.match(r"(steps/s|samples/s|/step|ETA\b)", line), f"a value was split: {lines}"
        assert any(re.search(r"\d+\.\d steps/s", line) for line in lines), lines


async def test_a_running_trial_reads_running_at_80x24() -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="probe")
    async with app.run_test(size=(80, 24)) as pilot:
        tab = app.query_one(BatchProbeTab)
        table = app.query_one("#probe-trials", DataTable)
        await wait_until(pilot, lambda: app.focused is not None and app.focused.id == "probe-start")
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: table.row_count > 0, timeout=30)
        assert (
            table.columns[next(k for k in table.columns if k.value == "result")].get_render_width(table) >= 7
        )
        await wait_until(pilot, lambda: tab.result is not None and not tab.running, timeout=60)


async def test_the_probe_plot_gives_way_to_its_table_under_30_lines() -> None:
    for size, plot_shown in (((80, 24), False), ((120, 40), True)):
        app = TfgpuApp(Settings(demo=True), initial_tab="probe")
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            plot, note = app.query_one("#probe-plot"), app.query_one("#probe-plot-note")
            await wait_until(pilot, lambda p=plot, n=note: p.region.height > 0 or n.region.height > 0)
            assert (plot.region.height >= 8) is plot_shown, (size, plot.region)
            assert (note.region.height > 0) is not plot_shown, size
