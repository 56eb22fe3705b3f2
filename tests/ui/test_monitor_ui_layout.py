"""The Monitor tab at 80x24 up to 200x60 on the demo with 8 GPUs: what it is for is on screen and not empty;
the compact GPU view, one-line alerts with the selected one's text, the header's short alert."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.widget import Widget

from tests.helpers.monitor_helpers import FAST, shown_pids
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.header import ALERT_TITLE_ROOM, StatusHeader
from tfgpu_tui.ui.monitor import MonitorTab, gpu_row_lines
from tfgpu_tui.ui.text_fit import whole_words
from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel
from tfgpu_tui.ui.widgets.gpu_card import GpuCard
from tfgpu_tui.ui.widgets.gpu_compact import GpuCompactList
from tfgpu_tui.ui.widgets.history_plot import HistoryPlot
from tfgpu_tui.ui.widgets.process_table import ProcessTable

GPUS = 8
DEMO_PROCESSES = 4 + GPUS - 2  # the demo's four, plus one worker on each further GPU


def demo_app(gpus: int = GPUS) -> TfgpuApp:
    return TfgpuApp(Settings(demo=True, demo_gpus=gpus, interval=FAST))


def focused_on_table(app: TfgpuApp) -> bool:
    return isinstance(app.focused, ProcessTable)


def on_screen(widget: Widget, screen: Region) -> bool:
    """The widget is shown, has room, and lies wholly inside the screen."""
    region = widget.region
    return widget.display and region.area > 0 and screen.contains_region(region)


@pytest.mark.parametrize(("width", "height"), [(80, 24), (100, 30), (120, 40), (200, 60)])
async def test_essentials_lie_inside_the_screen_and_show_something(width: int, height: int) -> None:
    app = demo_app()
    async with app.run_test(size=(width, height)) as pilot:
        tab = app.query_one(MonitorTab)
        table = app.query_one(ProcessTable)
        await wait_until(pilot, lambda: len(shown_pids(app)) == DEMO_PROCESSES and tab.ui_ms is not None)
        await pilot.pause()
        screen = app.screen.region
        host = app.query_one("#host-line")
        assert on_screen(host, screen) and "cores" in str(host.render())
        # 8 GPUs of 6 lines each never fit half the screen: every size shows the compact lines, all of them
        compact = app.query_one(GpuCompactList)
        assert tab.compact and on_screen(compact, screen) and compact.region.height == GPUS
        assert [device.index for device in compact.devices] == list(range(GPUS))
        lines = str(compact.render()).splitlines()
        assert len(lines) == GPUS and all("Util" in line and "°C" in line and "W" in line for line in lines)
        alerts = app.query_one(AlertsPanel)
        assert on_screen(alerts, screen) and alerts.region.height >= 1
        assert "CPU fallback: PID 42210" in alerts.lines_in_view()[0]
        assert on_screen(table, screen)
        assert len(table.visible_rows) >= min(DEMO_PROCESSES, 5 if height == 24 else height // 4)
        assert table.visible_rows.start == 0 and "train.py" in table.line_text(0)
        detail = app.query_one("#process-detail")
        assert on_screen(detail, screen) and "python train.py --epochs 50 --batch-size 256" in str(
            detail.render()
        )
        header = app.query_one(StatusHeader)
        text = str(header.render())
        assert on_screen(header, screen) and len(text) <= width - 2
        # the header keeps at least the alert's first whole words beside the Python in use; the panel has all
        title = "CPU fallback: PID 42210 train_small.py"
        assert whole_words(title, ALERT_TITLE_ROOM).removesuffix(" …") in text
        assert title in text or width < 120


async def test_two_gpus_get_cards_where_they_leave_the_table_room_and_lines_where_not() -> None:
    app = demo_app(2)
    async with app.run_test(size=(80, 24)) as pilot:
        tab = app.query_one(MonitorTab)
        await wait_until(pilot, lambda: len(shown_pids(app)) == 4 and tab.ui_ms is not None)
        assert tab.compact and not app.query(GpuCard)  # cards are not even built while hidden
        assert len(app.query_one(ProcessTable).visible_rows) == 4
        await pilot.resize_terminal(120, 40)

        def cards_with_room() -> int:  # built on the resize, laid out a frame later
            return sum(1 for card in app.query(GpuCard) if card.region.area > 0)

        await wait_until(pilot, lambda: not tab.compact and len(app.query(GpuCard)) == cards_with_room() == 2)
        assert len(app.query_one(ProcessTable).visible_rows) == 4


async def test_c_toggles_the_compact_view_and_the_choice_sticks() -> None:
    app = demo_app(2)
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(MonitorTab)
        await wait_until(
            pilot, lambda: len(app.query(GpuCard)) == 2 and isinstance(app.focused, ProcessTable)
        )
        assert not tab.compact
        await pilot.press("c")
        await pilot.pause()
        assert tab.compact and app.query_one(GpuCompactList).region.height == 2
        assert not app.query_one("#gpu-rows").display or app.query_one("#gpu-rows").region.area == 0
        await pilot.resize_terminal(160, 52)  # a new height does not undo the user's choice
        await pilot.pause()
        assert tab.compact
        await pilot.press("c")
        await wait_until(pilot, lambda: not tab.compact and app.query_one(GpuCard).region.area > 0)


async def test_alerts_are_one_line_each_and_the_selected_one_shows_its_text_and_fix() -> None:
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(AlertsPanel)
        await wait_until(pilot, lambda: len(shown_pids(app)) == DEMO_PROCESSES and panel.region.height > 0)
        assert panel.region.height == len(panel.ordered) == 3  # one line each
        assert all("[k kill]" in line for line in panel.lines_in_view())
        detail = app.query_one("#alert-detail")
        assert not detail.display  # the table keeps the room until the alerts are read
        await wait_until(pilot, lambda: focused_on_table(app))
        await pilot.press("a")  # to the alerts
        assert app.focused is panel
        await pilot.press("down")
        await pilot.pause()
        selected = panel.selected
        assert selected is not None and selected.kind == "stale_vram"
        shown = " ".join(str(detail.render()).split())
        assert detail.display and detail.region.area > 0 and app.screen.region.contains_region(detail.region)
        table = app.query_one(ProcessTable)
        assert len(table.visible_rows) >= 5 and app.screen.region.contains_region(table.region)
        assert " ".join(selected.message.split()) in shown and "Fix:" in shown
        assert " ".join(selected.fix.split())[:40] in shown
        await pilot.press("escape")  # back to the table, which gets its room back
        await pilot.pause()
        assert isinstance(app.focused, ProcessTable) and not detail.display
        assert len(app.query_one(ProcessTable).visible_rows) >= 5


async def test_at_160x48_the_lines_the_table_does_not_need_go_to_the_plots() -> None:
    app = demo_app(2)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(app.query(HistoryPlot)) == 2 and len(shown_pids(app)) == 4)
        await pilot.pause()
        plots = list(app.query(HistoryPlot))
        assert all(plot.region.height > 6 for plot in plots)  # taller than the 6 lines of a card
        assert all(app.screen.region.contains_region(plot.region) for plot in plots)
        assert len(app.query_one(ProcessTable).visible_rows) == 4  # every process still shows


def test_a_busy_table_keeps_its_lines() -> None:
    assert gpu_row_lines(44, 2, 4, 3) > gpu_row_lines(44, 2, 30, 3) == 6
