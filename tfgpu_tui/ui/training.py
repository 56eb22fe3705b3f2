"""The Training tab: follows the training log (like tail -F) and shows progress, plots, epochs and problems.

A worker thread owns the `LogWatch` (file following, tail-first parsing of big files, background history
scan) and posts snapshots; the widgets only draw them.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Input, ProgressBar, Static
from textual.worker import get_current_worker

from tfgpu_tui.alerts import Severity
from tfgpu_tui.training.follow import FileState
from tfgpu_tui.training.problems import Problem
from tfgpu_tui.training.report import epoch_row, format_value, metric_names, status_parts
from tfgpu_tui.training.run import TrainingRun
from tfgpu_tui.training.watch import LogWatch
from tfgpu_tui.ui.messages import AlertsChanged
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.training_plots import EpochLossPlot, StepLossPlot

POLL_SECONDS = 0.25
POST_EVERY_SECONDS = 0.2  # at most this often while changing; once a second when idle (for the stall check)
MAX_TABLE_ROWS = 2000
BACKFILL_CHUNKS_PER_POLL = 32  # 1 MB chunks: about 30 ms of scanning between polls
TONE_STYLE = {"": "", "strong": "bold", "good": "green", "bad": "bold red"}
SEVERITY_STYLE = {Severity.CRITICAL: "bold red", Severity.WARNING: "yellow", Severity.INFO: "green"}


class RunSnapshot(Message):
    """The followed log's state, from the worker thread."""

    def __init__(
        self, path: Path, run: TrainingRun, state: FileState, idle: float, backfill: tuple[int, int] | None
    ) -> None:
        super().__init__()
        self.path = path
        self.run = run
        self.state = state
        self.idle = idle
        self.backfill = backfill


