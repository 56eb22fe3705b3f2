"""The GPU process table: rows built from a Snapshot by a plain function, and a RowList that keeps the
selection on the same process (PID + start time + GPU) across refreshes. PID, user, GPU and the figures stay
put; left/right scroll only the command."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.strip import Strip

from tfgpu_tui.gpu.command_column import Piece, row_pieces
from tfgpu_tui.gpu.model import ProcessRow, Snapshot
from tfgpu_tui.sizes import mib_text
from tfgpu_tui.ui.text_fit import ELLIPSIS, whole_words
from tfgpu_tui.ui.widgets.gpu_format import NA, duration_text, number_text
from tfgpu_tui.ui.widgets.row_list import RowList, cursor_bindings

# (column key, label); the keys of the sortable columns double as sort keys.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("pid", "PID"),
    ("user", "User"),
    ("gpu", "GPU"),
    ("memory", "GPU mem"),
    ("sm", "SM %"),
    ("cpu", "CPU %"),
    ("host_memory", "Host mem"),
    ("time", "Time"),
    ("tf", "TF"),
    ("command", "Command"),
)

SORT_KEYS: tuple[str, ...] = ("memory", "sm", "pid", "time")
SORT_LABELS = {"memory": "GPU memory", "sm": "SM %", "pid": "PID", "time": "running time"}
# Sorting by a figure shows the biggest first; sorting by PID the smallest first.
_DESCENDING_BY_DEFAULT = {"memory": True, "sm": True, "pid": False, "time": True}
_SORT_VALUE: dict[str, Callable[[ProcessRow], float]] = {
    "memory": lambda row: -1.0 if row.gpu_memory_mib is None else row.gpu_memory_mib,
    "sm": lambda row: -1.0 if row.sm_percent is None else row.sm_percent,
    "pid": lambda row: float(row.pid),
    "time": lambda row: -1.0 if row.running_seconds is None else row.running_seconds,
}

Cells = tuple["str | Text", ...]
# Columns whose figures line up on the right; the command (last) is the only column that scrolls sideways.
_RIGHT_ALIGNED = frozenset(i for i, (key, _) in enumerate(COLUMNS) if key not in {"user", "gpu", "tf"})
_COMMAND = len(COLUMNS) - 1
COMMAND_STEP = 8  # cells the command moves per left/right press
# The looks of marked cells, by role: what the cells carry (and how they look outside the table, e.g. in the
# Monitor's line under it). Each table draws a role in its own component style (process-table--<role>).
CELL_STYLES: Mapping[str, str] = MappingProxyType(
    {
        "marker": "bold yellow",
        "notebook": "bold cyan",
        "kernel": "cyan",
        "dim": "dim",
        "tf": "bold magenta",
    }
)


RowKey = tuple[int, "float | None", "int | None"]


class TableRow(NamedTuple):
    """One table row: the identity it belongs to, its cells, and the process it shows."""

    key: RowKey
    cells: Cells
    process: ProcessRow


def row_key(process: ProcessRow) -> RowKey:
    """What makes a row the same row across refreshes: PID, start time and GPU."""
    return (process.pid, process.create_time, process.gpu_index)


@lru_cache(maxsize=4096)
def _command_text(pieces: tuple[Piece, ...]) -> Text:
    """The command column's words (gpu/command_column.py) in their roles' looks. Cached: a process's command
    rarely changes. Always Text, never str, so that brackets in a command line are not read as markup."""
    text = Text()
    for words, role in pieces:
        text.append(words, style=CELL_STYLES.get(role, ""))
    return text


@lru_cache(maxsize=1024)
def _user_text(user: str, other: bool) -> Text:
    """The user cell; other users' processes are dimmed (as in nvitop)."""
    return Text(user, style=CELL_STYLES["dim"] if other else "")


@lru_cache(maxsize=4)
def _tf_mark(loaded: bool | None) -> str | Text:
    return Text("TF", style=CELL_STYLES["tf"]) if loaded else ("" if loaded is False else "?")


def _cells(process: ProcessRow, own_uid: int | None) -> Cells:
    other = process.uid is not None and process.uid != own_uid
    memory = mib_text(process.gpu_memory_mib)
    return (
        NA if process.local_pid is None else str(process.pid),
        _user_text(process.user or NA, other),
        process.device_label,
        "≈" + memory if process.memory_estimated else memory,
        number_text(process.sm_percent),
        number_text(process.cpu_percent),
        mib_text(process.host_memory_mib),
        duration_text(process.running_seconds),
        _tf_mark(process.tensorflow_loaded),
        _command_text(row_pieces(process)),
    )


