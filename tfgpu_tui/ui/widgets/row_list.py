"""The base of the dashboard's lists (the processes, the hosts, the alerts): rows under an optional header
line, drawn through Textual's line API.

One cursor, which stays on its row (by key) across refreshes, or on the same position when that row has gone;
one paging; a refresh that repaints only the rows in view whose looks changed; and the looks of each line read
from the instance's own component classes (cursor, blurred cursor, odd rows), cached per instance until its
styles change."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import ClassVar, Generic, TypeVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

RowT = TypeVar("RowT")


def cursor_bindings(first: str = "home", last: str = "end") -> list[BindingType]:
    """The keys every list has: up/down, page up/down, first/last row (`first`/`last`: the keys for those)."""
    return [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding(first, "first_row", "First row", show=False),
        Binding(last, "last_row", "Last row", show=False),
    ]


class RowList(ScrollView, Generic[RowT], can_focus=True):
    """Rows of one kind, a cursor and paging. A subclass says how a row is keyed (`row_key`), what its line
    depends on (`row_look`, and `line_layout` for what every line depends on) and draws it (`render_row`,
    `render_header`)."""

    #: lines above the rows (a header), not scrolled
    HEADER_LINES: ClassVar[int] = 1
    #: component classes of the cursor's line with focus and without (None: not marked), and of odd rows
    CURSOR: ClassVar[str | None] = None
    CURSOR_BLURRED: ClassVar[str | None] = None
    ODD_ROW: ClassVar[str | None] = None

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's own parameter name
        super().__init__(id=id)
        self._rows: list[RowT] = []
        self._cursor = 0
        self._line_layout: Hashable = None
        self._lines: dict[int, tuple[Hashable, Strip]] = {}  # row index -> (looks, drawn line)
        self._styles: dict[str, Style] = {}  # base style by component class ("" for the widget's own)

    # --- what a subclass says ----------------------------------------------------------------------------

    def row_key(self, row: RowT) -> Hashable:
        """What makes a row the same row across refreshes."""
        return row  # type: ignore[return-value]

    def row_look(self, row: RowT) -> Hashable:
        """What the row's line depends on, besides `line_layout()` and the cursor."""
        return row  # type: ignore[return-value]

    def line_layout(self) -> Hashable:
        """What every line depends on (column widths, a scroll offset); measured after each `show_rows`."""
        return None

    def measure_rows(self, rows: list[RowT]) -> None:
        """Work out what `line_layout()` depends on for these rows (called by `show_rows`)."""

    def render_row(self, row: RowT, width: int) -> list[Segment]:
        """The row's line without the cursor's or odd rows' look (cropped or padded to `width` after)."""
        raise NotImplementedError

    def render_header(self, y: int, width: int) -> Strip:
        """Header line `y`."""
        return Strip.blank(width, self.line_style(""))

    def cursor_moved(self) -> None:
        """The user moved the cursor to another row (by a key or a click)."""

    def row_chosen(self) -> None:
        """A click on the row under the cursor."""

    def header_clicked(self, x: int, y: int) -> None:
        """A click on the header."""

    # --- public API --------------------------------------------------------------------------------------

    @property
    def rows(self) -> list[RowT]:
        """The rows as shown, top to bottom."""
        return list(self._rows)

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def cursor_row(self) -> int:
        """The cursor's row index."""
        return self._cursor

    @property
    def selected_row(self) -> RowT | None:
        """The row under the cursor, if any."""
        return self._rows[self._cursor] if 0 <= self._cursor < len(self._rows) else None

    @property
    def body_height(self) -> int:
        """How many rows fit in view."""
        return max(1, self.scrollable_content_region.height - self.HEADER_LINES)

    @property
    def visible_rows(self) -> range:
        """The indices of the rows in view."""
        top = round(self.scroll_offset.y)
        return range(top, min(len(self._rows), top + max(0, self.size.height - self.HEADER_LINES)))

    def lines_in_view(self) -> list[str]:
        """The lines on screen (header included) as plain text."""
        return [self.render_line(y).text for y in range(self.scrollable_content_region.height)]

    def show_rows(self, rows: Sequence[RowT]) -> None:
        """Apply new rows: the cursor stays on its row where it still exists (else on the same position), and
        only the rows in view whose looks changed are repainted."""
        old = self._rows
        key = None if self.selected_row is None else self.row_key(self.selected_row)
        previous = self._cursor
        self._rows = list(rows)
        self.measure_rows(self._rows)
        index = next((i for i, row in enumerate(self._rows) if self.row_key(row) == key), previous)
        self._cursor = max(0, min(index, len(self._rows) - 1))
        layout = self.line_layout()
        for gone in [i for i in self._lines if i >= len(self._rows)]:
            del self._lines[gone]
        if len(self._rows) != len(old):
            self.virtual_size = Size(0, len(self._rows) + self.HEADER_LINES)
        if layout != self._line_layout or len(self._rows) != len(old):
            self._line_layout = layout
            self.refresh()
        else:
            moved = {previous, self._cursor} if previous != self._cursor else set()
            for position in self.visible_rows:
                if position in moved or self.row_look(self._rows[position]) != self.row_look(old[position]):
                    self.refresh_row(position)
        self._scroll_to_cursor()

    def move_cursor(self, row: int) -> None:
        """Put the cursor on row `row` (clamped) and scroll it into view."""
        row = max(0, min(row, len(self._rows) - 1))
        if row != self._cursor:
            self.refresh_row(self._cursor)
            self._cursor = row
            self.refresh_row(row)
            self.cursor_moved()
        self._scroll_to_cursor()

    def refresh_row(self, index: int) -> None:
        """Repaint one row's line (nothing happens for a row out of view)."""
        if index in self.visible_rows:
            self.refresh_line(index + self.HEADER_LINES)  # in virtual lines: Textual subtracts the scroll

    def line_style(self, component: str) -> Style:
        """The widget's style with a component class's on top (cached per instance until styles change)."""
        style = self._styles.get(component)
        if style is None:
            style = self.rich_style
            if component:
                style += self.get_component_rich_style(component)
            self._styles[component] = style
        return style

    def cell_style(self, component: str) -> Style:
        """Only what a component class sets (for a part of a line), cached like `line_style`."""
        style = self._styles.get(f"cell:{component}")
        if style is None:
            style = self._styles[f"cell:{component}"] = self.get_component_rich_style(component, partial=True)
        return style

    # --- actions -----------------------------------------------------------------------------------------

    def action_cursor_up(self) -> None:
        self.move_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self._cursor + 1)

    def action_page_up(self) -> None:
        self.move_cursor(self._cursor - max(1, self.body_height - 1))

    def action_page_down(self) -> None:
        self.move_cursor(self._cursor + max(1, self.body_height - 1))

    def action_first_row(self) -> None:
        """Select the first row."""
        self.move_cursor(0)

    def action_last_row(self) -> None:
        """Select the last row."""
        self.move_cursor(len(self._rows) - 1)

    # --- events ------------------------------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        """A click selects a row (on the selected row: `row_chosen`); on the header: `header_clicked`."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y < self.HEADER_LINES:
            self.header_clicked(offset.x, offset.y)
            return
        index = round(self.scroll_offset.y) + offset.y - self.HEADER_LINES
        if index == self._cursor and index < len(self._rows):
            self.row_chosen()
        elif 0 <= index < len(self._rows):
            self.move_cursor(index)

    def on_focus(self) -> None:
        self.refresh_row(self._cursor)

    def on_blur(self) -> None:
        self.refresh_row(self._cursor)

    def notify_style_update(self) -> None:
        """The CSS changed (a theme, a pseudo-class such as focus): forget the cached looks."""
        super().notify_style_update()
        self._styles.clear()
        self._lines.clear()

    # --- drawing -----------------------------------------------------------------------------------------

    def _scroll_to_cursor(self) -> None:
        top = round(self.scroll_offset.y)
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False)
        elif self._cursor >= top + self.body_height:
            self.scroll_to(y=self._cursor - self.body_height + 1, animate=False)

    def _look_of(self, index: int) -> str | None:
        """The component class of row `index`'s line."""
        if index == self._cursor:
            return self.CURSOR if self.has_focus else self.CURSOR_BLURRED
        return self.ODD_ROW if index % 2 else None

    def render_line(self, y: int) -> Strip:
        """Line `y`: the header, then the rows from the scroll position on."""
        width = self.scrollable_content_region.width
        if y < self.HEADER_LINES:
            return self.render_header(y, width)
        index = round(self.scroll_offset.y) + y - self.HEADER_LINES
        if not 0 <= index < len(self._rows):
            return Strip.blank(width, self.line_style(""))
        row = self._rows[index]
        component = self._look_of(index)
        focused = index == self._cursor and self.has_focus
        looks = (self.row_look(row), component, focused, width, self._line_layout)
        cached = self._lines.get(index)
        if cached is not None and cached[0] == looks:
            return cached[1]
        line = Strip(self.render_row(row, width)).crop_extend(0, width, None)
        line = line.apply_style(self.line_style(component or ""))
        self._lines[index] = (looks, line)
        return line
