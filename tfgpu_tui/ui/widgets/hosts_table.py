"""The Hosts table: a header line and one line per host, keyed by host, on the RowList (a refresh that changes
a few cells repaints only those rows). Columns that do not fit the width are left out, the least important
first, so no column is ever cut off at the edge."""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.strip import Strip

from tfgpu_tui.ui.widgets.row_list import RowList, cursor_bindings

Cells = tuple["str | Text", ...]
HostRow = tuple[str, Cells]  # (key, cells)
GAP = 2
MAX_WIDTH = 44  # of a column not given a width, the last excepted


class HostsTable(RowList[HostRow]):
    """Rows keyed by host; up/down/page/home/end move the cursor, enter (or a click on the cursor) chooses."""

    DEFAULT_CSS = """
    /* Hosts table */
    HostsTable { height: 1fr; }
    HostsTable > .hosts-table--header { text-style: bold; background: $boost; }
    HostsTable > .hosts-table--cursor { background: $accent 35%; }
    HostsTable:focus > .hosts-table--cursor { background: $accent 60%; }
    """

    CURSOR = "hosts-table--cursor"
    CURSOR_BLURRED = "hosts-table--cursor"  # brighter with focus: the CSS's :focus rule
    COMPONENT_CLASSES = {"hosts-table--header", CURSOR}
    BINDINGS = [*cursor_bindings(), Binding("enter", "choose", "Open host")]

    @dataclass
    class Chosen(Message):
        """Enter on a row: its key."""

        key: str

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
        self._caps = [(max_widths or {}).get(name, MAX_WIDTH) for name in columns]
        ranked = [*priority, *(name for name in columns if name not in priority)]
        self._ranking = [columns.index(name) for name in ranked]
        self._widths = [len(c) for c in columns]

    # -- public API ---------------------------------------------------------------------------------------
    @property
    def selected_key(self) -> str | None:
        row = self.selected_row
        return None if row is None else row[0]

    @property
    def shown_columns(self) -> tuple[str, ...]:
        """The columns that fit the table's width, in table order."""
        return tuple(self.columns[i] for i in self._shown())

    def cells(self, key: str) -> Cells | None:
        return next((cells for k, cells in self.rows if k == key), None)

    def move_to(self, key: str) -> None:
        """Put the cursor on this host's row."""
        keys = [k for k, _ in self.rows]
        if key in keys:
            self.move_cursor(keys.index(key))

    def action_choose(self) -> None:
        key = self.selected_key
        if key is not None:
            self.post_message(self.Chosen(key))

    # -- the RowList's questions --------------------------------------------------------------------------
    def row_key(self, row: HostRow) -> str:
        return row[0]

    def row_look(self, row: HostRow) -> Cells:
        return row[1]

    def measure_rows(self, rows: list[HostRow]) -> None:
        widths = [len(c) for c in self.columns]
        for _, cells in rows:
            for i, cell in enumerate(cells):
                widths[i] = max(widths[i], cell.cell_len if isinstance(cell, Text) else len(cell))
        self._widths = [min(w, cap) for w, cap in zip(widths[:-1], self._caps, strict=False)] + widths[-1:]

    def line_layout(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return tuple(self._widths), self._shown()

    def row_chosen(self) -> None:
        self.action_choose()

    def render_row(self, row: HostRow, width: int) -> list[Segment]:
        return self._segments(row[1])

    def render_header(self, y: int, width: int) -> Strip:
        style = self.line_style("hosts-table--header")
        return Strip(self._segments(self.columns)).crop_extend(0, width, None).apply_style(style)

    # -- drawing ------------------------------------------------------------------------------------------
    def _shown(self) -> tuple[int, ...]:
        room = self.scrollable_content_region.width or self.size.width
        chosen: list[int] = []
        used = -GAP
        for index in self._ranking:
            if not chosen or used + GAP + self._widths[index] <= room:
                chosen.append(index)
                used += GAP + self._widths[index]
        return tuple(sorted(chosen))

    def _segments(self, cells: Cells) -> list[Segment]:
        line = Text(end="", no_wrap=True)
        shown = self._shown()
        for position, index in enumerate(shown):
            cell = cells[index]
            text = cell.copy() if isinstance(cell, Text) else Text(cell)
            text.truncate(self._widths[index], overflow="ellipsis", pad=True)
            line.append_text(text)
            if position < len(shown) - 1:
                line.append(" " * GAP)
        return list(line.render(self.app.console))
