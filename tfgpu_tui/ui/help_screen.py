"""The `?` screen: every key binding, grouped by where it works. It is built from the bindings themselves
(the app's, each tab's and those of the widgets inside a tab, such as the Monitor's process list), the same
keys the README's Keys table lists (tests/ui/test_help_bindings.py holds the two together)."""

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


JUPYTERLAB_NOTE = (
    "In JupyterLab's terminal, two Esc presses in a row move the keyboard out of the terminal (no screen "
    "here needs two): press Enter or click the terminal to bring it back. That Enter does not reach the app."
)


def current_first(
    sections: list[tuple[str, list[BindingType]]], current: str | None
) -> list[tuple[str, list[BindingType]]]:
    """The sections of the `current` tab (its own and its widgets', titled "Tab" or "Tab: ...") first, then
    the rest in their order."""
    if not current:
        return list(sections)
    mine = [section for section in sections if section[0] == current or section[0].startswith(f"{current}:")]
    return mine + [section for section in sections if section not in mine]


class HelpScreen(ModalScreen[None]):
    """A modal list of key bindings: the current tab's, then the app's and the other tabs'; fills an 80x24
    terminal, scrolls when longer, its title line always in view."""

    DEFAULT_CSS = """
    /* Help screen (?): the whole screen at 80x24 */
    HelpScreen { align: center middle; }
    HelpScreen > #help-box {
        width: 100%; max-width: 84; height: 100%; max-height: 44;
        border: round $accent; background: $surface; padding: 0 1;
    }
    HelpScreen #help-title { height: 1; text-style: bold; }
    HelpScreen #help-scroll { height: 1fr; }
    HelpScreen .help-section { margin-top: 1; }
    """

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close help")]

    def __init__(self, sections: list[tuple[str, list[BindingType]]], current: str | None = None) -> None:
        super().__init__()
        self.sections = current_first(sections, current)
        self.current = current

    def compose(self) -> ComposeResult:
        rows = [(title, binding_rows(bindings)) for title, bindings in self.sections]
        width = max((len(keys) for _, section in rows for keys, _ in section), default=1) + 2
        first = f"{self.current} first   " if self.current else ""
        with Vertical(id="help-box"):
            yield Static(f"Key bindings   {first}(esc closes, arrows scroll)", id="help-title")
            with VerticalScroll(id="help-scroll"):
                for title, section in rows:
                    lines: list[str | tuple[str, str]] = [(title, "bold $accent")]
                    for keys, description in section:
                        lines += ["\n  ", (keys.ljust(width), "bold $secondary"), description]
                    yield Static(Content.assemble(*lines), classes="help-section")
                yield Static(JUPYTERLAB_NOTE, classes="help-section", markup=False)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