def is_descending(sort_by: str, reverse: bool) -> bool:
    """Whether the rows sorted by `sort_by` (reversed or not) show the largest first."""
    return _DESCENDING_BY_DEFAULT[sort_by] != reverse


def sort_caption(sort_by: str, reverse: bool) -> str:
    """How the table is ordered, e.g. "GPU memory, largest first"."""
    descending = is_descending(sort_by, reverse)
    most, least = ("longest", "shortest") if sort_by == "time" else ("largest", "smallest")
    return f"{SORT_LABELS[sort_by]}, {most if descending else least} first"


def build_process_rows(snapshot: Snapshot, sort_by: str = "memory", reverse: bool = False) -> list[TableRow]:
    """The process table's rows for a snapshot, sorted by one of SORT_KEYS (`reverse` flips the default
    direction). Pure and cheap: the monitor benchmark times it."""
    value = _SORT_VALUE[sort_by]
    descending = _DESCENDING_BY_DEFAULT[sort_by] != reverse
    ordered = sorted(snapshot.processes, key=lambda row: (value(row), -row.pid if descending else row.pid))
    if descending:
        ordered.reverse()
    own_uid = os.getuid() if hasattr(os, "getuid") else None
    return [TableRow(row_key(process), _cells(process, own_uid), process) for process in ordered]


def _column_widths(rows: list[TableRow]) -> list[int]:
    """Each fixed column's width: its label or its widest cell (the command takes what is left)."""
    # A sortable column keeps a cell for the header's sort mark.
    widths = [cell_len(label) + (key in SORT_KEYS) for key, label in COLUMNS[:_COMMAND]]
    for row in rows:
        for column, cell in enumerate(row.cells[:_COMMAND]):
            width = cell_len(cell) if cell.__class__ is str else cell.cell_len  # type: ignore[union-attr]
            if width > widths[column]:
                widths[column] = width
    return widths


def _line_text(cells: Cells, widths: list[int], command_offset: int) -> Text:
    """One table line as Text: the fixed columns padded to their widths, then the command from
    `command_offset` on."""
    text = Text(no_wrap=True, end="")
    append = text.append
    for column, width in enumerate(widths):
        cell = cells[column]
        pad = " " * (width - (cell_len(cell) if cell.__class__ is str else cell.cell_len))  # type: ignore[union-attr]
        if column in _RIGHT_ALIGNED:
            append(pad)
            append(cell)
        else:
            append(cell)
            append(pad)
        append(" ")
    command = cells[_COMMAND]
    append(command[command_offset:] if command_offset else command)
    return text


def _command_in(command: str | Text, room: int) -> str | Text:
    """The command (from its scroll offset on) in `room` cells: whole words, then " …" when it is longer."""
    plain = command if isinstance(command, str) else command.plain
    fitted = whole_words(plain, room)
    if fitted == plain:
        return command
    if isinstance(command, str):
        return fitted
    kept = command[: len(fitted) - 1]
    kept.append(ELLIPSIS)
    return kept


def _line_segments(
    cells: Cells,
    widths: list[int],
    command_offset: int,
    console: Console,
    restyle: dict[Style, Style],
    room: int,
) -> list[Segment]:
    """One table line as segments, like `_line_text` but without Rich's text layout: the runs of plain
    cells become one segment; the styled cells are rendered with each role's style swapped for `restyle`'s.
    The command fills what is left of `room` cells in whole words."""
    segments: list[Segment] = []
    plain: list[str] = []

    def styled(text: Text) -> None:
        base = console.get_style(text.style) if text.style else None  # render() leaves the base style out
        for segment in text.render(console):
            style = segment.style if base is None else base + segment.style
            segments.append(Segment(segment.text, restyle.get(style, style) if style else style))

    for column, width in enumerate(widths):
        cell = cells[column]
        if cell.__class__ is str:
            pad = " " * (width - cell_len(cell))  # type: ignore[arg-type]
            plain.append(f"{pad}{cell} " if column in _RIGHT_ALIGNED else f"{cell}{pad} ")
            continue
        if plain:
            segments.append(Segment("".join(plain)))
            plain = []
        styled(cell)  # type: ignore[arg-type]
        segments.append(Segment(" " * (width - cell.cell_len + 1)))  # type: ignore[union-attr]
    command = cells[_COMMAND]
    command = command[command_offset:] if command_offset else command  # type: ignore[index]
    command = _command_in(command, room - sum(widths) - len(widths))  # type: ignore[arg-type]
    if command.__class__ is str:
        plain.append(command)  # type: ignore[arg-type]
    if plain:
        segments.append(Segment("".join(plain)))
    if command.__class__ is not str:
        styled(command)  # type: ignore[arg-type]
    return segments