class FollowFailed(Message):
    """The worker could not follow the file."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__()
        self.path = path
        self.reason = reason


class TrainingTab(DashboardTab):
    """Follows `settings.log_path`; `o` opens another file."""

    TAB_ID = "training"
    TAB_TITLE = "Training"
    BINDINGS = [
        Binding("o", "open_file", "Open log"),
        Binding("r", "reload", "Reload"),
        Binding("escape", "close_open", "Cancel", show=False),
    ]
    DEFAULT_CSS = """
    TrainingTab #training-head { height: auto; }
    TrainingTab #training-status { height: auto; padding: 0 1; }
    TrainingTab #training-steps { height: 1; padding: 0 1; }
    TrainingTab #training-steps Bar { width: 1fr; }
    TrainingTab #training-path { display: none; }
    TrainingTab #training-path.-open { display: block; }
    TrainingTab #training-plots { height: 2fr; min-height: 8; }
    TrainingTab #training-bottom { height: 3fr; }
    TrainingTab #training-epochs { width: 1fr; }
    TrainingTab #training-side { width: 1fr; }
    TrainingTab #training-problems-box { height: auto; max-height: 50%; border-top: solid $primary; }
    TrainingTab #training-problems { height: auto; padding: 0 1; }
    TrainingTab #training-lines {
        height: 1fr; padding: 0 1; border-top: solid $primary; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.path = Path(settings.log_path)
        self.run: TrainingRun | None = None
        self._table_key: tuple = ()
        self._alert_key: tuple = ()

    def compose(self) -> ComposeResult:
        with Vertical(id="training-head"):
            yield Input(placeholder="path of the training log, Enter to follow it", id="training-path")
            yield Static(id="training-status")
            yield ProgressBar(total=None, show_eta=False, id="training-steps")
        with Horizontal(id="training-plots"):
            yield EpochLossPlot(id="training-epoch-plot")
            yield StepLossPlot(id="training-step-plot")
        with Horizontal(id="training-bottom"):
            yield DataTable(id="training-epochs", cursor_type="row", zebra_stripes=True)
            with Vertical(id="training-side"):
                with VerticalScroll(id="training-problems-box"):
                    yield Static(id="training-problems")
                yield Static(id="training-lines")

    def on_mount(self) -> None:
        self.follow(self.path)

    def focus_default(self) -> None:
        self.query_one("#training-epochs", DataTable).focus()

    # ----- following (worker thread) -----
    def follow(self, path: Path) -> None:
        """Follow another file (the previous worker is cancelled)."""
        self.path = path
        self.run = None
        self._table_key = ()
        self.query_one("#training-status", Static).update(f"Opening {path} ...")
        self._follow_worker(path)

    @work(thread=True, exclusive=True, group="training-follow", exit_on_error=False)
    def _follow_worker(self, path: Path) -> None:
        worker = get_current_worker()
        try:
            watch = LogWatch(path)
        except OSError as error:
            self.post_message(FollowFailed(path, error.strerror or str(error)))
            return
        last_post = -1.0
        try:
            while not worker.is_cancelled:
                changed = watch.poll()
                for _ in range(BACKFILL_CHUNKS_PER_POLL):
                    changed = watch.backfill_step() or changed
                now = time.monotonic()
                since = now - last_post
                if (changed and since >= POST_EVERY_SECONDS) or since >= 1.0:
                    backfill = None if watch.backfill_done else (watch.backfill_offset, watch.backfill_end)
                    self.post_message(
                        RunSnapshot(path, watch.run.snapshot(), watch.state, watch.idle_seconds(), backfill)
                    )
                    last_post = now
                if watch.backfill_done:
                    time.sleep(POLL_SECONDS)
        except OSError as error:
            self.post_message(FollowFailed(path, error.strerror or str(error)))
        finally:
            watch.close()

    # ----- drawing -----
    def on_run_snapshot(self, message: RunSnapshot) -> None:
        if message.path != self.path:
            return
        self.run = message.run
        run = message.run
        self._draw_status(message)
        self._draw_progress(run)
        self._draw_plots(run)
        self._draw_table(run)
        problems = run.problem_list(message.idle if message.state is FileState.OPEN else None)
        self._draw_problems(problems)
        self._draw_lines(run)
        self._post_alerts(problems)

    def on_follow_failed(self, message: FollowFailed) -> None:
        if message.path == self.path:
            self.query_one("#training-status", Static).update(
                Text(f"Cannot follow {message.path}: {message.reason}. Press o to open another file.", "red")
            )

    def _draw_status(self, message: RunSnapshot) -> None:
        run, cur = message.run, message.run.current
        text = Text()
        text.append(f"{message.path}", "bold")
        if message.state is FileState.WAITING:
            text.append(
                "  waiting for the file to appear: start training with "
                f"`python train.py > {message.path.name} 2>&1`, or press o to open another log",
                "yellow",
            )
        elif message.state is FileState.DELETED:
            text.append("  the file was deleted", "red")
        if message.backfill:
            done, total = message.backfill
            text.append(f"  reading history {100 * done // max(total, 1)}%", "dim")
        text.append("\n")
        if cur.epoch is None and cur.step is None:
            if message.state is not FileState.WAITING:
                text.append("No Keras progress in this file yet.", "dim")
            self.query_one("#training-status", Static).update(text)
            return
        for index, (part, tone) in enumerate(status_parts(run)):
            text.append("   " if index else "")
            text.append(part, TONE_STYLE[tone])
        if cur.metrics:
            text.append("\n")
            for index, (name, value) in enumerate(cur.metrics.items()):
                text.append("   " if index else "")
                text.append(f"{name} ", "dim")
                text.append(format_value(value), "bold red" if value != value else "bold")
        self.query_one("#training-status", Static).update(text)

    def _draw_progress(self, run: TrainingRun) -> None:
        bar = self.query_one("#training-steps", ProgressBar)
        cur = run.current
        bar.update(total=cur.total_steps, progress=cur.step or 0)

    def _draw_plots(self, run: TrainingRun) -> None:
        self.query_one(EpochLossPlot).show(run.latest_fit_epochs())
        self.query_one(StepLossPlot).show(run.curve, run.current.epoch)

    def _draw_table(self, run: TrainingRun) -> None:
        """Append new epochs; rebuild only when earlier rows or the columns changed."""
        epochs = run.epochs[-MAX_TABLE_ROWS:]
        if not epochs:
            if self._table_key:
                self.query_one("#training-epochs", DataTable).clear(columns=True)
                self._table_key = ()
            return
        names = metric_names(epochs)
        show_run = len({e.fit_run for e in epochs}) > 1
        layout = (id(epochs[0]), tuple(names), show_run)
        table = self.query_one("#training-epochs", DataTable)
        shown = self._table_key[1] if self._table_key and self._table_key[0] == layout else None
        if shown is not None and shown <= len(epochs) and id(epochs[shown - 1]) == self._table_key[2]:
            new = epochs[shown:]
        else:
            table.clear(columns=True)
            table.add_columns(*(["fit"] if show_run else []), "epoch", "time", *names)
            new = epochs
        if not new:
            return
        for record in new:
            table.add_row(*epoch_row(record, names, show_run))
        self._table_key = (layout, len(epochs), id(epochs[-1]))
        table.move_cursor(row=len(epochs) - 1)

    def _draw_problems(self, problems: list[Problem]) -> None:
        text = Text()
        if not problems:
            text.append("No problems found.", "green")
        for index, problem in enumerate(problems):
            if index:
                text.append("\n")
            where = f" line {problem.line_number}" if problem.line_number else ""
            times = f" x{problem.count}" if problem.count > 1 else ""
            text.append(f"{problem.id}", SEVERITY_STYLE[problem.severity])
            text.append(f"{where}{times}: ", "dim")
            text.append(problem.message)
            if problem.fix:
                text.append("\n  fix: ", "dim")
                text.append(problem.fix)
            if problem.line and problem.line != problem.message:
                text.append("\n  > ", "dim")
                text.append(problem.line[:200], "dim")
        self.query_one("#training-problems", Static).update(text)

    def _draw_lines(self, run: TrainingRun) -> None:
        widget = self.query_one("#training-lines", Static)
        height = max(widget.size.height, 5)
        lines = run.view_lines()[-height:]
        widget.update(Text("\n".join(lines), no_wrap=True, overflow="ellipsis"))

    def _post_alerts(self, problems: list[Problem]) -> None:
        subject = self.path.name
        alerts = [p.to_alert(subject) for p in problems if p.severity >= Severity.WARNING]
        key = tuple((a.kind, a.message) for a in alerts)
        if key != self._alert_key:
            self._alert_key = key
            self.post_message(AlertsChanged(self.TAB_ID, alerts))

    # ----- actions -----
    def action_open_file(self) -> None:
        """Show the path input, prefilled with the current file."""
        field = self.query_one("#training-path", Input)
        field.add_class("-open")
        field.value = str(self.path)
        field.border_subtitle = "Enter: follow this file   Escape: cancel"
        self.call_after_refresh(field.focus)  # focusable only once displayed

    def action_close_open(self) -> None:
        field = self.query_one("#training-path", Input)
        if field.has_class("-open"):
            field.remove_class("-open")
            self.focus_default()

    def action_reload(self) -> None:
        """Read the file again from the start."""
        self.follow(self.path)

    @on(Input.Submitted, "#training-path")
    def _path_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        path = Path(value).expanduser()
        if not value or path.is_dir():
            event.input.border_subtitle = f"{path} is a directory, not a log file" if value else "type a path"
            return  # the input stays open with the reason
        event.input.remove_class("-open")
        self.follow(path)
        self.focus_default()
