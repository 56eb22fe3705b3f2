"""The `?` screen: every key binding, grouped by where it works."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def described_bindings(bindings: list[BindingType]) -> list[Binding]:
    """The bindings that have a description (those the help screen and the command palette offer),
    as Binding objects, in declaration order."""
    as_bindings = (item if isinstance(item, Binding) else Binding(*item) for item in bindings)
    return [binding for binding in as_bindings if binding.description]


def binding_rows(bindings: list[BindingType]) -> list[tuple[str, str]]:
    """(keys, description) for each described binding, in declaration order."""
    return [
        (
            binding.key_display or ", ".join(_key_label(key) for key in binding.key.split(",")),
            binding.description,
        )
        for binding in described_bindings(bindings)
    ]


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

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