class ProcessTable(RowList[TableRow]):
    """The process table: a header line and one line per process; a refresh repaints only the rows in view
    that changed, and an unchanged refresh costs nothing."""

    CURSOR = "process-table--cursor"
    CURSOR_BLURRED = "process-table--cursor-blurred"
    ODD_ROW = "process-table--odd-row"
    COMPONENT_CLASSES = {
        "process-table--header",
        CURSOR,
        CURSOR_BLURRED,
        ODD_ROW,
        *(f"process-table--{role}" for role in CELL_STYLES),
    }
    BINDINGS = [
        *cursor_bindings("home,g", "end,G"),
        Binding("left", "scroll_command(-1)", "Command left", show=False),
        Binding("right", "scroll_command(1)", "Command right", show=False),
    ]

    @dataclass
    class SortRequested(Message):
        """A sortable column's header was clicked."""

        key: str

    @dataclass
    class Highlighted(Message):
        """The cursor moved to another row (by a key or a click)."""

        row: TableRow | None

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's own parameter name
        super().__init__(id=id)
        self._widths = _column_widths([])
        self.command_offset = 0  # how far the command column is scrolled to the left
        self.sort_mark: tuple[str, bool] | None = None  # (column key, descending) marked in the header
        self._restyle: dict[Style, Style] | None = None  # a role's default look -> this table's

    # --- public API ---------------------------------------------------------------------------------------

    @property
    def selected(self) -> TableRow | None:
        """The row under the cursor, if any."""
        return self.selected_row

    @property
    def rows_shown(self) -> list[TableRow]:
        """The rows as shown, top to bottom."""
        return self.rows

    def line_text(self, index: int) -> str:
        """Row `index` as drawn at the current widths and command scroll (plain text)."""
        return _line_text(self.rows[index].cells, self._widths, self.command_offset).plain

    def set_sort_mark(self, key: str, descending: bool) -> None:
        """Mark the column the rows are sorted by in the header."""
        if self.sort_mark != (key, descending):
            self.sort_mark = (key, descending)
            self.refresh_line(0) if self.scroll_offset.y == 0 else self.refresh()

    # --- the RowList's questions --------------------------------------------------------------------------

    def row_key(self, row: TableRow) -> RowKey:
        return row.key

    def row_look(self, row: TableRow) -> Cells:
        return row.cells

    def measure_rows(self, rows: list[TableRow]) -> None:
        self._widths = _column_widths(rows)

    def line_layout(self) -> tuple[tuple[int, ...], int]:
        return tuple(self._widths), self.command_offset

    def cursor_moved(self) -> None:
        self.post_message(self.Highlighted(self.selected))

    def header_clicked(self, x: int, y: int) -> None:
        """Ask to sort by the sortable column clicked."""
        for (key, _label), width in zip(COLUMNS, self._widths, strict=False):
            if x < width + 1:
                if key in SORT_KEYS:
                    self.post_message(self.SortRequested(key))
                return
            x -= width + 1

    def render_row(self, row: TableRow, width: int) -> list[Segment]:
        if self._restyle is None:
            console = self.app.console
            self._restyle = {
                console.get_style(look): self.cell_style(f"process-table--{role}")
                for role, look in CELL_STYLES.items()
            }
        return _line_segments(
            row.cells, self._widths, self.command_offset, self.app.console, self._restyle, width
        )

    def render_header(self, y: int, width: int) -> Strip:
        labels: list[str | Text] = []
        for key, label in COLUMNS:
            if self.sort_mark is not None and self.sort_mark[0] == key:
                label = f"{label}{'▼' if self.sort_mark[1] else '▲'}"
            labels.append(label)
        text = _line_text(tuple(labels), self._widths, 0)
        line = Strip(list(text.render(self.app.console))).crop_extend(0, width, None)
        return line.apply_style(self.line_style("process-table--header"))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._restyle = None

    # --- actions ------------------------------------------------------------------------------------------

    def action_scroll_command(self, direction: int) -> None:
        """Scroll the command column sideways (the other columns stay put)."""
        longest = max((cell_len(str(row.cells[_COMMAND])) for row in self.rows), default=0)
        room = max(1, self.size.width - sum(self._widths) - len(self._widths))
        offset = max(0, min(self.command_offset + direction * COMMAND_STEP, max(0, longest - room)))
        if offset != self.command_offset:
            self.command_offset = offset
            self._line_layout = self.line_layout()
            self.refresh()
