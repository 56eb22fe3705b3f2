"""The `?` screen: every key binding, grouped by where it works. It is built from the bindings themselves
(the app's, each tab's and those of the widgets inside a tab, such as the Monitor's process list), the same
keys the README's Keys table lists (tests/test_help_bindings.py holds the two together)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static


def described_bindings(bindings: list[BindingType]) -> list[Binding]:
    """The bindings that have a description (those the help screen and the command palette offer),
    as Binding objects, in declaration order."""
    as_bindings = (item if isinstance(item, Binding) else Binding(*item) for item in bindings)
    return [binding for binding in as_bindings if binding.description]


def binding_rows(bindings: list[BindingType]) -> list[tuple[str, str]]:
    """(keys, description) for each described binding, in declaration order."""
    return [(key_label(binding), binding.description) for binding in described_bindings(bindings)]


KEY_NAMES = {
    "question_mark": "?",
    "escape": "esc",
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
}


def key_label(binding: Binding) -> str:
    """The keys of a binding as the help and the README write them: ``home,g`` -> ``Home, g``."""
    return binding.key_display or ", ".join(
        KEY_NAMES.get(key.strip(), key.strip()) for key in binding.key.split(",")
    )


class HelpScreen(ModalScreen[None]):
    """A modal list of key bindings: the app's, then each tab's; fills an 80x24 terminal, scrolls when
    longer, its title line always in view."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close help")]

    def __init__(self, sections: list[tuple[str, list[BindingType]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        rows = [(title, binding_rows(bindings)) for title, bindings in self.sections]
        width = max((len(keys) for _, section in rows for keys, _ in section), default=1) + 2
        with Vertical(id="help-box"):
            yield Static("Key bindings   (esc closes, arrows scroll)", id="help-title")
            with VerticalScroll(id="help-scroll"):
                for title, section in rows:
                    lines: list[str | tuple[str, str]] = [(title, "bold $accent")]
                    for keys, description in section:
                        lines += ["\n  ", (keys.ljust(width), "bold $secondary"), description]
                    yield Static(Content.assemble(*lines), classes="help-section")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
