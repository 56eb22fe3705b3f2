"""No value cut mid-word (issue 30 item 5): every line of every tab at 80x24, 120x40 and 160x48 read from
the screen; the Training status keeps "20.0 steps/s" together, and the Batch probe's running trial reads
"running", not "runnin"."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable
from textual_plotext import PlotextPlot

from tests.helpers.screen_text import screen_lines
from tests.helpers.tab_ready import READY as SNAPSHOT_READY
from tests.helpers.tab_ready import probe_ready, settled
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.batch_probe import BatchProbeTab
from tfgpu_tui.ui.environment import EnvironmentTab
from tfgpu_tui.ui.widgets.finding_detail import FindingDetail
from tfgpu_tui.ui.widgets.key_footer import KeyFooter
from tfgpu_tui.ui.widgets.training_panes import RunStatus


async def test_training_status_breaks_only_between_values_at_80x24() -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="training")
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.query_one("#training-status", RunStatus)
        await wait_until(pilot, lambda: "steps/s" in str(status.render()), timeout=60)
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
        await wait_until(pilot, lambda: table.row_count > 0, timeout=60)
        assert (
            table.columns[next(k for k in table.columns if k.value == "result")].get_render_width(table) >= 7
        )
        await pilot.press("escape")  # cancels the rest
        await wait_until(pilot, lambda: not tab.running, timeout=60)


async def test_the_probe_plot_gives_way_to_its_table_under_30_lines() -> None:
    for size, plot_shown in (((80, 24), False), ((120, 40), True)):
        app = TfgpuApp(Settings(demo=True), initial_tab="probe")
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            plot, note = app.query_one("#probe-plot"), app.query_one("#probe-plot-note")
            await wait_until(pilot, lambda p=plot, n=note: p.region.height > 0 or n.region.height > 0)
            assert (plot.region.height >= 8) is plot_shown, (size, plot.region)
            assert (note.region.height > 0) is not plot_shown, size


# Every line of every tab, at the sizes of issue 30. A cut shows as an ellipsis glued to the letters before it
# (Textual's own ellipsis; the app's shortening keeps whole words and sets " …" apart), as a word running into
# the screen's right edge or into a box's side, or as a widget whose lines run past its right edge (it
# scrolls sideways). At the screen's edge, a plot's axis labels (plotext draws them whole) and the footer's
# keys (KeyFooter lays out whole labels) may end on the last column.
SIZES = [(80, 24), (120, 40), (160, 48)]
WORD_CHAR = re.compile(r"[\w(\[{,.:;/\-+%=<]")  # not a closing bracket or quote: those end a word
GLUED_ELLIPSIS = re.compile(r"\S…")
BOX_SIDES = "│┃║"
WHOLE_TO_THE_EDGE = (PlotextPlot, KeyFooter)


def cuts(app: TfgpuApp, lines: list[str]) -> list[str]:
    """Each place in `lines` (the app's screen) where a word looks cut, with its line."""
    found = []
    for number, line in enumerate(lines):
        places = [match.start() + 1 for match in GLUED_ELLIPSIS.finditer(line)]
        edge = len(line) - 1
        if line and WORD_CHAR.match(line[edge]):
            widget, _ = app.screen.get_widget_at(edge, number)
            places += [] if isinstance(widget, WHOLE_TO_THE_EDGE) else [edge]
        places += [
            column
            for column in range(1, len(line))
            if line[column] in BOX_SIDES and WORD_CHAR.match(line[column - 1])
        ]
        found += [f"line {number} column {column}: {line.rstrip()}" for column in places]
    return found


def sideways(app: TfgpuApp) -> list[str]:
    """The widgets on screen whose lines run past their right edge (they scroll sideways)."""
    return [
        f"{widget!r} scrolls {widget.max_scroll_x} cells sideways"
        for widget in app.screen.query("*")
        if widget.region.area and widget.allow_horizontal_scroll
    ]


async def environment_done(pilot: Pilot) -> None:
    """Every check run, the findings listed with the first one's detail."""
    tab = pilot.app.query_one(EnvironmentTab)
    table = tab.query_one("#env-findings", DataTable)
    detail = tab.query_one(FindingDetail)

    def shown() -> bool:
        finding = tab.selected_finding()
        return bool(tab.report and tab.report.complete and table.row_count) and detail.finding is finding

    await wait_until(pilot, shown, 60)
    await settled(pilot)


async def probe_done(pilot: Pilot) -> None:
    """A whole probe run on the simulated GPUs, its results in the table, plot and summary."""
    app, tab = pilot.app, pilot.app.query_one(BatchProbeTab)
    await wait_until(pilot, lambda: app.focused is not None and app.focused.id == "probe-start", timeout=60)
    await pilot.press("ctrl+r")
    await wait_until(pilot, lambda: tab.result is not None and not tab.running, timeout=60)
    await probe_ready(pilot)


# The snapshots' waits, but for a probe that has run and every check done (the snapshot reveals a finding).
READY: dict[str, Callable[[Pilot], object]] = {
    **SNAPSHOT_READY,
    "environment": environment_done,
    "probe": probe_done,
}


@pytest.mark.usefixtures("quick_simulated_trials")
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("tab", list(READY))
async def test_no_value_is_cut_on_any_line(tab: str, size: tuple[int, int]) -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab=tab)
    async with app.run_test(size=size) as pilot:
        await READY[tab](pilot)
        lines = screen_lines(app)
        found = [*cuts(app, lines), *sideways(app)]
        assert not found, "\n".join([*found, *lines])


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_a_long_path_in_a_finding_breaks_before_a_slash(size: tuple[int, int]) -> None:
    """The CUDA libraries finding names library files by their whole paths: at 160x48 one ran to the
    pane's edge and its end folded onto the next line ("libcublas.so.1" / "2,")."""
    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=size) as pilot:
        await environment_done(pilot)
        tab = app.query_one(EnvironmentTab)
        tab.reveal("cuda_libraries")
        why = tab.query_one("#env-why")
        await wait_until(  # fitted to the pane's width (the path is longer than the pane at every size)
            pilot,
            lambda: (
                why.content_region.width > 0
                and "libcublas.so.12" in why.render().plain
                and max(map(len, why.render().plain.split())) <= why.content_region.width
            ),
            timeout=60,
        )
        await pilot.pause()
        detail = app.query_one(FindingDetail)
        seen: list[str] = []
        bottom, page = int(detail.max_scroll_y), max(1, detail.scrollable_content_region.height)
        for top in sorted({*range(0, bottom, page), bottom}):  # every part of the pane (it scrolls at 80x24)
            detail.scroll_to(y=top, animate=False)
            await pilot.pause()
            lines = screen_lines(app)
            assert not cuts(app, lines), "\n".join([*cuts(app, lines), *lines])
            seen += lines
        assert any("/libcublas.so.12," in line for line in seen), "\n".join(seen)
