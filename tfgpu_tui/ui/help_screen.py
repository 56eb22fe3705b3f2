"""The `?` screen: every key binding, grouped by where it works."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def binding_rows(bindings: list[BindingType]) -> list[tuple[str, str]]:
    """(keys, description) for each binding, in declaration order; bindings without text are skipped."""
    rows = []
    for item in bindings:
        binding = item if isinstance(item, Binding) else Binding(*item)
        description = binding.description or binding.tooltip
        if not description:
            continue
        keys = binding.key_display or ", ".join(_key_label(key) for key in binding.key.split(","))
        rows.append((keys, description))
    return rows


def _key_label(key: str) -> str:
    key = key.strip()
    return {"question_mark": "?", "escape": "esc", "enter": "enter", "space": "space"}.get(key, key)


class HelpScreen(ModalScreen[None]):
    """A modal list of key bindings: the app's, then each tab's."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80; max-width: 95%; height: 85%; border: thick $accent;
                                  background: $surface; padding: 1 2; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close help")]

    def __init__(self, sections: list[tuple[str, list[BindingType]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text("Key bindings  (esc closes)", style="bold"))
            for title, bindings in self.sections:
                table = Table(title=title, title_justify="left", show_header=False, expand=True, box=None)
                table.add_column("key", style="bold cyan", width=18)
                table.add_column("action")
                for keys, description in binding_rows(bindings):
                    table.add_row(keys, description)
                yield Static(table, classes="help-section")

    def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
