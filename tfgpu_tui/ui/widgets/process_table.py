"""The GPU process table: rows built from a Snapshot by a plain function, and a Line API widget that draws
only the rows in view from a cache of rendered lines, keeping the selection on the same process (PID + start
time + GPU) across refreshes. PID, user, GPU and the figures stay put; left/right scroll only the command."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tfgpu_tui.durations import idle_text
from tfgpu_tui.gpu.attribution import attribution_tag, memory_tag
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
    HostState.OTHER_NAMESPACE: "another container's or the host's",
}

Cells = tuple["str | Text", ...]
# Columns whose figures line up on the right; the command (last) is the only column that scrolls sideways.
_RIGHT_ALIGNED = frozenset(i for i, (key, _) in enumerate(COLUMNS) if key not in {"user", "gpu", "tf"})
_COMMAND = len(COLUMNS) - 1
COMMAND_STEP = 8  # cells the command moves per left/right press
# The looks of marked cells, by role. These are plain defaults for use without an app (the benchmark); the
# table replaces them with its theme's component styles (process-table--<role>) when it mounts.
CELL_STYLES: dict[str, str | Style] = {
    "marker": "bold yellow",
    "notebook": "bold cyan",
    "kernel": "cyan",
    "dim": "dim",
    "tf": "bold magenta",
}


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
def _command_text(
    host_state: HostState,
    kernel: JupyterKernel | None,
    command: str | None,
    idle_minutes: int = 0,
    own_child: bool = False,
    tags: tuple[str, ...] = (),
) -> Text:
    """Cached: a process's command rarely changes, and building Text for hundreds of rows each tick adds up.
    Always Text, never str, so that brackets in a command line are not read as markup. `idle_minutes`: how
    long it has held GPU memory at 0 % SM (shown from 1 min); `own_child`: a tfgpu-tui probe child; `tags`:
    inside a container, how the row was joined to its process and why its memory is not a reported figure."""
    text = Text()
    for tag in tags:
        text.append(f"[{tag}] ", style=CELL_STYLES["marker"])
    mark = _HOST_STATE_MARK.get(host_state)
    if mark:
        text.append(f"[{mark}] ", style=CELL_STYLES["marker"])
    if idle_minutes:
        text.append(f"[idle {idle_text(idle_minutes * 60)}] ", style=CELL_STYLES["marker"])
    if own_child:
        text.append("[tfgpu-tui child] ", style=CELL_STYLES["dim"])
    if kernel is not None:
        if kernel.notebook_path:
            text.append(f"notebook {kernel.notebook_path}", style=CELL_STYLES["notebook"])
        else:
            why = f" ({kernel.why_unknown})" if kernel.why_unknown else ""
            text.append(f"jupyter kernel {kernel.kernel_id}{why}", style=CELL_STYLES["kernel"])
        if kernel.execution_state:
            text.append(f" [{kernel.execution_state}]", style=CELL_STYLES["dim"])
        return text
    text.append(command or ("" if mark else NA))
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
    tags = tuple(tag for tag in (attribution_tag(process), memory_tag(process)) if tag)
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
        _command_text(
            process.host_state,
            process.jupyter,
            process.command,
            _idle_minutes(process),
            process.own_child,
            tags,
        ),
    )


def _idle_minutes(process: ProcessRow) -> int:
    """Whole minutes a process has held GPU memory at 0 % SM; 0 under a minute or when unknown."""
    idle = process.idle_seconds
    return int(idle // 60) if idle is not None and idle >= 60 else 0


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


class _SegmentCache:
    """Rendered segments of the styled (Text) cells. Those come from caches, so the same object recurs every
    refresh; each is kept (which also keeps its id from being reused) until the cache is full."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._by_id: dict[tuple[int, int], tuple[Text, list[Segment]]] = {}

    def get(self, text: Text, offset: int, console: Console) -> list[Segment]:
        key = (id(text), offset)
        found = self._by_id.get(key)
        if found is not None and found[0] is text:
            return found[1]
        if len(self._by_id) >= self.LIMIT:
            self._by_id.clear()
        part = text[offset:] if offset else text
        segments = list(part.render(console))  # the spans' styles; the base style goes under them
        if part.style:
            segments = list(Segment.apply_style(segments, console.get_style(part.style)))
        self._by_id[key] = (text, segments)
        return segments

    def clear(self) -> None:
        self._by_id.clear()


