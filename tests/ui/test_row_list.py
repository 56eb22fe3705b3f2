"""The list base under the process and hosts tables: looks are each instance's own (no table shares another's
styles), and the cursor stays on its row's key when the rows are reordered."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tfgpu_tui.gpu.model import HostState, ProcessRow, Snapshot
from tfgpu_tui.ui import APP_STYLESHEET
from tfgpu_tui.ui.widgets.hosts_table import HostsTable
from tfgpu_tui.ui.widgets.process_table import ProcessTable, build_process_rows


def _snapshot() -> Snapshot:
    process = ProcessRow(7, 0, 100.0, 10.0, HostState.OK, create_time=1.0, tensorflow_loaded=True)
    return Snapshot(0.0, False, None, None, [], [process], None, [])


class TwoTables(App[None]):
    CSS_PATH = APP_STYLESHEET
    CSS = "#plain > .process-table--tf { color: #ff0000; text-style: none; }"

    def compose(self) -> ComposeResult:
        yield ProcessTable(id="themed")
        yield ProcessTable(id="plain")
        yield HostsTable(("Host", "State"), id="hosts")


def _tf_style(table: ProcessTable) -> str:
    (segment,) = [s for s in table.render_line(1) if s.text == "TF"]
    return str(segment.style)


async def test_each_table_draws_its_cells_in_its_own_styles() -> None:
    app = TwoTables()
    async with app.run_test(size=(100, 20)) as pilot:
        themed, plain = app.query_one("#themed", ProcessTable), app.query_one("#plain", ProcessTable)
        for table in (themed, plain):
            table.show_rows(build_process_rows(_snapshot()))
        await pilot.pause()
        assert "#ff0000" in _tf_style(plain) and "bold" not in _tf_style(plain).split(" on ")[0]
        assert "#ff0000" not in _tf_style(themed) and "bold" in _tf_style(themed)


async def test_the_cursor_follows_its_row_when_the_rows_are_reordered() -> None:
    app = TwoTables()
    async with app.run_test(size=(100, 20)):
        hosts = app.query_one(HostsTable)
        hosts.show_rows([(key, (key, "up")) for key in ("a", "b", "c")])
        hosts.move_to("b")
        hosts.show_rows([(key, (key, "up")) for key in ("c", "b", "a")])
        assert hosts.selected_key == "b" and hosts.cursor_row == 1
        hosts.show_rows([(key, (key, "up")) for key in ("c", "a")])  # its row gone: same position
        assert hosts.selected_key == "a"
