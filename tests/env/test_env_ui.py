"""The Environment tab through the pilot: findings, detail and fix, spinner, re-run, save, link to Monitor."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from tests.helpers.monitor_helpers import record_notifications
from tests.helpers.paths import FIXTURES
from tests.helpers.waiting import wait_until
from tfgpu_tui.env.recorded import load_recording
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.environment import EnvironmentTab
from tfgpu_tui.ui.widgets.finding_detail import FindingDetail

FIXTURES = FIXTURES / "env"


async def wait_until_complete(pilot, app: TfgpuApp) -> EnvironmentTab:
    """Wait for the full report and for the findings table to have focus."""
    tab = app.query_one(EnvironmentTab)
    table = app.query_one("#env-findings", DataTable)
    await wait_until(pilot, lambda: tab.report is not None and tab.report.complete and app.focused is table)
    return tab


def text_of(app: TfgpuApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def test_demo_environment_shows_findings_and_links_to_monitor() -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=(140, 40)) as pilot:
        tab = await wait_until_complete(pilot, app)
        table = app.query_one("#env-findings", DataTable)
        assert table.row_count == len(tab.report.findings)
        status = text_of(app, "#env-status")
        assert "SIMULATED" in status and "FAILURE" in status
        # The header carries the environment's failures.
        await wait_until(pilot, lambda: any(alert.kind == "env_cuda_libraries" for alert in app.all_alerts))
        # Move to the GPU-processes finding: its detail and fix show, and Enter opens the Monitor tab.
        ids = [finding.id for finding in tab.report.findings]
        await pilot.press("ctrl+home")  # the list opened on the first failure: back to the top
        for _ in range(ids.index("gpu_processes")):
            await pilot.press("down")
        detail = app.query_one(FindingDetail).text()
        assert "PID 39012 on GPU 1" in detail  # the Monitor's stale kernel: one simulated machine
        assert "Enter opens the Monitor tab" in detail
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.active_tab == "monitor")


async def test_the_list_opens_on_the_first_failure_with_its_fix_shown() -> None:
    """It opened on the first check (a passing one) in --demo (issue 39)."""
    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=(140, 40)) as pilot:
        tab = await wait_until_complete(pilot, app)
        failures = [finding.id for finding in tab.report.findings if finding.status.value == "failure"]
        first_failure = failures[0]
        await wait_until(pilot, lambda: getattr(tab.selected_finding(), "id", "") == first_failure)
        assert first_failure == "cuda_libraries"
        detail = app.query_one(FindingDetail).text()
        assert "failure" in detail and "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64" in detail


async def test_save_report_writes_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the report is saved in the working directory
    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until_complete(pilot, app)
        shown = record_notifications(app)
        await pilot.press("s")
        await pilot.pause()
        written = list(tmp_path.glob("tfgpu-env-report-*.md"))
        assert len(written) == 1
        text = written[0].read_text()
        assert text.startswith("# tfgpu-tui environment report") and "export LD_LIBRARY_PATH" in text
        assert any(str(written[0]) in message for _, message in shown)


async def test_spinner_while_probe_runs_then_rerun(monkeypatch: pytest.MonkeyPatch) -> None:
    facts, inspection = load_recording(FIXTURES / "cpu_build_on_gpu.json")
    release = threading.Event()
    calls: list[str] = []

    def slow_probe(python: str, timeout: float):
        calls.append(python)
        release.wait(60)  # until the test releases it (the limit only keeps a failed test from hanging)
        return inspection

    monkeypatch.setattr(EnvironmentTab, "collect", staticmethod(lambda python: facts))
    monkeypatch.setattr(EnvironmentTab, "inspect", staticmethod(slow_probe))
    app = TfgpuApp(Settings(python="/opt/py/bin/python"), initial_tab="environment")
    async with app.run_test(size=(140, 40)) as pilot:
        tab = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: tab.report is not None)
        assert not tab.report.complete
        assert "Importing TensorFlow with /opt/py/bin/python" in text_of(app, "#env-status")
        pending = [finding for finding in tab.report.findings if finding.status.value == "pending"]
        assert pending and all(finding.icon == "…" for finding in pending)
        release.set()
        await wait_until(pilot, lambda: tab.report.complete)
        assert "FAILURE" in text_of(app, "#env-status")
        release.clear()
        await pilot.press("r")
        await wait_until(pilot, lambda: len(calls) == 2)
        assert "Importing TensorFlow" in text_of(app, "#env-status") or "Collecting" in text_of(
            app, "#env-status"
        )
        release.set()
        await wait_until(pilot, lambda: tab.report.complete)
        assert calls == ["/opt/py/bin/python", "/opt/py/bin/python"]


async def test_c_copies_the_selected_fix_which_a_short_fix_shows_on_one_line() -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=(80, 24)) as pilot:
        tab = await wait_until_complete(pilot, app)
        ids = [finding.id for finding in tab.report.findings]
        # the list opens on the first failure
        await wait_until(pilot, lambda: getattr(tab.selected_finding(), "id", "") == "cuda_libraries")
        fix = tab.report.findings[ids.index("cuda_libraries")].fix
        shown = record_notifications(app)
        await pilot.press("c")
        assert app.clipboard == fix
        # It cannot know the terminal honoured OSC 52: it says what it did, not "copied".
        title, message = shown[-1]
        assert "sent to the terminal's clipboard (OSC 52)" in title
        assert "copied" not in f"{title} {message}".lower()
        # The fix is drawn on one line of its own (no wrap inside a token), whole.
        await pilot.pause()
        widget = app.query_one("#env-fix", Static)
        assert widget.size.height == len(fix.splitlines())
        assert str(widget.render()).splitlines() == fix.splitlines()
        # A finding without a fix: nothing copied, a warning instead.
        await pilot.press("home")
        await pilot.press("c")
        assert app.clipboard == fix


async def test_a_resize_while_the_tab_is_hidden_refits_the_table_when_it_is_shown_again() -> None:
    """80x24 on the Environment tab, the Monitor shown, the terminal widened to 120x40, back to the
    Environment: the columns are those of the new width, and a cut text ends in an ellipsis."""
    from tfgpu_tui.ui.environment import column_widths

    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=(80, 24)) as pilot:
        tab = await wait_until_complete(pilot, app)
        table = app.query_one("#env-findings", DataTable)

        def widths() -> tuple[int, int]:  # of the Check and Found columns
            return table.ordered_columns[1].width, table.ordered_columns[2].width

        narrow = widths()
        await pilot.press("2")
        await wait_until(pilot, lambda: app.active_tab == "monitor")
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.press("1")
        titles = [finding.title for finding in tab.report.findings]
        await wait_until(
            pilot,
            lambda: table.size.width > 0 and widths() == column_widths(table.size.width, titles) != narrow,
        )
        found_width = widths()[1]
        for finding in tab.report.findings:
            cell = str(table.get_cell(finding.id, table.ordered_columns[2].key))
            assert len(cell) <= found_width
            assert cell == finding.detail.splitlines()[0] or cell.endswith("…")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_a_long_fix_is_whole_on_screen_on_rows_of_its_own(
    monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """A fix longer than the terminal is wrapped, not cut: all of it on screen without scrolling, each line
    within the width, on rows nothing else shares (so a mouse copy of those rows is the command)."""
    from tfgpu_tui.ui.widgets.finding_detail import FixText, wrap_fix

    facts, inspection = load_recording(FIXTURES / "cpu_build_on_gpu.json")
    monkeypatch.setattr(EnvironmentTab, "collect", staticmethod(lambda python: facts))
    monkeypatch.setattr(EnvironmentTab, "inspect", staticmethod(lambda python, timeout: inspection))
    app = TfgpuApp(Settings(python="/home/ana/venvs/tf/bin/python"), initial_tab="environment")
    async with app.run_test(size=size) as pilot:
        tab = await wait_until_complete(pilot, app)
        tab.reveal("cpu_only_build")
        fix = tab.report.findings[[f.id for f in tab.report.findings].index("cpu_only_build")].fix
        assert len(fix) > size[0]
        widget = app.query_one(FixText)
        await wait_until(pilot, lambda: widget.fix == fix and widget.region.height > 1)
        await pilot.pause()
        shown = str(widget.render()).splitlines()
        assert shown == wrap_fix(fix, widget.content_region.width)
        assert all(len(line) <= size[0] - 2 for line in shown)
        assert widget.region.x <= 1 and widget.region.right >= size[0] - 1, "the rows hold only the fix"
        footer_top = size[1] - 1
        assert widget.region.y > 0 and widget.region.bottom <= footer_top, "whole, without scrolling"
        assert widget.region.height == len(shown)


@pytest.mark.parametrize("height", [20, 22, 24])
async def test_the_selected_finding_is_brought_into_view_below_the_header(height: int) -> None:
    """Below 100 columns the list shows a few findings under its header. A check that ran while the tab was
    laid out again (a loaded machine) left the selected finding one line below the view: the scroll counted
    the header's line as a row's. From every scroll position, the selected finding is brought into view."""
    from tfgpu_tui.ui.environment import FindingsTable

    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=(80, height)) as pilot:
        tab = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=60)
        table = app.query_one(FindingsTable)
        tab.reveal("cuda_libraries")

        def shown() -> bool:  # selected, and the list laid out and scrolled to it
            first, rows = int(table.scroll_y), table.size.height - table.header_height
            selected = getattr(tab.selected_finding(), "id", "") == "cuda_libraries"
            return selected and table.max_scroll_y > 0 and first <= table.cursor_row < first + rows

        await wait_until(pilot, shown, timeout=60)
        rows_shown = table.size.height - table.header_height
        assert table.cursor_row >= rows_shown  # below the first screenful
        for top in range(int(table.max_scroll_y) + 1):
            table.scroll_to(y=top, animate=False, immediate=True)
            table.keep_cursor_in_view()
            first = int(table.scroll_y)
            assert first <= table.cursor_row < first + rows_shown, (top, first, table.cursor_row)


async def test_at_160_columns_the_found_column_gets_the_room() -> None:
    """It was cut at about 40 characters beside a detail pane with room to spare (issue 39)."""
    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until_complete(pilot, app)
        table = app.query_one("#env-findings", DataTable)
        await wait_until(pilot, lambda: table.size.width >= 90)
        check, found = (column.width for column in list(table.columns.values())[1:])
        assert found >= 45 and table.max_scroll_x == 0, (check, found)
