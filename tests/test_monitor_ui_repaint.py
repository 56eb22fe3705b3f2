"""What a refresh repaints: only the table rows in view whose cells changed."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tfgpu_tui.gpu.model import HostState, ProcessRow, Snapshot
from tfgpu_tui.ui.monitor import CSS_PATH as MONITOR_CSS
from tfgpu_tui.ui.widgets.process_table import ProcessTable, build_process_rows

ROWS = 40


def _snapshot(cpu_of: dict[int, float]) -> Snapshot:
    processes = [
        ProcessRow(
            pid, 0, 1000.0 - pid, 10.0, HostState.OK, cpu_percent=cpu_of.get(pid, 5.0), create_time=1.0
        )
        for pid in range(1, ROWS + 1)
    ]
    return Snapshot(0.0, False, None, None, [], processes, None, [])


class TableOnly(App[None]):
    CSS_PATH = MONITOR_CSS

    def compose(self) -> ComposeResult:
        yield ProcessTable(id="table")


async def test_only_changed_rows_in_view_are_repainted() -> None:
    app = TableOnly()
    async with app.run_test(size=(100, 12)) as pilot:
        table = app.query_one(ProcessTable)
        table.show_rows(build_process_rows(_snapshot({}), "pid"))
        await pilot.pause()
        repainted: list[int] = []
        plain_refresh_row = table.refresh_row
        table.refresh_row = lambda index: (repainted.append(index), plain_refresh_row(index))[1]  # type: ignore[method-assign]
        # row 1 is in view, row 30 is scrolled out of it; the others are unchanged
        table.show_rows(build_process_rows(_snapshot({2: 50.0, 31: 70.0}), "pid"))
        assert repainted == [1]
        assert str(table.rows_shown[1].cells[5]) == "50" and str(table.rows_shown[30].cells[5]) == "70"
        assert " 50 " in table.line_text(1) and " 70 " in table.line_text(30)
        table.show_rows(build_process_rows(_snapshot({2: 50.0, 31: 70.0}), "pid"))
        assert repainted == [1]  # nothing changed: nothing repainted
        # scrolled to the bottom, a change there is repainted once it is in view
        table.scroll_end(animate=False)
        await pilot.pause()
        table.show_rows(build_process_rows(_snapshot({2: 50.0, 31: 71.0}), "pid"))
        assert repainted == [1, 30]
