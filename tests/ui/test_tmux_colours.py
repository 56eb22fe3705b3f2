"""16 colours and no colour (issue 30 item 6), in a real terminal: `tfgpu-tui --demo` in tmux with TERM=xterm
(Textual draws in the 16 standard colours) and with NO_COLOR=1. From `capture-pane -e`, every character stands
out from its background: not drawn in its background's colour, and, in the 16 colours, at a contrast ratio
of at least sgr_cells.MIN_CONTRAST in xterm's palette (bright red key letters on the footer's grey, or the TF
mark in the cursor row's own cyan, fail it). Disabled controls are included. With NO_COLOR failures are
marked by weight."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.sgr_cells import Cell, cells, hard_to_read
from tests.helpers.tmux_terminal import NO_TMUX, Terminal
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("tmux") is None, reason=NO_TMUX)]

# Scrollbar thumbs are drawn by Textual for every scrolling widget (not a control of a tab) and not checked.
SCROLLBAR_GLYPHS = set("▁▂▃▄▅▆▇")
SETTINGS = {"TERM=xterm": ["TERM=xterm"], "NO_COLOR=1": ["NO_COLOR=1", "TERM=xterm-256color"]}


@pytest.fixture(params=list(SETTINGS), ids=list(SETTINGS))
def terminal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Terminal]:
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.pop("NO_COLOR", None)
    command = ["env", "-u", "COLORTERM", "-u", "NO_COLOR", *SETTINGS[request.param]]
    term = Terminal([*command, sys.executable, "-m", "tfgpu_tui", "--demo"], env)
    try:
        yield term
    finally:
        term.close()


def captured(terminal: Terminal) -> str:
    return terminal.tmux("capture-pane", "-e", "-p", "-t", "app")


def unseen(screen: str) -> list[Cell]:
    return [cell for cell in hard_to_read(screen) if cell.char not in SCROLLBAR_GLYPHS]


def assert_all_seen(terminal: Terminal) -> None:
    """Once the screen is drawn in full, no character on it is hard to read (else which, on which line)."""
    try:
        wait_for(lambda: not unseen(captured(terminal)), 60)
    except AssertionError:
        screen = captured(terminal)
        raise AssertionError(describe(screen, unseen(screen))) from None


def describe(screen: str, bad: list[Cell]) -> str:
    plain = cells_text(screen)
    return "\n".join(
        f"row {c.row} col {c.column} {c.char!r} fg {c.fg} bg {c.bg}: {plain[c.row]}" for c in bad
    )


def cells_text(screen: str) -> list[str]:
    rows: dict[int, list[Cell]] = {}
    for cell in cells(screen):
        rows.setdefault(cell.row, []).append(cell)
    return ["".join(cell.char for cell in rows.get(row, [])) for row in range(max(rows, default=0) + 1)]


def word_cells(screen: str, word: str) -> list[Cell]:
    """The cells of the first occurrence of `word` (spaces do not count as cells)."""
    found = cells(screen)
    text = "".join(cell.char for cell in found)
    start = text.find(word)
    assert start >= 0, f"{word!r} not on screen"
    return found[start : start + len(word)]


def test_every_control_is_visible(terminal: Terminal) -> None:
    terminal.wait_for("SIMULATED", "Processes", "train.py", "TF")
    assert_all_seen(terminal)  # the Monitor, its process table's cursor row included
    for key, shown in (("1", "Re-run checks"), ("3", "Plots on/off"), ("4", "Start probe")):
        terminal.press(key)
        terminal.wait_for(shown)
        assert_all_seen(terminal)
    terminal.wait_for("Cancel")  # disabled until a probe runs: checked above
    terminal.press("C-r")
    terminal.wait_for("Done:", "oom")
    assert_all_seen(terminal)
    terminal.press("?")
    terminal.wait_for("Key bindings")
    assert_all_seen(terminal)


def test_failures_are_marked_by_weight_without_colour(terminal: Terminal) -> None:
    terminal.wait_for("SIMULATED", "Processes")
    terminal.press("1")
    terminal.wait_for("FAILURE", "Re-run checks")
    failure = word_cells(captured(terminal), "FAILURE")
    assert all(cell.bold or cell.reverse for cell in failure) and not any(cell.dim for cell in failure)
    terminal.press("4")
    terminal.wait_for("Start probe")
    terminal.press("C-r")
    terminal.wait_for("Done:", "oom")
    assert all(cell.bold for cell in word_cells(captured(terminal), "oom"))
