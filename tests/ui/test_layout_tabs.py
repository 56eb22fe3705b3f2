"""Every tab usable from 80x24 to 200x60 (issue 11): the Environment, Training and Batch probe tabs, the help
screen and the command palette, through the pilot on the demo source. "Visible" means the whole widget is on
the screen and not clipped by a scrolling parent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, Static

from tests.helpers.paths import FIXTURES
from tests.helpers.tab_ready import probe_ready
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.batch_probe import BatchProbeTab
from tfgpu_tui.ui.environment import MIN_FOUND_CHARS, EnvironmentTab, column_widths
from tfgpu_tui.ui.help_screen import HelpScreen
from tfgpu_tui.ui.training import TrainingTab
from tfgpu_tui.ui.widgets.epoch_table import EpochTable, pick_columns
from tfgpu_tui.ui.widgets.finding_detail import FindingDetail
from tfgpu_tui.ui.widgets.probe_form import columns_that_fit
from tfgpu_tui.ui.widgets.training_plots import EpochLossPlot, StepLossPlot

SIZES = [(80, 24), (100, 30), (120, 40), (200, 60)]
TRAINING_FIXTURES = FIXTURES / "training"
FORM_CONTROLS = (
    "#probe-model",
    "#probe-device",
    "#probe-budget",
    "#probe-steps",
    "#probe-max-batch",
    "#probe-mixed",
    "#probe-compare",
    "#probe-start",
    "#probe-cancel",
)


def visible(widget: Widget) -> bool:
    """Whether all of `widget` is drawn: a non-empty region inside the screen, not clipped by a parent."""
    region = widget.region
    screen = widget.screen
    if region.area == 0 or not screen.region.contains_region(region):
        return False
    return screen.find_widget(widget).visible_region == region


def lines_of(widget: Widget, height: int) -> list[str]:
    """The first `height` lines the widget draws, as plain text."""
    width = widget.content_region.width
    return [strip.text for strip in widget.render_lines(Region(0, 0, width, height))]


def test_epoch_columns_by_priority_then_whatever_still_fits() -> None:
    widths = {"epoch": 7, "time": 6, "accuracy": 10, "loss": 8, "val_accuracy": 14, "val_loss": 10}
    assert pick_columns(widths, 100) == ["epoch", "loss", "val_loss", "time", "accuracy", "val_accuracy"]
    assert pick_columns(widths, 35) == ["epoch", "loss", "val_loss", "time"]
    assert pick_columns(widths, 30) == ["epoch", "loss", "val_loss"]  # time does not fit; nothing else does
    assert pick_columns(widths, 40) == ["epoch", "loss", "val_loss", "time"]  # accuracy needs 10 more
    assert pick_columns(widths, 41) == ["epoch", "loss", "val_loss", "time", "accuracy"]
    assert pick_columns({"epoch": 7, "time": 6, "lr": 4}, 11) == ["epoch", "lr"]  # a narrow one further down
    assert pick_columns(widths, 3) == ["epoch"]  # always the first


def test_environment_columns_share_the_width() -> None:
    titles = ["NVIDIA driver", "GPU architecture compiled into TensorFlow"]
    check, found = column_widths(78, titles)  # 80 columns, stacked
    assert check + found + 9 == 78 and found >= MIN_FOUND_CHARS and check < 41
    check, found = column_widths(200, titles)
    assert check == 41 and found == 150  # wide: every title whole
    assert column_widths(10, titles)[1] >= MIN_FOUND_CHARS


def test_probe_form_groups_per_row() -> None:
    widths = [59, 54, 56]
    assert columns_that_fit(widths, 78) == 1
    assert columns_that_fit(widths, 115) == 2  # columns max(59, 56) and 54, a gutter of 2
    assert columns_that_fit(widths, 114) == 1
    assert columns_that_fit(widths, 198) == 3


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_environment_tab_fits(size: tuple[int, int]) -> None:
    app = TfgpuApp(Settings(demo=True, python="python3"), initial_tab="environment")
    async with app.run_test(size=size) as pilot:
        tab = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=60)
        tab.reveal("cuda_libraries")
        fix_shown = app.query_one("#env-fix", Static)

        def revealed() -> bool:  # the selection reaches the detail, laid out: waited for, not a fixed 0.2 s
            finding = tab.selected_finding()
            drawn = visible(fix_shown) and lines_of(fix_shown, 1)[0].strip() == finding.fix
            return finding.id == "cuda_libraries" and drawn and visible(app.query_one(FindingDetail))

        await wait_until(pilot, revealed)
        table = app.query_one("#env-findings", DataTable)
        detail = app.query_one(FindingDetail)
        assert visible(app.query_one("#env-status")) and visible(table) and visible(detail)
        assert table.region.height >= 5, "the list shows at least 4 findings"
        assert table.max_scroll_x == 0, "no sideways scrolling (and no stray scrollbar) in the list"
        check, found = (column.width for column in list(table.columns.values())[1:])
        assert found >= MIN_FOUND_CHARS and check >= 12
        stacked = size[0] < EnvironmentTab.NARROW_BELOW
        assert (detail.region.y >= table.region.bottom) == stacked
        assert (detail.region.x >= table.region.right) == (not stacked)
        # The selected finding's fix: whole, on its own line, on screen without scrolling.
        fix = tab.selected_finding().fix
        assert tab.selected_finding().id == "cuda_libraries" and fix
        fix_widget = app.query_one("#env-fix", Static)
        assert visible(fix_widget) and fix_widget.region.width >= len(fix)
        assert lines_of(fix_widget, 1)[0].strip() == fix


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_training_tab_fits(size: tuple[int, int]) -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="training")
    async with app.run_test(size=size) as pilot:
        table = app.query_one(EpochTable)
        await wait_until(pilot, lambda: table.row_count >= 3, timeout=60)
        boxes = ("#training-status", "#training-context", "#training-problems-box")

        def laid_out() -> bool:  # the tab settles over a few frames: waited for, not a fixed 0.3 s
            shown = all(visible(app.query_one(selector)) for selector in boxes)
            focus_in_tab = app.focused is not None and app.query_one(TrainingTab) in app.focused.ancestors
            return shown and visible(table) and table.region.height >= 4 and focus_in_tab  # its keys work

        await wait_until(pilot, laid_out)
        for selector in boxes:
            assert visible(app.query_one(selector)), selector
        assert visible(table) and table.region.height >= 4
        assert table.shown_columns[:4] == ["epoch", "loss", "val_loss", "time"]
        assert table.max_scroll_x == 0, "the columns that do not fit are left out, not cut"
        plots = [app.query_one(EpochLossPlot), app.query_one(StepLossPlot)]
        if size[1] < TrainingTab.SHORT_BELOW:
            assert not any(plot.display and plot.region.area for plot in plots)
            await pilot.press("g")  # shown on request
            await wait_until(pilot, lambda: all(visible(plot) for plot in plots))  # laid out (no fixed sleep)
        assert all(visible(plot) and plot.region.height >= 8 for plot in plots)  # 3 rows of data at 80x24
        assert visible(table), "the epoch table stays on screen with the plots"


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_training_problem_fix_shows_without_scrolling(tmp_path: Path, size: tuple[int, int]) -> None:
    log = tmp_path / "train.log"
    shutil.copy(TRAINING_FIXTURES / "keras3_nan_killed.log", log)
    app = TfgpuApp(Settings(demo=True, log_path=log, log_path_given=True), initial_tab="training")
    async with app.run_test(size=size) as pilot:
        problems = app.query_one("#training-problems", Static)
        await wait_until(pilot, lambda: "NAN_LOSS" in str(problems.render()), timeout=60)
        box = app.query_one("#training-problems-box")

        def fix_shown() -> bool:  # the box settles over a few frames: waited for, not a fixed 0.3 s
            return visible(box) and "clipnorm" in "\n".join(lines_of(problems, box.content_region.height))

        await wait_until(pilot, fix_shown)
        assert visible(box) and box.scroll_y == 0
        shown = "\n".join(lines_of(problems, box.content_region.height))
        assert "NAN_LOSS" in shown and "clipnorm" in shown, shown


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_batch_probe_tab_fits(size: tuple[int, int]) -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="probe")
    async with app.run_test(size=size) as pilot:
        controls = [app.query_one(selector) for selector in FORM_CONTROLS]
        await wait_until(pilot, lambda: all(visible(control) for control in controls))  # the form settles
        start = app.query_one("#probe-start", Button)
        assert app.screen.get_widget_at(*start.region.center)[0] is start
        short = size[1] < BatchProbeTab.SHORT_BELOW  # the plot gives way to its table and a note
        plot_or_note = "#probe-plot-note" if short else "#probe-plot"
        for selector in ("#probe-status", "#probe-trials", plot_or_note, "#probe-summary"):
            widget = app.query_one(selector)
            assert visible(widget) and widget.region.height >= 1, selector
        table, plot = app.query_one("#probe-trials"), app.query_one(plot_or_note)
        assert table.region.height >= 4 and plot.region.height >= (1 if short else 6)
        stacked = size[0] < BatchProbeTab.NARROW_BELOW
        assert (plot.region.y >= table.region.bottom) == stacked


@pytest.mark.parametrize("size", [(80, 24), (80, 16)], ids=["80x24", "80x16"])
async def test_batch_probe_controls_reachable_by_tab_and_scrolled_into_view(size: tuple[int, int]) -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="probe")
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.focused is app.query_one("#probe-start"))  # the tab's default
        await probe_ready(pilot)  # the form laid out
        model = app.query_one("#probe-model", Input)
        await wait_until(pilot, lambda: model.focus() and app.focused is model)
        reached = []
        for _ in range(len(FORM_CONTROLS) + 2):
            focused = app.focused
            assert focused is not None
            if focused.id in {selector[1:] for selector in FORM_CONTROLS}:
                reached.append(focused.id)
                # the scroll into view is animated for a frame or two: waited for, not a fixed 0.1 s
                await wait_until(pilot, lambda widget=focused: visible(widget))
            await pilot.press("tab")
        # Every enabled control, in reading order (Cancel is disabled until a probe runs).
        assert reached[: len(FORM_CONTROLS) - 1] == [selector[1:] for selector in FORM_CONTROLS[:-1]]


async def test_help_screen_fits_80x24() -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        box = app.screen.query_one("#help-box")
        title = app.screen.query_one("#help-title", Static)
        scroll = app.screen.query_one("#help-scroll")
        parts = (box, title, scroll)
        await wait_until(pilot, lambda: all(map(visible, parts)) and scroll.max_scroll_y > 0)  # laid out
        assert visible(box) and box.region == app.screen.region
        assert visible(title) and "esc closes" in str(title.render())
        assert visible(scroll) and scroll.max_scroll_y > 0  # longer than the screen: it scrolls
        scroll.scroll_end(animate=False)
        await wait_until(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y)  # scrolled (no fixed sleep)
        await pilot.pause()
        assert visible(title)


async def test_command_palette_fits_80x24() -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette))
        for char in "Copy":
            await pilot.press(char)
        palette = app.screen
        # the palette adds its search results in batches (every 0.25 s): waited for, not a fixed 0.5 s
        await wait_until(pilot, lambda: palette.query_one("CommandList").option_count >= 2)
        search = palette.query_one(Input)
        assert visible(search)
        options = palette.query_one("CommandList")
        assert visible(options) and options.option_count >= 2
        assert options.region.bottom <= 24
