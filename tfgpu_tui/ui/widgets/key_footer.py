"""The footer: the keys that work where the focus is, then the app's (`q`, `?`), on one line that always fits.

Textual's own footer cuts the line at the terminal's edge, so at 80 columns the Monitor lost `a` and `?`. This
one fits the line to its width in steps (`fit_keys`): first the palette hint goes, then every description
shortens to its first word, then the least needed keys give way: the app's other keys, then the tab's from
its last. `?` never goes (it lists every key), nor do the tab's first keys while there is room for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

from tfgpu_tui.ui.tab_base import DashboardTab

SEPARATOR = "  "
KEEP_ACTIONS = frozenset({"help"})  # never left out


@dataclass(frozen=True)
class FooterKey:
    """One key on the footer line."""

    key: str  # what a click presses
    display: str  # how it is written (`?`, `^r`)
    description: str
    enabled: bool = True
    app_wide: bool = False  # the app's (q, ?), not the focused tab's
    keep: bool = False  # never left out (`?`)

    @property
    def short(self) -> str:
        """The description's first word ("Kill process" -> "Kill")."""
        return self.description.split()[0] if self.description else ""


def fit_keys(
    keys: list[FooterKey], width: int, palette: FooterKey | None = None
) -> tuple[list[tuple[FooterKey, str]], bool]:
    """The keys that fit on a line of `width` cells, each with the description it has room for, and whether
    the palette hint fits on the right too. Keys keep their order. Without room, the palette hint goes first;
    then descriptions shorten to their first word, the last key's first; then keys are left out one at a
    time: the app's (but `?`) first, then the focused tab's from its last."""
    labels = {key: key.description for key in keys}

    def needed(with_palette: bool) -> int:
        line = 1 + sum(len(key.display) + 1 + len(label) for key, label in labels.items())
        line += len(SEPARATOR) * max(len(labels) - 1, 0)
        return line + (
            len(SEPARATOR) + len(palette.display) + 1 + len(palette.description)
            if with_palette and palette
            else 0
        )

    def result(with_palette: bool) -> tuple[list[tuple[FooterKey, str]], bool]:
        return list(labels.items()), with_palette and palette is not None

    if needed(True) <= width:
        return result(True)
    for key in reversed(keys):
        if needed(False) <= width:
            return result(False)
        labels[key] = key.short
    app_wide = [key for key in keys if key.app_wide]
    for key in app_wide + [key for key in reversed(keys) if not key.app_wide]:
        if needed(False) <= width:
            break
        if not key.keep:
            del labels[key]
    return result(False)


class KeyFooter(Widget):
    """Bottom line of the screen: the active keys, fitted to the width by `fit_keys`; a click on a key
    presses it."""

    COMPONENT_CLASSES = {"key-footer--key", "key-footer--description"}

    def __init__(self) -> None:
        super().__init__(id="key-footer")
        self._spans: list[tuple[int, int, FooterKey]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        self.refresh()

    def active_keys(self) -> tuple[list[FooterKey], FooterKey | None]:
        """The keys to show (the focused widget's and its tab's, then the app's), and the palette's."""
        app = self.app
        keys: list[FooterKey] = []
        palette: FooterKey | None = None
        actions: set[str] = set()
        for node, binding, enabled, _ in self.screen.active_bindings.values():
            if isinstance(node, DashboardTab) and not node.offers(binding.action):
                continue
            footer_key = FooterKey(
                binding.key.split(",")[0],
                app.get_key_display(binding),
                binding.description,
                enabled,
                node is app,
                binding.action in KEEP_ACTIONS,
            )
            if binding.key == app.COMMAND_PALETTE_BINDING and binding.action == "command_palette":
                palette = FooterKey(footer_key.key, footer_key.display, "palette", enabled, True)
            elif binding.show and binding.description and binding.action not in actions:
                actions.add(binding.action)
                keys.append(footer_key)
        return keys, palette if app.ENABLE_COMMAND_PALETTE else None

    def render(self) -> Text:
        keys, palette = self.active_keys()
        width = self.size.width
        shown, with_palette = fit_keys(keys, width, palette)
        key_style = self.get_component_rich_style("key-footer--key")
        text_style = self.get_component_rich_style("key-footer--description")
        line = Text(" ", no_wrap=True, overflow="crop", end="")
        self._spans = []
        for number, (key, label) in enumerate(shown):
            if number:
                line.append(SEPARATOR)
            start = line.cell_len
            line.append(key.display, key_style)
            line.append(" " + label, text_style)
            if not key.enabled:
                line.stylize("dim", start)
            self._spans.append((start, line.cell_len, key))
        if with_palette and palette is not None:
            hint = Text.assemble((palette.display, key_style), (" " + palette.description, text_style))
            line.append(" " * max(len(SEPARATOR), width - line.cell_len - hint.cell_len - 1))
            start = line.cell_len
            line.append_text(hint)
            self._spans.append((start, line.cell_len, palette))
        return line

    def on_click(self, event: events.Click) -> None:
        """Press the key under the pointer (a disabled one rings the bell)."""
        for start, end, key in self._spans:
            if start <= event.x < end:
                if key.enabled:
                    self.app.simulate_key(key.key)
                else:
                    self.app.bell()
                return
