"""Copying a text out of the app, and telling the truth about it.

The app asks the terminal to copy with OSC 52 and cannot know whether the terminal did. Where the terminal
is known to ignore OSC 52 (Jupyter's terminal: xterm.js behind terminado, no clipboard addon) the app says
so and shows the text alone on the screen, where the terminal's own selection (shift+drag in xterm.js, even
while the app uses the mouse) takes it without box characters or padding inside it.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

SENT = "sent to the terminal's clipboard (OSC 52)"
# Set in every Jupyter terminal: by terminado (PYXTERM_DIMENSIONS) and by jupyter_server_terminals.
JUPYTER_TERMINAL_VARIABLES = ("PYXTERM_DIMENSIONS", "JUPYTER_SERVER_ROOT", "JUPYTER_SERVER_URL")
# A multiplexer in between answers OSC 52 itself (tmux's set-clipboard, screen): what happens next is unknown.
MULTIPLEXER_VARIABLES = ("TMUX", "STY", "ZELLIJ")


def terminal_ignoring_osc52(environ: Mapping[str, str]) -> str | None:
    """The name of the terminal known to ignore OSC 52 that this process runs in, or None when unknown."""
    if any(name in environ for name in MULTIPLEXER_VARIABLES):
        return None
    if any(name in environ for name in JUPYTER_TERMINAL_VARIABLES):
        return "Jupyter's terminal"
    return None


def one_line(text: str, limit: int = 200) -> str:
    """The first line of `text`, cut at `limit` characters with an ellipsis."""
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: max(limit - 1, 0)].rstrip() + "…"


def copy_text(app: App, text: str, what: str) -> None:
    """Send `text` (a `what`, e.g. "Fix") to the terminal's clipboard and say what was done; where the
    terminal ignores that, say so and show the text for the terminal's own selection."""
    app.copy_to_clipboard(text)
    ignoring = None if app.is_web else terminal_ignoring_osc52(os.environ)
    if ignoring is None:
        app.notify(one_line(text), title=f"{what} {SENT}")
    else:
        app.push_screen(CopyTextScreen(text, what, ignoring))


def selectable_rows(text: str, width: int) -> list[str]:
    """`text` in rows of at most `width` cells, broken at spaces where it must be (never inside a word
    unless the word is longer than a row), each of its own lines kept."""
    rows: list[str] = []
    for line in text.splitlines() or [""]:
        rows += textwrap.wrap(line, max(width, 1), break_on_hyphens=False, drop_whitespace=True) or [""]
    return rows


class CopyTextScreen(ModalScreen[None]):
    """The text the terminal would not copy, alone on its rows from the first column, and how to take it."""

    DEFAULT_CSS = """
    /* The text alone on its rows from the first column, so the terminal's own selection takes it whole */
    CopyTextScreen { align: left top; }
    CopyTextScreen #copy-box { width: 100%; height: auto; max-height: 100%; background: $panel; }
    CopyTextScreen #copy-title { padding: 0 1; text-style: bold; }
    CopyTextScreen #copy-how { padding: 0 1; }
    CopyTextScreen #copy-text { margin: 1 0; padding: 0; text-wrap: nowrap; text-style: bold; }
    CopyTextScreen #copy-keys { padding: 0 1; }
    """

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Back")]

    def __init__(self, text: str, what: str, terminal: str) -> None:
        super().__init__()
        self.text = text
        self.what = what
        self.terminal = terminal

    def compose(self) -> ComposeResult:
        with Vertical(id="copy-box"):
            yield Static(
                f"{self.what} {SENT}, but {self.terminal} ignores that: nothing was copied.",
                id="copy-title",
                markup=False,
            )
            yield Static(id="copy-how")
            yield Static(id="copy-text", markup=False)
            yield Static("esc or enter: back", id="copy-keys")

    def on_resize(self, event: events.Resize) -> None:
        self.show_rows(event.size.width)

    def on_mount(self) -> None:
        self.show_rows(self.size.width or self.app.size.width)

    def show_rows(self, width: int) -> None:
        rows = selectable_rows(self.text, width)
        how = "Select the text below with shift+drag, then copy it with your browser (ctrl+c or right-click)."
        if len(rows) > len(self.text.splitlines() or [""]):
            how += " It is broken into rows at spaces to fit: join them when you paste it."
        self.query_one("#copy-how", Static).update(how)
        self.query_one("#copy-text", Static).update("\n".join(rows))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
