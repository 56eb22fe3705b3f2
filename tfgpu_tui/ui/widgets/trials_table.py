"""The Batch probe's trials: a row per batch size tried (per precision when comparing), "running" until the
trial's child process ends."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import DataTable

from tfgpu_tui.probe.trial import Trial, TrialResult
from tfgpu_tui.ui.text_fit import whole_words
from tfgpu_tui.ui.widgets.styled_text import ERROR, SUCCESS, WARNING

# Failures and warnings are bold as well as coloured: with NO_COLOR the weight still marks them.
RESULT_STYLES = {
    TrialResult.FITS: SUCCESS,
    TrialResult.OOM: ERROR,
    TrialResult.ERROR: ERROR,
    TrialResult.TIMEOUT: f"bold {WARNING}",
}
NOTE = "note"  # the last column: the width the others leave
RULE = "rule"
RESULT_WIDTH = max(len(word) for word in ["running", *(result.value for result in TrialResult)])
COLUMNS = (
    ("batch", "batch"),
    ("precision", "precision"),
    ("result", "result"),
    ("peak MB", "peak"),
    ("rule MB", "rule"),
    ("step ms", "step"),
    ("samples/s", "speed"),
    ("note", "note"),
)


def trial_cells(trial: Trial) -> dict[str, object]:
    """A trial's table cells by column key."""
    speed = trial.samples_per_second
    rule = trial.rule_of_thumb_mb
    return {
        "result": Content.styled(trial.result.value, RESULT_STYLES[trial.result]),
        "peak": "-" if trial.peak_mb is None else f"{trial.peak_mb:,.1f}",
        "rule": "-" if rule is None else f"{rule:,.1f}",
        "step": "-" if trial.step_seconds is None else f"{trial.step_seconds * 1000:,.1f}",
        "speed": "-" if speed is None else f"{speed:,.0f}",
    }


def trial_note(trial: Trial) -> str:
    """The first line of a trial's message (the note column shows as many of its words as fit)."""
    return trial.message.splitlines()[0] if trial.message else ""


class TrialsTable(DataTable):
    """Rows keyed by the caller (``precision:batch``); rows still running when the probe ends are dropped."""

    def __init__(self, id: str | None = None, with_rule: bool = True) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.done: set[str] = set()
        self.notes: dict[str, str] = {}  # each finished trial's whole note, by row key
        self.with_rule = (
            with_rule  # whether the "rule MB" column is shown (not where no trial has model facts)
        )

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        """The columns, the rule of thumb's only where trials can have one (`with_rule`)."""
        for label, key in COLUMNS[:-1]:  # the result column as wide as its longest word: "running" is whole
            if key != RULE or self.with_rule:
                self.add_column(label, key=key, width=RESULT_WIDTH if key == "result" else None)
        self.add_column(NOTE, key=NOTE, width=len("note"))

    def on_resize(self) -> None:
        self.fit_notes()

    def note_room(self) -> int:
        """The cells left to the note column: the table's width less the other columns and its padding."""
        others = sum(column.get_render_width(self) for column in self.ordered_columns[:-1])
        return max(self.scrollable_content_region.width - others - 2 * self.cell_padding, len("note"))

    def fit_notes(self) -> None:
        """Give the note column the width left, and each note as many whole words as fit in it, so that no
        note runs past the table's edge."""
        room = self.note_room()
        if self.ordered_columns[-1].width == room:
            return
        self.remove_column(NOTE)
        self.add_column(NOTE, key=NOTE, width=room, default="")
        for key, note in self.notes.items():
            self.update_cell(key, NOTE, whole_words(note, room))

    def reset(self, with_rule: bool = True) -> None:
        """No rows; the "rule MB" column only `with_rule` (simulated trials have no model to estimate)."""
        if with_rule != self.with_rule:
            self.with_rule = with_rule
            self.clear(columns=True)
            self._add_columns()
        self.clear()
        self.done = set()
        self.notes = {}

    def started(self, key: str, batch_size: int, precision: str) -> None:
        """A trial began: its row, marked running, selected."""
        cells = [""] * (len(self.ordered_columns) - 3)  # peak, (rule,) step, speed, note
        self.add_row(batch_size, precision, Content.styled("running", "italic"), *cells, key=key)
        self.move_cursor(row=self.row_count - 1)

    def finished(self, key: str, trial: Trial) -> None:
        """A trial ended: its results in its row."""
        self.done.add(key)
        for column, value in trial_cells(trial).items():
            if column != RULE or self.with_rule:
                self.update_cell(key, column, value, update_width=True)
        self.notes[key] = trial_note(trial)
        self.fit_notes()  # the other columns may have grown
        self.update_cell(key, NOTE, whole_words(self.notes[key], self.ordered_columns[-1].width))

    def drop_unfinished(self) -> None:
        """Remove the rows of trials cancelled before they finished."""
        for row_key in list(self.rows):
            if row_key.value not in self.done:
                self.remove_row(row_key)
