"""The GPU process table: rows built from a Snapshot by a plain function, and a DataTable that applies them
in place, keeping the selection on the same process (PID + start time + GPU) across refreshes."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from itertools import compress
from operator import is_not
from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import CellKey, ColumnKey
from textual.widgets.data_table import RowKey as DataTableRowKey

from tfgpu_tui.gpu.model import HostState, JupyterKernel, ProcessRow, Snapshot
from tfgpu_tui.ui.widgets.gpu_format import NA, duration_text, mib_text, number_text

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
_HOST_STATE_MARK = {
    HostState.NO_SUCH_PROCESS: "gone",
    HostState.NO_PERMISSION: "no permission",
    HostState.ZOMBIE: "zombie",
    HostState.OTHER_NAMESPACE: "other PID namespace: run the container with --pid=host",
}

Cells = tuple["str | Text", ...]
SegmentLines = list[list["Segment"]]
CELL_CACHE_LIMIT = 8192  # rendered cells kept; about 16 screens of a 10-column table


RowKey = tuple[int, "float | None", "int | None"]


class TableRow(NamedTuple):
    """One table row: the identity it belongs to, its cells, and the process it shows."""

    key: RowKey
    cells: Cells
    process: ProcessRow


def row_key(process: ProcessRow) -> RowKey:
    """What makes a row the same row across refreshes: PID, start time and GPU."""
    return (process.pid, process.create_time, process.gpu_index)


def describe_command(process: ProcessRow) -> Text:
    """The command column: unresolved-host marker, Jupyter notebook or kernel, then the command line."""
    return _command_text(process.host_state, process.jupyter, process.command)


@lru_cache(maxsize=4096)
def _command_text(host_state: HostState, kernel: JupyterKernel | None, command: str | None) -> Text:
    """Cached: a process's command rarely changes, and building Text for hundreds of rows each tick adds up.
    Always Text, never str, so that brackets in a command line are not read as markup."""
    text = Text()
    mark = _HOST_STATE_MARK.get(host_state)
    if mark:
        text.append(f"[{mark}] ", style="bold yellow")
    if kernel is not None:
        if kernel.notebook_path:
            text.append(f"notebook {kernel.notebook_path}", style="bold cyan")
        else:
            why = f" ({kernel.why_unknown})" if kernel.why_unknown else ""
            text.append(f"jupyter kernel {kernel.kernel_id}{why}", style="cyan")
        if kernel.execution_state:
            text.append(f" [{kernel.execution_state}]", style="dim")
        return text
    text.append(command or ("" if mark else NA))
    return text


@lru_cache(maxsize=1024)
def _user_text(user: str, other: bool) -> Text:
    """The user cell; other users' processes are dimmed (as in nvitop)."""
    return Text(user, style="dim" if other else "")


_TF_MARK: dict[bool | None, str | Text] = {True: Text("TF", style="bold magenta"), False: "", None: "?"}


def _cells(process: ProcessRow, own_uid: int | None) -> Cells:
    other = process.uid is not None and process.uid != own_uid
    return (
        str(process.pid),
        _user_text(process.user or NA, other),
        "CPU" if process.gpu_index is None else str(process.gpu_index),
        mib_text(process.gpu_memory_mib),
        number_text(process.sm_percent),
        number_text(process.cpu_percent),
        mib_text(process.host_memory_mib),
        duration_text(process.running_seconds),
        _TF_MARK[process.tensorflow_loaded],
        _command_text(process.host_state, process.jupyter, process.command),
    )


def sort_caption(sort_by: str, reverse: bool) -> str:
    """How the table is ordered, e.g. "GPU memory, largest first"."""
    descending = _DESCENDING_BY_DEFAULT[sort_by] != reverse
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


def _width(cell: str | Text) -> int:
    return len(cell) if isinstance(cell, str) else cell.cell_len


