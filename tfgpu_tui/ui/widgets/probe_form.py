"""The Batch probe's form: four one-line groups (model and device; budget, steps, max batch; precision and
the Start/Cancel buttons; the pipeline to time instead of the search, last, where it pairs with the numbers
when two groups fit a row) that sit side by side when the width allows and wrap onto more rows when not, so
Start is always on screen."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal
from textual.reactive import reactive
from textual.widgets import Button, Checkbox, Input, Label, Select

from tfgpu_tui.probe.request import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MODEL,
    DEFAULT_STEPS,
    ProbeRequest,
    ProbeRequestError,
    builtin_model_names,
)
from tfgpu_tui.ui.widgets.marked_checkbox import MarkedCheckbox
from tfgpu_tui.ui.widgets.number_input import NumberInput

MODEL_HINT = f"{builtin_model_names()}, a saved model.keras, or package.module:function"
BUDGET_HINT = "MB the batch may use; empty: all the device's free memory (measured when the probe starts)"
COMPARE_HINT = "probe in float32, then in mixed precision, and compare"
PIPELINE_HINT = (
    "package.module:function returning your batched tf.data.Dataset (from the current directory or "
    "PYTHONPATH): Start times it against the model instead of searching for a batch size"
)
GUTTER = 2  # columns between two groups on one row
NUMBER_WORDS = {int: "a whole number", float: "a number"}


def columns_that_fit(widths: list[int], available: int, gutter: int = GUTTER) -> int:
    """The most groups per row (a grid whose columns are as wide as their widest cell) that fit `available`
    columns; at least 1."""
    for count in range(len(widths), 1, -1):
        columns = [max(widths[i] for i in range(start, len(widths), count)) for start in range(count)]
        if sum(columns) + gutter * (count - 1) <= available:
            return count
    return 1


class ProbeForm(Container):
    """The form's fields (ids ``#probe-model``, ``#probe-start``...); `request()` reads them, `running`
    switches Start and Cancel."""

    DEFAULT_CSS = """
    /* The probe's form: groups in a grid whose column count ProbeForm.fit_columns sets */
    ProbeForm {
        layout: grid; grid-size: 1; grid-columns: auto; grid-rows: auto; grid-gutter: 0 2;
        height: auto; padding: 0 1;
    }
    ProbeForm .form-group { width: auto; height: 1; }
    ProbeForm Label { color: $text-muted; margin-right: 1; }
    ProbeForm Input, ProbeForm Select { margin-right: 2; }
    ProbeForm #probe-model { width: 30; }
    ProbeForm #probe-device { width: 16; margin-right: 0; }
    ProbeForm #probe-budget { width: 12; }
    ProbeForm #probe-steps { width: 6; }
    ProbeForm #probe-max-batch { width: 8; margin-right: 0; }
    ProbeForm #probe-pipeline { width: 24; margin-right: 0; }
    ProbeForm Checkbox { margin-right: 2; }
    ProbeForm Button { min-width: 8; margin-right: 1; }
    """

    BINDINGS = [Binding("escape", "leave_field", "Leave field")]

    running: reactive[bool] = reactive(False)

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
            yield NumberInput(
                self.budget,
                placeholder="(all free)",
                type="number",
                id="probe-budget",
                tooltip=BUDGET_HINT,
                compact=True,
            )
            yield Label("Steps")
            yield NumberInput(str(DEFAULT_STEPS), type="integer", id="probe-steps", compact=True)
            yield Label("Max batch")
            yield NumberInput(str(DEFAULT_MAX_BATCH), type="integer", id="probe-max-batch", compact=True)
        with Horizontal(classes="form-group", id="probe-group-run"):
            yield MarkedCheckbox("Mixed precision", id="probe-mixed", compact=True)
            yield MarkedCheckbox("fp32 vs mixed", id="probe-compare", tooltip=COMPARE_HINT, compact=True)
            yield Button("Start", variant="primary", id="probe-start", compact=True)
            yield Button("Cancel", variant="error", id="probe-cancel", disabled=True, compact=True)
        with Horizontal(classes="form-group", id="probe-group-pipeline"):
            yield Label("Pipeline")
            yield Input(
                placeholder="module:function", id="probe-pipeline", tooltip=PIPELINE_HINT, compact=True
            )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`esc` leaves a text field or a closed list (elsewhere it goes on to the tab: cancel the probe)."""
        if action == "leave_field":
            return isinstance(self.screen.focused, Input | Select)
        return True

    def action_leave_field(self) -> None:
        """Focus the button that can be pressed (Start, or Cancel while a probe runs): the number keys switch
        tabs again, and `q` and `?` work."""
        start = self.query_one("#probe-start", Button)
        (start if not start.disabled else self.query_one("#probe-cancel", Button)).focus()

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

    def watch_running(self, running: bool) -> None:
        self.query_one("#probe-start", Button).disabled = running
        self.query_one("#probe-cancel", Button).disabled = not running

    @property
    def comparing(self) -> bool:
        """Whether float32 and mixed precision are to be probed side by side."""
        return self.query_one("#probe-compare", Checkbox).value

    @property
    def pipeline(self) -> str:
        """The pipeline to time instead of the search (``package.module:function``), or empty."""
        return self.query_one("#probe-pipeline", Input).value.strip()

    def set_devices(self, devices: list[str]) -> None:
        """Offer these GPUs (the first preselected) and the CPU."""
        select = self.query_one("#probe-device", Select)
        select.set_options([(name, name) for name in [*devices, "CPU"]])
        select.value = devices[0]

    def request(self, python: str) -> ProbeRequest:
        """The request the form describes (budget 0 = use the device's free memory); raises
        ProbeRequestError for anything that is not a number where one is needed."""
        steps = self._number("#probe-steps", "steps per trial", int)
        max_batch = self._number("#probe-max-batch", "max batch", int)
        return ProbeRequest(
            model=self.query_one("#probe-model", Input).value.strip() or DEFAULT_MODEL,
            device=str(self.query_one("#probe-device", Select).value),
            budget_mb=self._number("#probe-budget", "the budget", float) or 0.0,
            steps=DEFAULT_STEPS if steps is None else int(steps),
            max_batch=DEFAULT_MAX_BATCH if max_batch is None else int(max_batch),
            mixed_precision=self.query_one("#probe-mixed", Checkbox).value and not self.comparing,
            python=python,
        )

    def _number(self, selector: str, what: str, kind: type) -> float | int | None:
        text = self.query_one(selector, Input).value.strip()
        if not text:
            return None
        try:
            return kind(text)
        except ValueError:
            raise ProbeRequestError(f"{what} must be {NUMBER_WORDS[kind]}, not {text!r}") from None
