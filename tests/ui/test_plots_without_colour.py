"""Plots readable without colour and at 80x24 (issue 39): each series its own marker, the legend in the title
(never over the data), whole-number axes with units on the probe plot, and the epoch table on the newest
epochs when `g` shows the plots. Pilot tests, then the real thing: tmux, NO_COLOR=1, 80x24 and 160x48."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.helpers.screen_text import screen_lines
from tests.helpers.tmux_terminal import NO_TMUX, Terminal
from tests.helpers.waiting import wait_for, wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.demo_log import keras3_epoch
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.batch_probe import BatchProbeTab
from tfgpu_tui.ui.widgets.epoch_table import EpochTable

pytestmark = pytest.mark.e2e  # real child processes

EPOCHS = 17
PLOTEXT_LEGEND = ("⢕⢕ loss", "⢕⢕ val_loss")  # what plotext drew over the canvas, top-left
EPOCH_TITLE = "loss per epoch: ⠒⠒ loss  x val_loss"
PROBE_TITLE = "• peak MB  + samples/s (right)  ─ budget"


def seventeen_epochs(tmp_path: Path) -> Path:
    """A Keras 3 log of a run at epoch 17 of 20."""
    log = tmp_path / "train.log"
    log.write_text("".join("".join(keras3_epoch(epoch, 20, 120, 24, 50)) for epoch in range(1, EPOCHS + 1)))
    return log


def axis_labels(lines: list[str]) -> list[str]:
    """The probe plot's tick labels: left of each `┤`, right of each `├`, and the line under its frame."""
    left = [line.split("┤")[0].split()[-1] for line in lines if "┤" in line and line.split("┤")[0].split()]
    right = [line.split("├")[-1].split()[0] for line in lines if "├" in line and line.split("├")[-1].split()]
    bottom = next(index for index, line in enumerate(lines) if "└┬" in line or "└─" in line)
    labels = left + right + lines[bottom + 1].split()
    return [label for label in labels if label[0].isdigit()]  # not the budget line's `├───┤`


async def followed(pilot: Pilot) -> EpochTable:
    table = pilot.app.query_one(EpochTable)
    await wait_until(pilot, lambda: len(table.epochs) == EPOCHS, timeout=60)
    return table


async def test_with_plots_at_80x24_the_epoch_table_shows_the_newest_epochs(tmp_path: Path) -> None:
    app = TfgpuApp(Settings(log_path=seventeen_epochs(tmp_path), log_path_given=True), initial_tab="training")
    async with app.run_test(size=(80, 24)) as pilot:
        table = await followed(pilot)
        await pilot.press("g")  # the plots take room from the table
        await wait_until(pilot, lambda: any(EPOCH_TITLE in line for line in screen_lines(app)), timeout=60)
        await wait_until(
            pilot, lambda: any(line.startswith(" 17/20 ") for line in screen_lines(app)), timeout=60
        )
        assert table.size.height < EPOCHS


async def test_the_epoch_plot_has_a_marker_per_series_and_its_legend_in_the_title(tmp_path: Path) -> None:
    app = TfgpuApp(Settings(log_path=seventeen_epochs(tmp_path), log_path_given=True), initial_tab="training")
    async with app.run_test(size=(160, 48)) as pilot:
        await followed(pilot)
        await wait_until(pilot, lambda: any(EPOCH_TITLE in line for line in screen_lines(app)), timeout=60)
        screen = "\n".join(screen_lines(app))
        assert not any(legend in screen for legend in PLOTEXT_LEGEND)
        canvas = [line for line in screen_lines(app) if "┤" in line or line.lstrip().startswith("│")]
        assert any("x" in line for line in canvas) and any(set(line) & set("⠉⠒⠤⣀⢄⠑") for line in canvas)


@pytest.mark.usefixtures("quick_simulated_trials")
async def test_the_probe_plot_has_whole_number_axes_and_its_legend_in_the_title() -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="probe")
    async with app.run_test(size=(160, 48)) as pilot:
        tab = app.query_one(BatchProbeTab)
        await pilot.pause()
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: tab.result is not None, timeout=60)
        await wait_until(pilot, lambda: any(PROBE_TITLE in line for line in screen_lines(app)), timeout=60)
        lines = screen_lines(app)
        ticks = axis_labels(lines)
        assert len(ticks) >= 6 and all(tick.replace(",", "").isdigit() for tick in ticks), ticks
        assert any("peak MB" in line and "batch size" in line and "samples/s" in line for line in lines)
        # the demo's trials have no model to estimate: no column that is always "-"
        assert not any("rule MB" in line for line in lines)
        assert any("Budget MB (all free)" in line for line in lines) or any(
            "Budget MB" in line for line in lines
        )


def test_a_real_terminal_without_colour_tells_the_series_apart(tmp_path: Path) -> None:
    """tmux, NO_COLOR=1: at 80x24 the Training tab with `g` (plots), at 160x48 the Batch probe's plot."""
    if shutil.which("tmux") is None:
        pytest.skip(NO_TMUX)
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), NO_COLOR="1")
    env["TERM"] = "xterm-256color"
    log = seventeen_epochs(tmp_path)
    small = Terminal([sys.executable, "-m", "tfgpu_tui", "--log", str(log)], env, 80, 24)
    try:
        small.press("3")
        small.wait_for("17/20", "Epoch 17/20", timeout=60)
        small.press("g")
        screen = small.wait_for(EPOCH_TITLE, timeout=60)
        wait_for(lambda: any(line.startswith(" 17/20 ") for line in small.lines()), 60)
        assert not any(legend in screen for legend in PLOTEXT_LEGEND), screen
    finally:
        small.close()
    big = Terminal([sys.executable, "-m", "tfgpu_tui", "--demo"], env, 160, 48)
    try:
        big.press("4")
        big.wait_for("Batch probe", "Start", timeout=60)
        big.press("C-r")
        screen = big.wait_for(PROBE_TITLE, "Largest batch that fits", timeout=60)
        ticks = axis_labels(big.lines())
        assert len(ticks) >= 6 and all(tick.replace(",", "").isdigit() for tick in ticks), screen
        assert "rule MB" not in screen and "▐X▌" not in screen
    finally:
        big.close()