class ProcessTable(DataTable):
    """A row-cursor DataTable that updates changed cells in place and keeps the selected process selected."""

    DEFAULT_CSS = """
    ProcessTable { height: 1fr; min-height: 5; }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's own parameter name
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._rows: list[TableRow] = []
        self._next_key = 0
        self._row_keys: list[DataTableRowKey] = []  # by position; rows only come and go at the end
        self._column_keys: list[ColumnKey] = []
        # Rendered body cells by (position, looks) -> (value, lines); see `_render_cell`.
        self._cells_drawn: dict[tuple[object, ...], tuple[str | Text, SegmentLines]] = {}

    def on_mount(self) -> None:
        self._column_keys = [self.add_column(label, key=key) for key, label in COLUMNS]

    @property
    def selected(self) -> TableRow | None:
        """The row under the cursor, if any."""
        if 0 <= self.cursor_row < len(self._rows):
            return self._rows[self.cursor_row]
        return None

    @property
    def rows_shown(self) -> list[TableRow]:
        """The rows as shown, top to bottom."""
        return list(self._rows)

    def show_rows(self, rows: list[TableRow]) -> None:
        """Apply new rows: change only the cells that differ, add or drop rows at the end, and put the
        cursor back on the process it was on (or on the same position when that process has gone)."""
        selected = self.selected
        changes = []
        changed_rows = []
        columns = range(len(COLUMNS))
        for index, (row_key, row, previous) in enumerate(zip(self._row_keys, rows, self._rows, strict=False)):
            new_cells, old_cells = row.cells, previous.cells
            count = len(changes)
            # Text cells come from caches, so an unchanged one is the same object; strings compare by value.
            for column in compress(columns, map(is_not, new_cells, old_cells)):
                new, old = new_cells[column], old_cells[column]
                if new.__class__ is str and new == old:
                    continue
                changes.append((row_key, self._column_keys[column], new))
            if len(changes) > count:
                changed_rows.append(index)
        self._write_cells(changes, changed_rows)
        for row in rows[len(self._rows) :]:
            self._row_keys.append(self.add_row(*row.cells, key=f"r{self._next_key}"))
            self._next_key += 1
        while len(self._row_keys) > len(rows):
            self.remove_row(self._row_keys.pop())
        self._rows = list(rows)
        if selected is not None:
            index = next((i for i, row in enumerate(rows) if row.key == selected.key), None)
            if index is not None and index != self.cursor_row:
                self.move_cursor(row=index)

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> SegmentLines:
        """DataTable keys its cell cache on a counter that every change bumps, so one changed cell (the
        running time changes every second) re-renders every visible cell through Rich. This keeps each body
        cell's rendering for as long as its value is the same object (cached Text) or an equal string."""
        if not 0 <= row_index < len(self._rows) or column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        value = self._rows[row_index].cells[column_index]
        key = (row_index, column_index, base_style, width, cursor, hover, self.show_cursor,
               self._show_hover_cursor, self._pseudo_class_state)  # fmt: skip
        drawn = self._cells_drawn.get(key)
        if drawn is not None and (drawn[0] is value or (value.__class__ is str and drawn[0] == value)):
            return drawn[1]
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        if len(self._cells_drawn) >= CELL_CACHE_LIMIT:
            self._cells_drawn.clear()
        self._cells_drawn[key] = (value, lines)
        return lines

    def _write_cells(
        self, changes: list[tuple[DataTableRowKey, ColumnKey, str | Text]], changed_rows: list[int]
    ) -> None:
        """Write changed cells and repaint only the rows they are in. DataTable.update_cell repaints per cell
        (~80 us each, which is 40 ms for 512 rows), so this writes DataTable's cell store directly - the same
        three steps update_cell takes (store, bump the update count, queue width measurement). Only a cell
        wider than its column is queued for measuring: DataTable re-measures the whole column for a queued
        cell narrower than the column, which for 512 rows cost ~30 ms a second. Rows scrolled out of view
        cost nothing to repaint; a column that must widen repaints the whole table."""
        if not changes:
            return
        data = self._data
        columns = self.columns
        for row_key, column_key, value in changes:
            data[row_key][column_key] = value
            if _width(value) > columns[column_key].content_width:
                self._updated_cells.add(CellKey(row_key, column_key))
                self._require_update_dimensions = True
        self._update_count += 1
        if self._require_update_dimensions:
            self.refresh()
            return
        header = self.header_height if self.show_header else 0
        top = self.scroll_offset.y - header - 1  # the first row index in view, less a row of margin
        bottom = top + self.size.height + 2  # rows are one line high
        for index in changed_rows:
            if top <= index <= bottom:
                self.refresh_row(index)
