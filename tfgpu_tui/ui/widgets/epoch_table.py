"""The Training tab's epoch table: one row per finished epoch, with as many columns as fit its width, chosen
by priority (fit run, epoch, loss, val_loss, time, then the other metrics), so none is cut mid-name."""

from __future__ import annotations

from collections.abc import Sequence

from textual import events
from textual.widgets import DataTable

from tfgpu_tui.training.run import EpochRecord
from tfgpu_tui.training.text_format import LR_COLUMN, epoch_row, has_lr_changes, metric_names

MAX_TABLE_ROWS = 2000
FIRST_COLUMNS = ("fit", "epoch", "loss", "val_loss", "time")
SCROLLBAR = 2  # the vertical scrollbar's columns, kept free so no sideways scrollbar appears


def pick_columns(widths: dict[str, int], available: int) -> list[str]:
    """Column names by priority (FIRST_COLUMNS, then the rest in their order) while their widths (padding
    included) fit `available` columns; the first column always."""
    order = [name for name in FIRST_COLUMNS if name in widths]
    order += [name for name in widths if name not in order]
    chosen: list[str] = []
    used = 0
    for name in order:
        if chosen and used + widths[name] > available:
            continue  # a narrower column further down may still fit
        chosen.append(name)
        used += widths[name]
    return chosen


class EpochTable(DataTable):
    """`show(epochs)` appends new epochs, and rebuilds when earlier rows, the metrics or the width changed."""

    def __init__(self, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.epochs: Sequence[EpochRecord] = []
        self.shown_columns: list[str] = []
        self._key: tuple = ()
        self._formatted: tuple = ((), [], {})
        self._last_formatted = 0

    def show(self, epochs: Sequence[EpochRecord]) -> None:
        """Draw these epochs (the newest MAX_TABLE_ROWS)."""
        self.epochs = epochs = epochs[-MAX_TABLE_ROWS:]
        if not epochs:
            if self._key:
                self.clear(columns=True)
                self._key, self.shown_columns = (), []
            return
        rows, widths = self._format(epochs)
        columns = pick_columns(widths, max(self.size.width - SCROLLBAR, 1))
        layout = (id(epochs[0]), tuple(columns))
        shown = self._key[1] if self._key and self._key[0] == layout else None
        if shown is not None and shown <= len(epochs) and id(epochs[shown - 1]) == self._key[2]:
            start = shown
        else:
            self.clear(columns=True)
            self.add_columns(*columns)
            self.shown_columns = columns
            start = 0
        if start == len(epochs):
            return
        for row in rows[start:]:
            self.add_row(*(row[name] for name in columns))
        self._key = (layout, len(epochs), id(epochs[-1]))
        self.move_cursor(row=len(epochs) - 1)

    def _format(self, epochs: Sequence[EpochRecord]) -> tuple[list[dict[str, str]], dict[str, int]]:
        """Every epoch's cells by column name, and each column's width; only new epochs are formatted."""
        names = metric_names(epochs)
        show_run = len({e.fit_run for e in epochs}) > 1
        show_lr = has_lr_changes(epochs)  # a column for the learning rate a callback set
        key = (id(epochs[0]), tuple(names), show_run, show_lr)
        _, rows, widths = self._formatted if self._formatted[0] == key else (key, [], {})
        if len(rows) > len(epochs) or (rows and id(epochs[len(rows) - 1]) != self._last_formatted):
            rows, widths = [], {}
        headers = [*(["fit"] if show_run else []), "epoch", "time", *names, *([LR_COLUMN] if show_lr else [])]
        for record in epochs[len(rows) :]:
            row = dict(zip(headers, epoch_row(record, names, show_run, show_lr), strict=True))
            rows.append(row)
            for name, cell in row.items():
                widths[name] = max(
                    widths.get(name, len(name) + 2 * self.cell_padding), len(cell) + 2 * self.cell_padding
                )
        self._formatted = (key, rows, widths)
        self._last_formatted = id(epochs[-1])
        return rows, widths

    def on_resize(self, event: events.Resize) -> None:
        """Fit the columns to the new width, and keep the newest epoch in view (a table that shrinks, as
        when `g` shows the plots, would keep its old scroll offset and show earlier epochs)."""
        if self.epochs:
            self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        self.show(self.epochs)
        if self.row_count and self.cursor_row == self.row_count - 1:
            self.scroll_end(animate=False, immediate=True)
