"""The tab bar: the tabs' titles on one line and a rule under them that marks the shown one.

One widget that draws both lines, where Textual's `TabbedContent` builds nine (tabs, their scroll container,
the underline) and a pane around each tab: the bar is on every frame, the first included. A click on a title
asks the app for that tab (`TabBar.Chosen`); the keys `1`-`5` do the same from anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

PADDING = 1  # cells each side of a title
RULE = "━"


class TabBar(Widget):
    """The titles of the tabs (id, title), the shown one bold and marked on the rule below."""

    COMPONENT_CLASSES = {"tab-bar--title", "tab-bar--active", "tab-bar--rule", "tab-bar--mark"}
    DEFAULT_CSS = "TabBar { height: 2; }"

    active: reactive[str] = reactive("")
    hovered: reactive[str | None] = reactive(None)

    @dataclass
    class Chosen(Message):
        """A title was clicked: the user asks for that tab."""

        tab_id: str

    def __init__(self, titles: Sequence[tuple[str, str]], active: str, id: str | None = "tab-bar") -> None:
        super().__init__(id=id)
        self.titles = list(titles)
        self.set_reactive(TabBar.active, active)

    def spans(self) -> list[tuple[str, int, int]]:
        """(tab id, first cell, cell after the last) of each title with its padding, left to right."""
        spans, start = [], 0
        for tab_id, title in self.titles:
            end = start + len(title) + 2 * PADDING
            spans.append((tab_id, start, end))
            start = end
        return spans

    def tab_at(self, x: int) -> str | None:
        """The tab whose title covers column `x`, if any."""
        return next((tab_id for tab_id, start, end in self.spans() if start <= x < end), None)

    def render(self) -> Text:
        title_style = self.get_component_rich_style("tab-bar--title")
        active_style = self.get_component_rich_style("tab-bar--active")
        pad = " " * PADDING
        line = Text(no_wrap=True, overflow="crop", end="")
        for tab_id, title in self.titles:
            chosen = tab_id in (self.active, self.hovered)
            line.append(f"{pad}{title}{pad}", active_style if chosen else title_style)
        width = self.size.width
        rule = Text(RULE * width, self.get_component_rich_style("tab-bar--rule"), no_wrap=True, end="")
        for tab_id, start, end in self.spans():
            if tab_id == self.active:
                rule.stylize(self.get_component_rich_style("tab-bar--mark"), start, min(end, width))
        return Text("\n", no_wrap=True, overflow="crop", end="").join([line, rule])

    def on_click(self, event: events.Click) -> None:
        """A click on a title, or on the rule under it, asks for its tab."""
        tab_id = self.tab_at(event.x)
        if tab_id is not None:
            self.post_message(self.Chosen(tab_id))

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self.hovered = self.tab_at(event.x)

    def on_leave(self, _event: events.Leave) -> None:
        self.hovered = None
