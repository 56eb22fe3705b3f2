"""What a refresh shows: the lines drawn from the table's line cache follow every change of a row, in view or
scrolled into view later, and keep the cursor's look on its row (the cost of a refresh is measured in
benchmarks/monitor.py, not counted here)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tfgpu_tui.gpu.model import HostState, ProcessRow, Snapshot
from tfgpu_tui.ui import APP_STYLESHEET
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
    CSS_PATH = APP_STYLESHEET

    def compose(self) -> ComposeResult:
        yield ProcessTable(id="table")


def _cpu_of(line: str) -> str:
    return line.split()[6]  # PID, user, GPU, memory and its unit, SM %, CPU %


async def test_refreshes_show_every_change_in_view_and_out_of_it() -> None:
    app = TableOnly()
    async with app.run_test(size=(100, 12)) as pilot:
        table = app.query_one(ProcessTable)
        table.show_rows(build_process_rows(_snapshot({}), "pid"))
        await pilot.pause()
        before = table.lines_in_view()
        assert [_cpu_of(line) for line in before[1:]] == ["5"] * (len(before) - 1)
        # row 1 is in view, row 30 is scrolled out of it
        table.show_rows(build_process_rows(_snapshot({2: 50.0, 31: 70.0}), "pid"))
        after = table.lines_in_view()
        assert _cpu_of(after[2]) == "50" and after[:2] + after[3:] == before[:2] + before[3:]
        assert " 70 " in table.line_text(30)
        table.show_rows(build_process_rows(_snapshot({2: 50.0, 31: 70.0}), "pid"))
        assert table.lines_in_view() == after  # nothing changed
        # the cursor on the last row: the change made while out of view is there, and a new one too
        table.action_last_row()
        await pilot.pause()
        table.show_rows(build_process_rows(_snapshot({2: 50.0, 31: 71.0, 40: 9.0}), "pid"))
        bottom = {line.split()[0]: _cpu_of(line) for line in table.lines_in_view()[1:] if line.strip()}
        assert bottom["31"] == "71" and bottom["40"] == "9" and bottom["39"] == "5"
        # the cursor's look moves with it
        table.focus()
        await pilot.pause()
        table.action_first_row()
        await pilot.pause()
        first = table.render_line(1)
        table.action_cursor_down()
        assert table.render_line(1) != first and table.cursor_row == 1
