"""The Batch probe's form: three one-line groups (model and device; budget, steps, max batch; precision and
the Start/Cancel buttons) that sit side by side when the width allows and wrap onto more rows when not, so
Start is always on screen."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Container, Horizontal
from textual.widgets import Button, Checkbox, Input, Label, Select

from tfgpu_tui.probe.request import DEFAULT_MAX_BATCH, DEFAULT_MODEL, DEFAULT_STEPS, builtin_model_names

MODEL_HINT = f"{builtin_model_names()}, a saved model.keras, or package.module:function"
COMPARE_HINT = "probe in float32, then in mixed precision, and compare"
GUTTER = 2  # columns between two groups on one row


def columns_that_fit(widths: list[int], available: int, gutter: int = GUTTER) -> int:
    """The most groups per row (a grid whose columns are as wide as their widest cell) that fit `available`
    columns; at least 1."""
    for count in range(len(widths), 1, -1):
        columns = [max(widths[i] for i in range(start, len(widths), count)) for start in range(count)]
        if sum(columns) + gutter * (count - 1) <= available:
            return count
    return 1


class ProbeForm(Container):
    """The form's fields; the tab reads them by id (``#probe-model``, ``#probe-start``...)."""


    def __init__(self, budget: str, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.budget = budget

    def compose(self) -> ComposeResult:
        with Horizontal(classes="form-group", id="probe-group-model"):
            yield Label("Model")
            yield Input(DEFAULT_MODEL, id="probe-model", tooltip=MODEL_HINT, compact=True)
            yield Label("Device")
            yield Select([("CPU", "CPU")], value="CPU", allow_blank=False, id="probe-device", compact=True)
        with Horizontal(classes="form-group", id="probe-group-numbers"):
            yield Label("Budget MB")
            yield Input(self.budget, placeholder="free", type="number", id="probe-budget", compact=True)
            yield Label("Steps")
            yield Input(str(DEFAULT_STEPS), type="integer", id="probe-steps", compact=True)
            yield Label("Max batch")
            yield Input(str(DEFAULT_MAX_BATCH), type="integer", id="probe-max-batch", compact=True)
        with Horizontal(classes="form-group", id="probe-group-run"):
            yield Checkbox("Mixed precision", id="probe-mixed", compact=True)
            yield Checkbox("fp32 vs mixed", id="probe-compare", tooltip=COMPARE_HINT, compact=True)
            yield Button("Start", variant="primary", id="probe-start", compact=True)
            yield Button("Cancel", variant="error", id="probe-cancel", disabled=True, compact=True)

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.fit_columns)

    def fit_columns(self, tries: int = 5) -> None:
        """As many groups per row as the width allows (one a row until the groups have been measured)."""
        widths = [group.outer_size.width for group in self.query(".form-group")]
        if not all(widths):
            if tries:
                self.call_after_refresh(self.fit_columns, tries - 1)
            return
        count = columns_that_fit(widths, self.content_region.width)
        if self.styles.grid_size_columns != count:
            self.styles.grid_size_columns = count
