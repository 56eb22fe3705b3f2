"""The Hosts table: a header line and one line per host, drawn through Textual's line API from a cache of
rendered lines, so a refresh that changes a few cells re-renders only those rows (a DataTable re-renders every
row on any change, which at 50 hosts every 2 s costs more than reading them). Columns that do not fit the
width are left out, the least important first, so no column is ever cut off at the edge."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

Cells = tuple["str | Text", ...]
GAP = 2
MAX_WIDTH = 44  # of a column not given a width, the last excepted


def _text(cell: str | Text) -> Text:
    return cell.copy() if isinstance(cell, Text) else Text(cell)


class HostsTable(ScrollView, can_focus=True):
    """Rows keyed by host; up/down/page/home/end move the cursor, enter (or a click on the cursor) chooses."""

    COMPONENT_CLASSES = {"hosts-table--header", "hosts-table--cursor"}
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "move(-10)", "Page up", show=False),
        Binding("pagedown", "move(10)", "Page down", show=False),
        Binding("home", "move(-1000000)", "First", show=False),
        Binding("end", "move(1000000)", "Last", show=False),
        Binding("enter", "choose", "Open host"),
    ]

    class Chosen(Message):
        """Enter on a row: its key."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(
        self,
        columns: tuple[str, ...],
        max_widths: dict[str, int] | None = None,
        *,
        priority: tuple[str, ...] = (),
        id: str | None = None,  # noqa: A002
    ) -> None:
        """`priority`: the columns from the most to the least important (the rest after them, in order);
        the first is always shown."""
        super().__init__(id=id)
        self.columns = columns
        ranked = [*priority, *(name for name in columns if name not in priority)]
        self._ranking = [columns.index(name) for name in ranked]
        self._caps = [(max_widths or {}).get(name, MAX_WIDTH) for name in columns]
        self._rows: list[tuple[str, Cells]] = []
        self._widths = [len(c) for c in columns]
        self._cursor = 0
        self._lines: dict[str, tuple[tuple[object, ...], Strip]] = {}

    # -- public API ---------------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def selected_key(self) -> str | None:
        return self._rows[self._cursor][0] if self._rows else None

    def cells(self, key: str) -> Cells | None:
        return next((cells for k, cells in self._rows if k == key), None)

    def show_rows(self, rows: list[tuple[str, Cells]]) -> None:
        """Replace the rows (the cursor stays on the same key where it still exists)."""
        selected = self.selected_key
        self._rows = rows
        widths = [len(c) for c in self.columns]
        for _, cells in rows:
            for i, cell in enumerate(cells):
                widths[i] = max(widths[i], cell.cell_len if isinstance(cell, Text) else len(cell))
        widths = [min(w, cap) for w, cap in zip(widths[:-1], self._caps, strict=False)] + widths[-1:]
        if widths != self._widths:
            self._widths = widths
            self._lines.clear()
        keys = [k for k, _ in rows]
        self._cursor = keys.index(selected) if selected in keys else min(self._cursor, max(0, len(rows) - 1))
        live = set(keys)
        for gone in [k for k in self._lines if k not in live]:
            del self._lines[gone]
        self._fit()
        self.refresh()

    @property
    def shown_columns(self) -> tuple[str, ...]:
        """The columns that fit the table's width, in table order."""
        return tuple(self.columns[i] for i in self._shown())

    def _shown(self) -> tuple[int, ...]:
        room = self.scrollable_content_region.width or self.size.width
        chosen: list[int] = []
        used = -GAP
        for index in self._ranking:
            if not chosen or used + GAP + self._widths[index] <= room:
                chosen.append(index)
                used += GAP + self._widths[index]
        return tuple(sorted(chosen))

    def _fit(self) -> None:
        shown = self._shown()
        width = sum(self._widths[i] for i in shown) + GAP * (len(shown) - 1)
        self.virtual_size = Size(width, len(self._rows) + 1)

    def on_resize(self) -> None:
        self._fit()

    def move_to(self, key: str) -> None:
        """Put the cursor on this host's row."""
        keys = [k for k, _ in self._rows]
        if key in keys:
            self.action_move(keys.index(key) - self._cursor)

    # -- actions ------------------------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        if not self._rows:
            return
        self._cursor = max(0, min(len(self._rows) - 1, self._cursor + delta))
        visible = max(1, self.size.height - 1)
        top = self.scroll_offset.y
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False)
        elif self._cursor >= top + visible:
            self.scroll_to(y=self._cursor - visible + 1, animate=False)
        self.refresh()

    def action_choose(self) -> None:
        key = self.selected_key
        if key is not None:
            self.post_message(self.Chosen(key))

    def on_click(self, event: events.Click) -> None:
        index = event.y - 1 + self.scroll_offset.y
        if 0 <= index < len(self._rows):
            if index == self._cursor:
                self.action_choose()
            else:
                self.action_move(index - self._cursor)

    def on_focus(self) -> None:
        self._lines.clear()
        self.refresh()

    on_blur = on_focus

    # -- rendering ----------------------------------------------------------------------------------------
    def _render_row(self, cells: Cells, shown: tuple[int, ...], style_name: str | None) -> Strip:
        line = Text(end="", no_wrap=True)
        for position, index in enumerate(shown):
            text = _text(cells[index])
            text.truncate(self._widths[index], overflow="ellipsis", pad=True)
            line.append_text(text)
            if position < len(shown) - 1:
                line.append(" " * GAP)
        if style_name is not None:
            line.stylize(self.get_component_rich_style(style_name))
        return Strip(line.render(self.app.console), line.cell_len).extend_cell_length(self.virtual_size.width)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        shown = self._shown()
        if y == 0:
            strip = self._render_row(self.columns, shown, "hosts-table--header")
            return strip.extend_cell_length(
                scroll_x + width, self.get_component_rich_style("hosts-table--header")
            )
        index = y - 1 + scroll_y
        if index >= len(self._rows):
            return Strip.blank(width, self.rich_style)
        key, cells = self._rows[index]
        selected = index == self._cursor
        look = (cells, tuple(self._widths), shown, selected, self.has_focus)
        cached = self._lines.get(key)
        if cached is None or cached[0] != look:
            style = "hosts-table--cursor" if selected else None
            cached = (look, self._render_row(cells, shown, style))
            self._lines[key] = cached
        return cached[1].crop(scroll_x, scroll_x + width)
