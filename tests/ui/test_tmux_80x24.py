"""A real terminal at 80x24: `tfgpu-tui --demo` runs in tmux (a private server), the screen is read back with
`tmux capture-pane`, and each tab (keys 1-4) and the help screen must show what they are for."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.tmux_terminal import NO_TMUX, Terminal
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("tmux") is None, reason=NO_TMUX)]

PRIORITY_COLUMNS = ["epoch", "loss", "val_loss", "time"]
FIX = "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64"  # the demo's fix for its CUDA-libraries finding


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env["TERM"] = "xterm-256color"
    env.pop("NO_COLOR", None)
    term = Terminal([sys.executable, "-m", "tfgpu_tui", "--demo"], env)
    try:
        yield term
    finally:
        term.close()


def test_every_tab_shows_its_essentials_at_80x24(terminal: Terminal) -> None:
    assert terminal.size() == (80, 24)
    # Monitor (the first tab shown): the GPUs, alerts and the process table with its rows.
    screen = terminal.wait_for("SIMULATED", "Processes", "A100", "train.py")
    assert "PID" in screen and "GPU mem" in screen
    # Environment: the list with a readable Found column; the selected finding's fix whole on one line.
    terminal.press("1")
    # it opens on the first failure: "CUDA libraries TensorFlow loads" (the 12th check)
    screen = terminal.wait_for("Check", "Found", "FAILURE", "✘  CUDA libraries TensorFlow loads  ")
    found = next(line for line in terminal.lines() if "✘  CUDA libraries TensorFlow loads  " in line)
    assert len(found.split("TensorFlow loads", 1)[1].strip()) >= 16, found
    terminal.wait_for("CUDA libraries TensorFlow loads  ✘", "Fix  (c copies it)")
    wait_for(lambda: any(line.strip() == FIX for line in terminal.lines()), 60)  # whole, on a line of its own
    # Training: the epoch table's priority columns, the problems pane.
    terminal.press("3")
    terminal.wait_for("writer", "checkpoint")

    def epoch_header() -> str | None:
        return next((line for line in terminal.lines() if line.split()[:4] == PRIORITY_COLUMNS), None)

    wait_for(lambda: epoch_header() is not None, 60)
    assert "…" not in epoch_header()
    # Batch probe: every field, both checkboxes and Start on screen.
    terminal.press("4")
    fields = ("Model", "Device", "Budget MB", "Max batch", "Mixed precision", "fp32 vs mixed")
    screen = terminal.wait_for(*fields)
    assert "Start" in screen and "Cancel" in screen
    # Help: fits, titled, closes with escape.
    terminal.press("?")
    terminal.wait_for("Key bindings", "esc closes")
    terminal.press("Escape")
    terminal.wait_for("Max batch")
    # Quitting ends the program (the pane's command exits).
    terminal.press("q")
    wait_for(lambda: terminal.tmux("list-panes", "-a") == "", 60)


def test_inherited_columns_and_lines_do_not_freeze_the_size(tmp_path: Path) -> None:
    """A shell's exported COLUMNS/LINES (JupyterLab's terminal sets them) must not pin the app at 80x24:
    after the window grows to 120x40 the footer (its quit key) is on the last row, not on row 24."""
    env = dict(
        os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), TERM="xterm-256color"
    )
    env.pop("NO_COLOR", None)
    term = Terminal(["env", "COLUMNS=80", "LINES=24", sys.executable, "-m", "tfgpu_tui", "--demo"], env)
    try:
        term.wait_for("SIMULATED", "Processes")
        term.tmux("resize-window", "-t", "app", "-x", "120", "-y", "40")
        assert term.size() == (120, 40)

        def refitted() -> bool:
            lines = term.lines()
            return len(lines) >= 40 and "quit" in lines[39].lower() and "quit" not in lines[23].lower()

        wait_for(refitted, 60)
    finally:
        term.close()


def test_the_monitors_keys_work_from_the_first_frame(terminal: Terminal) -> None:
    """The demo's first snapshot has alerts, so the alerts list is the screen's first focusable widget and
    Textual focuses it by itself at start; the app gives the focus to the process table instead. Then `a`
    moves it to the alerts and shows the selected one in full (before, `a` did nothing)."""
    terminal.wait_for("SIMULATED", "Processes", "WARN")
    terminal.press("a")
    terminal.wait_for("█ Fix:")
