"""`tfgpu-tui --demo` in JupyterLab's own terminal (xterm.js behind terminado) in headless Chromium, where
the people this is for run it (../shared/USERS.md). Everything is real and on 127.0.0.1: `jupyter lab` with a
token, a terminal opened through JupyterLab's command, keys and clicks sent as the browser's input events, and
the screen read from xterm.js's buffer."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.jupyterlab_terminal import LabTerminal, jupyterlab_missing, lab_terminal

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.serial,  # headless Chromium: never two browsers at once on 2 cores
    pytest.mark.skipif(bool(jupyterlab_missing()), reason=jupyterlab_missing() or ""),
]

TAB_LABELS = ("Environment", "Monitor", "Training", "Batch probe")
# A key of each tab's footer: it shows which tab is active.
FOOTER_OF_TAB = {
    "Environment": "Re-run checks",
    "Monitor": "k Kill",
    "Training": "Plots on/off",
    "Batch probe": "Start probe",
}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[LabTerminal]:
    with lab_terminal(tmp_path) as lab:
        yield lab


def words(text: str) -> str:
    """The screen's text as one line of words: a message wrapped in a toast reads as the app wrote it."""
    return " ".join(re.sub(r"[▌▐│╭╮╰╯─]", " ", text).split())


def fits(cols: int, rows: int) -> Callable[[str], bool]:
    """Whether a screen shows the dashboard laid out for `cols` x `rows`, drawn once, no leftover rows."""

    def check(text: str) -> bool:
        lines = text.split("\n")
        return (
            len(lines) == rows
            and lines[0].startswith(" tfgpu-tui ")
            and all(label in lines[1] for label in TAB_LABELS)
            and len(lines[2]) == cols
            and set(lines[2]) <= set("━╸╺")
            and "? Help" in lines[-1]
            and sum(" tfgpu-tui " in line for line in lines) == 1
            and sum("Batch probe" in line for line in lines) == 1
        )

    return check


def show_tab(terminal: LabTerminal, label: str) -> None:
    terminal.wait_for_text(lambda text: FOOTER_OF_TAB[label] in text.split("\n")[-1])


def test_demo_in_jupyterlab_terminal(terminal: LabTerminal) -> None:
    terminal.resize(80, 24)
    terminal.type("tfgpu-tui --demo\n")
    terminal.wait_for_text(fits(80, 24))

    # The browser window grows and shrinks while the app runs: the app refits both ways.
    for cols, rows in ((160, 48), (80, 24)):
        terminal.resize(cols, rows)
        terminal.wait_for_text(fits(cols, rows))

    # The keys of every tab reach the app (1-4, a tab's own keys, ctrl+r, ?, ctrl+p).
    terminal.type("2")
    show_tab(terminal, "Monitor")
    sorted_by = re.search(r"sorted by [^,]+", terminal.text())
    assert sorted_by, terminal.text()
    terminal.type("s")
    terminal.wait_for_text(lambda text: "sorted by" in text and sorted_by.group(0) not in text)
    for key, label in (("1", "Environment"), ("3", "Training"), ("4", "Batch probe")):
        terminal.type(key)
        show_tab(terminal, label)
    terminal.type("?")
    terminal.wait_for_text("Key bindings")
    terminal.browser.press_escape()
    terminal.wait_for_text(lambda text: "Key bindings" not in text)
    terminal.browser.press_ctrl("p")  # another key between two Esc presses: JupyterLab keeps the focus
    terminal.wait_for_text(lambda text: "Search for commands" in text)
    terminal.browser.press_escape()
    terminal.wait_for_text(lambda text: "Search for commands" not in text)
    terminal.browser.press_ctrl("r")
    done = terminal.wait_for_text(lambda text: "Done:" in text and "Recommended:" in text, timeout=60)
    recommended = re.search(r"Recommended: (\d+)", done)
    assert recommended, done

    # `c`: what the app says matches what reached the browser's clipboard (nothing: JupyterLab loads no
    # clipboard addon), and the text is on screen where shift+drag selects it whole.
    terminal.type("c")
    snippet = f"batch_size = {recommended.group(1)}"
    screen = terminal.wait_for_text(lambda text: "nothing was copied" in words(text))
    requests = terminal.osc52_requests()
    assert [base64.b64decode(request.split(";", 1)[1]).decode() for request in requests] == [snippet]
    assert terminal.clipboard_writes() == []
    assert "Jupyter's terminal ignores" in words(screen) and "copied:" not in words(screen).lower()
    row, column = terminal.find(snippet)
    assert screen.split("\n")[row].rstrip() == snippet, "the text shares its row with something else"
    assert terminal.shift_drag_select(row, column, column + len(snippet) - 1) == snippet
    terminal.press_enter()
    terminal.wait_for_text(lambda text: "nothing was copied" not in words(text))

    # A click on each tab label shows that tab.
    for label in (*TAB_LABELS[1:], TAB_LABELS[0]):
        terminal.click_text(label)
        show_tab(terminal, label)

    terminal.type("q")
    terminal.wait_for_text(lambda text: text.rstrip().endswith("lab$"))