def _line_segments(
    cells: Cells, widths: list[int], command_offset: int, styled: _SegmentCache, console: Console
) -> list[Segment]:
    """One table line as segments, like `_line_text` but without Rich's text layout: the runs of plain
    cells become one segment, the styled cells reuse their rendered segments."""
    segments: list[Segment] = []
    plain: list[str] = []
    for column, width in enumerate(widths):
        cell = cells[column]
        if cell.__class__ is str:
            pad = " " * (width - cell_len(cell))  # type: ignore[arg-type]
            plain.append(f"{pad}{cell} " if column in _RIGHT_ALIGNED else f"{cell}{pad} ")
            continue
        if plain:
            segments.append(Segment("".join(plain)))
            plain = []
        segments.extend(styled.get(cell, 0, console))  # type: ignore[arg-type]
        segments.append(Segment(" " * (width - cell.cell_len + 1)))  # type: ignore[union-attr]
    command = cells[_COMMAND]
    if command.__class__ is str:
        plain.append(command[command_offset:])  # type: ignore[index]
    if plain:
        segments.append(Segment("".join(plain)))
    if command.__class__ is not str:
        segments.extend(styled.get(command, command_offset, console))  # type: ignore[arg-type]
    return segments


class ProcessTable(ScrollView, can_focus=True):
    """The process table: a header line and one line per process, drawn from a cache of rendered lines so that
    a refresh repaints only the rows in view that changed, and an unchanged refresh costs nothing."""

    COMPONENT_CLASSES = {
        "process-table--header",
        "process-table--cursor",
        "process-table--cursor-blurred",
        "process-table--odd-row",
        *(f"process-table--{role}" for role in CELL_STYLES),
    }
    BINDINGS = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,g", "first_row", "First row", show=False),
        Binding("end,G", "last_row", "Last row", show=False),
        Binding("left", "scroll_command(-1)", "Command left", show=False),
        Binding("right", "scroll_command(1)", "Command right", show=False),
    ]

    class SortRequested(Message):
        """A sortable column's header was clicked."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    class Highlighted(Message):
        """The cursor moved to another row (by a key or a click)."""

        def __init__(self, row: TableRow | None) -> None:
            super().__init__()
            self.row = row

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's own parameter name
        super().__init__(id=id)
        self._rows: list[TableRow] = []
        self._widths = _column_widths([])
        self._cursor = 0
        self.command_offset = 0  # how far the command column is scrolled to the left
        self.sort_mark: tuple[str, bool] | None = None  # (column key, descending) marked in the header
        self._lines: dict[int, tuple[tuple[object, ...], Strip]] = {}  # row index -> (looks, rendered line)
        self._header: tuple[tuple[object, ...], Strip] | None = None
        self._styled = _SegmentCache()
        self._styles: dict[str, Style] = {}  # base style by component class ("" for the widget's own)

    # --- public API ---------------------------------------------------------------------------------------

    @property
    def selected(self) -> TableRow | None:
        """The row under the cursor, if any."""
        return self._rows[self._cursor] if 0 <= self._cursor < len(self._rows) else None

    @property
    def cursor_row(self) -> int:
        """The cursor's row index."""
        return self._cursor

    @property
    def rows_shown(self) -> list[TableRow]:
        """The rows as shown, top to bottom."""
        return list(self._rows)

    @property
    def visible_rows(self) -> range:
        """The indices of the rows in view (the header line excluded)."""
        top = round(self.scroll_offset.y)
        return range(top, min(len(self._rows), top + max(0, self.size.height - 1)))

    def line_text(self, index: int) -> str:
        """Row `index` as drawn at the current widths and command scroll (plain text)."""
        return _line_text(self._rows[index].cells, self._widths, self.command_offset).plain

    def move_cursor(self, row: int) -> None:
        """Put the cursor on row `row` (clamped) and scroll it into view."""
        row = max(0, min(row, len(self._rows) - 1))
        if row != self._cursor:
            self.refresh_row(self._cursor)
            self._cursor = row
            self.refresh_row(row)
            self.post_message(self.Highlighted(self.selected))
        self._scroll_to_cursor()

    def refresh_row(self, index: int) -> None:
        """Repaint one row's line (nothing happens for a row out of view)."""
        if index in self.visible_rows:
            self.refresh_line(index + 1)

    def show_rows(self, rows: list[TableRow]) -> None:
        """Apply new rows: repaint only the rows in view whose cells changed, and put the cursor back on the
        process it was on (or on the same position when that process has gone)."""
        selected, previous = self.selected, self._cursor
        old = self._rows
        self._rows = list(rows)
        widths = _column_widths(self._rows)
        if len(rows) != len(old):
            self.virtual_size = Size(0, len(rows) + 1)
        index = self._cursor
        if selected is not None:
            index = next((i for i, row in enumerate(rows) if row.key == selected.key), index)
        self._cursor = max(0, min(index, len(rows) - 1))
        if widths != self._widths or len(rows) != len(old):
            self._widths = widths
            self.refresh()
        else:
            moved = (previous, self._cursor) if previous != self._cursor else ()
            for position in self.visible_rows:
                if rows[position].cells != old[position].cells or position in moved:
                    self.refresh_row(position)  # changed, or the cursor left it or came to it
        self._scroll_to_cursor()

    def set_sort_mark(self, key: str, descending: bool) -> None:
        """Mark the column the rows are sorted by in the header."""
        if self.sort_mark != (key, descending):
            self.sort_mark = (key, descending)
            self.refresh_line(0) if self.scroll_offset.y == 0 else self.refresh()

    # --- actions ------------------------------------------------------------------------------------------

    def action_cursor_up(self) -> None:
        self.move_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self._cursor + 1)

    def action_page_up(self) -> None:
        self.move_cursor(self._cursor - max(1, self.size.height - 2))

    def action_page_down(self) -> None:
        self.move_cursor(self._cursor + max(1, self.size.height - 2))

    def action_first_row(self) -> None:
        """Select the first row."""
        self.move_cursor(0)

    def action_last_row(self) -> None:
        """Select the last row."""
        self.move_cursor(len(self._rows) - 1)

    def action_scroll_command(self, direction: int) -> None:
        """Scroll the command column sideways (the other columns stay put)."""
        longest = max((cell_len(str(row.cells[_COMMAND])) for row in self._rows), default=0)
        room = max(1, self.size.width - sum(self._widths) - len(self._widths))
        offset = max(0, min(self.command_offset + direction * COMMAND_STEP, max(0, longest - room)))
        if offset != self.command_offset:
            self.command_offset = offset
            self.refresh()

    # --- events -------------------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self._read_theme()
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        self.call_after_refresh(self._read_theme)

    def _read_theme(self) -> None:
        """Take the marked cells' looks from the theme (component classes), and redraw."""
        for role in list(CELL_STYLES):
            CELL_STYLES[role] = self.get_component_rich_style(f"process-table--{role}", partial=True)
        _command_text.cache_clear()
        _user_text.cache_clear()
        _tf_mark.cache_clear()
        self._styled.clear()
        self._lines.clear()
        self._header = None
        self.refresh()

    def on_focus(self) -> None:
        self.refresh_row(self._cursor)

    def on_blur(self) -> None:
        self.refresh_row(self._cursor)

    def on_resize(self) -> None:
        self._lines.clear()
        self._header = None

    def on_click(self, event: events.Click) -> None:
        """A click on a row selects it; on a sortable header, asks to sort by that column."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            x = offset.x
            for (key, _label), width in zip(COLUMNS, self._widths, strict=False):
                if x < width + 1:
                    if key in SORT_KEYS:
                        self.post_message(self.SortRequested(key))
                    return
                x -= width + 1
            return
        self.move_cursor(round(self.scroll_offset.y) + offset.y - 1)

    # --- drawing ------------------------------------------------------------------------------------------

    def _scroll_to_cursor(self) -> None:
        top = round(self.scroll_offset.y)
        body = max(1, self.size.height - 1)
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False)
        elif self._cursor >= top + body:
            self.scroll_to(y=self._cursor - body + 1, animate=False)

    def render_line(self, y: int) -> Strip:
        """Line `y` of the widget: the header on top, then the rows from the scroll position on."""
        width = self.size.width
        if y == 0:
            return self._header_line(width)
        index = round(self.scroll_offset.y) + y - 1
        if not 0 <= index < len(self._rows):
            return Strip.blank(width, self._base_style(""))
        cells = self._rows[index].cells
        cursor = index == self._cursor
        focused = cursor and self.has_focus
        looks = (cells, width, self.command_offset, cursor, focused, index % 2, self._widths)
        cached = self._lines.get(index)
        if cached is not None and cached[0] == looks:
            return cached[1]
        if cursor:
            name = "process-table--cursor" if self.has_focus else "process-table--cursor-blurred"
        else:
            name = "process-table--odd-row" if index % 2 else ""
        base = self._base_style(name)
        segments = _line_segments(cells, self._widths, self.command_offset, self._styled, self.app.console)
        line = Strip(segments).crop_extend(0, width, None).apply_style(base)
        self._lines[index] = (looks, line)
        return line

    def _header_line(self, width: int) -> Strip:
        looks = (width, self.sort_mark, self._widths)
        if self._header is not None and self._header[0] == looks:
            return self._header[1]
        labels: list[str | Text] = []
        for key, label in COLUMNS:
            if self.sort_mark is not None and self.sort_mark[0] == key:
                label = f"{label}{'▼' if self.sort_mark[1] else '▲'}"
            labels.append(label)
        base = self._base_style("process-table--header")
        line = self._strip(_line_text(tuple(labels), self._widths, 0), width, base)
        self._header = (looks, line)
        return line

    def _base_style(self, component: str) -> Style:
        """The widget's style with a component class's on top (cached: working it out walks up the DOM)."""
        style = self._styles.get(component)
        if style is None:
            style = (
                self.rich_style + self.get_component_rich_style(component) if component else self.rich_style
            )
            self._styles[component] = style
        return style

    def notify_style_update(self) -> None:
        """The CSS changed (a theme, a pseudo-class): forget the cached looks."""
        super().notify_style_update()
        self._styles.clear()
        self._lines.clear()
        self._header = None

    def _strip(self, text: Text, width: int, base: Style) -> Strip:
        segments = list(text.render(self.app.console))
        return Strip(segments).crop_extend(0, width, None).apply_style(base)
