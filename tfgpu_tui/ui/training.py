"""The Training tab: follows the training log (like tail -F) and shows progress, plots, epochs and problems.

The tab's LogFeed (training/feed.py) follows the log in its thread (tail-first parsing of big files,
background history scan, the writer process, checkpoints, the one problem list) and each state arrives as a
`LogUpdated` message (ui/log_link.py); the widgets only draw them. With no log given and no ``./train.log``,
a pick list offers the logs of the running TensorFlow processes (found in a worker); with ``--demo`` and no
log given, a simulated live log is followed.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Input, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from tfgpu_tui.alerts import Severity
from tfgpu_tui.gpu.efficiency import Thresholds
from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.gpu.report_card import RunWatch
from tfgpu_tui.gpu.report_card_store import save_card
from tfgpu_tui.proc.log_writers import LogCandidate, tensorflow_logs
from tfgpu_tui.serve.policy import log_refusal, policy_from_settings, visible_logs
from tfgpu_tui.text_clean import clean_line
from tfgpu_tui.training.checkpoints import CheckpointPolicy
from tfgpu_tui.training.demo_log import DemoTrainingLog
from tfgpu_tui.training.encoding import binary_refusal
from tfgpu_tui.training.feed import FollowFailed, LogFeed, LogSpec, LogSubscription
from tfgpu_tui.training.log_state import LogState
from tfgpu_tui.training.oversight import OversightState
from tfgpu_tui.training.problems import Problem
from tfgpu_tui.training.run import TrainingSnapshot
from tfgpu_tui.ui.log_link import LogUpdated, follow_log
from tfgpu_tui.ui.messages import AlertsChanged
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.epoch_table import EpochTable
from tfgpu_tui.ui.widgets.styled_text import ACCENT, ERROR, WARNING
from tfgpu_tui.ui.widgets.training_panes import LogLines, ProblemsView, RunContext, RunStatus
from tfgpu_tui.ui.widgets.training_plots import EpochLossPlot, StepLossPlot

PICK_RESCAN_SECONDS = 10.0  # while the pick list is open and empty


PLOT_REDRAW_SECONDS = 2.0  # the plots are redrawn at most this often while the log grows


def plots_key(run: TrainingSnapshot) -> tuple:
    """What the two plots are drawn from: a redraw is due when it changes."""
    epochs = run.latest_fit_epochs()
    return (
        len(epochs),
        id(epochs[-1]) if epochs else None,
        len(run.curve),
        run.curve[-1:],
        run.current.epoch,
    )


@dataclass
class LogsFound(Message):
    """The logs of the running TensorFlow processes, from the scan worker."""

    candidates: list[LogCandidate]


NO_JOBS_HELP = (
    "No running TensorFlow process writes its output to a file. Start training with its output in a log, "
    "e.g. `nohup python train.py > train.log 2>&1 &`; this list looks again every 10 s (p: now), "
    "or press o to type a path."
)


class TrainingTab(DashboardTab):
    """Follows `settings.log_path`; `o` opens another file, `p` picks a running TensorFlow job's log."""

    DEFAULT_CSS = """
    /* Plots hidden under 30 lines (-short) unless g shows them (-plots-on); stacked below 100 columns */
    TrainingTab #training-head { height: auto; }
    TrainingTab #training-status { height: auto; padding: 0 1; }
    TrainingTab #training-steps { height: 1; padding: 0 1; }
    TrainingTab #training-steps Bar { width: 1fr; }
    TrainingTab #training-path { display: none; }
    TrainingTab #training-path.-open { display: block; }
    TrainingTab #training-pick { display: none; height: auto; border: round $accent; padding: 0 1; }
    TrainingTab #training-pick.-open { display: block; }
    TrainingTab #training-pick-list { height: auto; max-height: 8; border: none; }
    TrainingTab #training-context { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    TrainingTab #training-plots { height: 2fr; min-height: 8; }
    TrainingTab.-short #training-plots { display: none; }
    TrainingTab.-plots-on #training-plots { display: block; min-height: 6; }
    TrainingTab.-plots-off #training-plots { display: none; }
    TrainingTab #training-bottom { height: 3fr; min-height: 8; }
    TrainingTab #training-epochs { width: 1fr; }
    TrainingTab #training-side { width: 1fr; }
    TrainingTab #training-problems-box { height: auto; max-height: 50%; border-top: solid $primary; }
    TrainingTab #training-problems { height: auto; padding: 0 1; }
    TrainingTab #training-lines {
        height: 1fr; padding: 0 1; border-top: solid $primary; text-wrap: nowrap; text-overflow: ellipsis;
    }
    TrainingTab.-narrow #training-bottom { layout: vertical; }
    TrainingTab.-narrow #training-epochs { width: 1fr; height: auto; min-height: 3; max-height: 50%; }
    TrainingTab.-narrow #training-side { width: 1fr; height: 1fr; }
    TrainingTab.-narrow #training-problems-box { max-height: 100%; }
    TrainingTab.-narrow #training-lines { min-height: 3; }
    TrainingTab.-short #training-lines { display: none; }
    TrainingTab.-narrow.-short #training-epochs { height: 1fr; max-height: 100%; }
    TrainingTab.-narrow.-short #training-side { height: auto; max-height: 60%; }
    TrainingTab.-short.-plots-on #training-plots { height: 2fr; }
    TrainingTab.-short.-plots-on #training-bottom { height: 1fr; min-height: 6; }
    """

    #: Lists the logs of the running TensorFlow processes (replaceable in tests).
    log_finder = staticmethod(tensorflow_logs)

    TAB_ID = "training"
    TAB_TITLE = "Training"
    BINDINGS = [
        Binding("o", "open_file", "Open log"),
        Binding("p", "pick_log", "Pick a job's log"),
        Binding("r", "reload", "Reload"),
        Binding("g", "toggle_plots", "Plots on/off"),
        Binding("escape", "close_open", "Close"),
    ]

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.path = Path(settings.log_path)
        self.writer_pid: int | None = None
        self.run: TrainingSnapshot | None = None
        self.oversight: OversightState | None = None
        self._latest: LogState | None = None
        self.log_feed: LogFeed | None = None  # follows the log in its thread, from mount to unmount
        self._subscription: LogSubscription | None = None
        self._plots_key: tuple = ()
        self._plots_drawn_at = 0.0
        self.candidates: list[LogCandidate] = []
        self.demo: DemoTrainingLog | None = None
        self._alert_key: tuple = ()
        self.runs = RunWatch(Thresholds.from_settings(settings))  # what the writers did on the GPUs
        self.card: str | None = None  # the ended run's efficiency, once it has ended

    def compose(self) -> ComposeResult:
        with Vertical(id="training-head"):
            yield Input(placeholder="path of the training log, Enter to follow it", id="training-path")
            with Vertical(id="training-pick"):
                yield Static(id="training-pick-note")
                yield OptionList(id="training-pick-list")
            yield RunStatus(id="training-status")
            yield RunContext(id="training-context")
            yield ProgressBar(total=1, show_eta=False, id="training-steps")
        with Horizontal(id="training-plots"):
            yield EpochLossPlot(id="training-epoch-plot")
            yield StepLossPlot(id="training-step-plot")
        with Horizontal(id="training-bottom"):
            yield EpochTable(id="training-epochs")
            with Vertical(id="training-side"):
                with VerticalScroll(id="training-problems-box"):
                    yield ProblemsView(id="training-problems")
                yield LogLines(id="training-lines")

    def on_mount(self) -> None:
        settings = self.settings
        self.log_feed = LogFeed().start()
        if settings.demo and not settings.log_path_given:
            self.demo = DemoTrainingLog().start()
            self.follow(self.demo.path)
            return
        self.follow(self.path)
        if not settings.log_path_given and not self.path.exists():
            self.action_pick_log()

    def on_unmount(self) -> None:
        if self.log_feed is not None:
            self.log_feed.close()
        self.release_files()

    def release_files(self) -> None:
        """Stop the demo's log writer and remove its folder."""
        if self.demo is not None:
            self.demo.stop()

    def focus_default(self) -> None:
        if self.query_one("#training-pick").has_class("-open") and self.candidates:
            self.query_one("#training-pick-list", OptionList).focus()
        else:
            self.query_one("#training-epochs", DataTable).focus()

    def open_log(self, path: Path, pid: int | None = None) -> None:
        """Follow `path`, written by process `pid` when the caller knows it (the Monitor's `l` key)."""
        self.query_one("#training-pick").remove_class("-open")
        self.follow(Path(path), pid)

    # ----- following (the LogFeed's thread) -----
    def follow(self, path: Path, writer_pid: int | None = None) -> None:
        """Follow another file (the previous worker is cancelled); a path the access policy refuses
        (special file, outside --log-root) or a binary file is not opened and the reason is shown."""
        refusal = None if self.is_simulated(path) else log_refusal(policy_from_settings(self.settings), path)
        if refusal is None and not self.is_simulated(path) and path.is_file():
            refusal = binary_refusal(path)  # reads 4 KB of a regular file: quick enough for the UI thread
        if refusal is not None:
            self.query_one(RunStatus).say(f"Not opened: {refusal}", WARNING)
            self.notify(refusal, title="Log not opened", severity="warning")
            return
        self.path = path
        self.writer_pid = writer_pid
        self.run = None
        self.oversight = None
        self.card = None
        self.query_one(RunStatus).say(f"Opening {path} ...")
        self.query_one(RunContext).update("")
        if self._subscription is not None:
            self._subscription.cancel()
        if self.log_feed is not None:
            self._subscription = follow_log(self, self.log_feed, self._spec(path, writer_pid))

    def _spec(self, path: Path, writer_pid: int | None) -> LogSpec:
        settings = self.settings
        simulated = self.is_simulated(path)
        checkpoints = settings.checkpoints_dir
        if simulated and checkpoints is None and self.demo is not None:
            checkpoints = self.demo.checkpoints
        policy = CheckpointPolicy(settings.checkpoint_max_epochs, settings.checkpoint_max_minutes)
        return LogSpec(path, checkpoints, policy, writer_pid, find_writer=not simulated)

    def is_simulated(self, path: Path | None = None) -> bool:
        """Whether `path` (default: the followed file) is the demo's simulated log."""
        return self.demo is not None and (path or self.path) == self.demo.path

    # ----- drawing -----
    def on_log_updated(self, message: LogUpdated) -> None:
        update = message.update
        if update.path != self.path:
            return
        if isinstance(update, FollowFailed):
            reason = f"Cannot follow {update.path}: {update.reason}. Press o to open another file."
            self.query_one(RunStatus).say(reason, ERROR)
            return
        self.run = update.run
        self.oversight = update.around
        self._latest = update
        self._post_alerts(list(update.problems))  # the header shows them whichever tab is open
        if self.is_on_screen:  # a hidden tab is drawn when shown (on_show)
            self._draw(update)

    def on_show(self) -> None:
        state = self._latest
        if state is not None and state.path == self.path:
            self._draw(state, force=True)

    def _draw(self, state: LogState, force: bool = False) -> None:
        run = state.run
        self._draw_status(state)
        self._draw_context(state.around)
        self._draw_progress(run)
        self._draw_plots(run, force)
        self._draw_table(run)
        self._draw_problems(list(state.problems))
        self._draw_lines(run)

    def _draw_status(self, state: LogState) -> None:
        simulated = self.is_simulated(state.path)
        narrow = self.has_class("-narrow")  # one paragraph, shorter words: 3 lines at 80 columns
        self.query_one(RunStatus).show(
            state.path, state.file_state, state.backfill, state.run, simulated, narrow
        )

    def _draw_context(self, oversight: OversightState) -> None:
        self.query_one(RunContext).show(oversight, self.is_simulated(), self.card)

    def observe_gpus(self, snapshot: Snapshot) -> None:
        """A GPU snapshot from the app's feed: what the log's writer did on its GPU goes into the run's report
        card, shown once the run has ended as planned (gpu/report_card.py)."""
        oversight, run = self.oversight, self.run
        writer = oversight.writer if oversight is not None else None
        if writer is None or snapshot.error is not None or self.is_simulated():
            return
        self.runs.observe(snapshot, {writer.pid})
        reason = run.finish_reason() if run is not None else None
        card = self.runs.card(writer.pid) if reason is not None and reason.normal else None
        if card != self.card and oversight is not None:
            self.card = card
            self._draw_context(oversight)
            if card is not None and self.path is not None:
                self._keep_card(self.path, card)

    def _keep_card(self, log: Path, card: str) -> None:
        """The ended run's report card, kept off the event loop where `tfgpu-tui log` reads it
        (gpu/report_card_store.py); nothing where this session writes nothing."""
        if not policy_from_settings(self.settings).allow_writes:
            return

        def keep() -> None:
            with contextlib.suppress(OSError):  # the card stays on screen; only `log` would lack it
                save_card(log, card)

        self.run_worker(keep, thread=True, group="report-card")

    def _draw_progress(self, run: TrainingSnapshot) -> None:
        bar = self.query_one("#training-steps", ProgressBar)
        cur = run.current
        # An unknown total would make the bar animate (15 redraws a second): hide it instead.
        bar.display = bool(cur.total_steps)
        if cur.total_steps:
            bar.update(total=cur.total_steps, progress=cur.step or 0)

    def _draw_plots(self, run: TrainingSnapshot, force: bool = False) -> None:
        """Redraw the two plots when their data changed, at most every PLOT_REDRAW_SECONDS (plotext redraws
        are the tab's main cost); `force` redraws now (the tab was just shown)."""
        key = plots_key(run)
        now = time.monotonic()
        if key == self._plots_key or (not force and now - self._plots_drawn_at < PLOT_REDRAW_SECONDS):
            return
        self._plots_key, self._plots_drawn_at = key, now
        self.query_one(EpochLossPlot).show(run.latest_fit_epochs())
        self.query_one(StepLossPlot).show(run.curve, run.current.epoch)

    @property
    def plots_show_latest(self) -> bool:
        """Whether the plots show the latest state of the log (they lag it by up to PLOT_REDRAW_SECONDS while
        it grows; the feed's quiet updates bring them level once it stops)."""
        return self.run is not None and self._plots_key == plots_key(self.run)

    def _draw_table(self, run: TrainingSnapshot) -> None:
        self.query_one(EpochTable).show(run.epochs)

    def _draw_problems(self, problems: list[Problem]) -> None:
        self.query_one(ProblemsView).show(problems)

    def _draw_lines(self, run: TrainingSnapshot) -> None:
        self.query_one(LogLines).show(run)

    def _post_alerts(self, problems: list[Problem]) -> None:
        subject = self.path.name
        alerts = [p.to_alert(subject) for p in problems if p.severity >= Severity.WARNING]
        key = tuple((a.kind, a.message) for a in alerts)
        if key != self._alert_key:
            self._alert_key = key
            self.post_message(AlertsChanged(self.TAB_ID, alerts))

    # ----- actions -----
    def action_open_file(self) -> None:
        """Type the path of another log to follow (the field starts with the current one)."""
        field = self.query_one("#training-path", Input)
        field.add_class("-open")
        field.value = str(self.path)
        field.border_subtitle = "Enter: follow this file   Escape: cancel"
        self.call_after_refresh(field.focus)  # focusable only once displayed

    def offers(self, action: str) -> bool:
        """`esc` is offered while the path field or the list of logs is open (it closes them)."""
        return action != "close_open" or self._open()

    def _open(self) -> bool:
        field = self.query_one("#training-path", Input)
        return field.has_class("-open") or self.query_one("#training-pick").has_class("-open")

    def action_close_open(self) -> None:
        """Close the path field or the list of logs, back to the log being followed."""
        field = self.query_one("#training-path", Input)
        pick = self.query_one("#training-pick")
        if field.has_class("-open") or pick.has_class("-open"):
            field.remove_class("-open")
            pick.remove_class("-open")
            self.focus_default()

    def action_pick_log(self) -> None:
        """Choose among the logs your running TensorFlow jobs write to, and follow the one picked."""
        self.query_one("#training-pick").add_class("-open")
        self.query_one("#training-pick-note", Static).update(
            Content.styled("Looking for running TensorFlow processes that write to a log file ...", "dim")
        )
        self._scan_worker()

    @work(thread=True, exclusive=True, group="training-pick", exit_on_error=False)
    def _scan_worker(self) -> None:
        self.post_message(LogsFound(self.log_finder()))

    def on_logs_found(self, message: LogsFound) -> None:
        self.candidates = visible_logs(policy_from_settings(self.settings), message.candidates)
        note = self.query_one("#training-pick-note", Static)
        options = self.query_one("#training-pick-list", OptionList)
        options.clear_options()
        if not self.candidates:
            note.update(Content.styled(NO_JOBS_HELP, WARNING))
            options.display = False
            self.set_timer(PICK_RESCAN_SECONDS, self._rescan_if_waiting)
            return
        count = len(self.candidates)
        note.update(
            f"{count} running TensorFlow job{'s' if count > 1 else ''} with a log: Enter follows it, "
            "Escape closes this list"
        )
        options.display = True
        options.add_options(
            Option(
                Content.assemble(
                    (f"PID {c.pid:<8}", "bold"), f"{c.command[:70]:<72}", (clean_line(str(c.path)), ACCENT)
                )
            )
            for c in self.candidates
        )
        options.highlighted = 0
        if self.query_one("#training-epochs", DataTable).has_focus or self.screen.focused is None:
            options.focus()

    def _rescan_if_waiting(self) -> None:
        """While the empty pick list is open, look again now and then (a job may have started)."""
        if self.query_one("#training-pick").has_class("-open") and not self.candidates:
            self._scan_worker()

    @on(OptionList.OptionSelected, "#training-pick-list")
    def _log_picked(self, event: OptionList.OptionSelected) -> None:
        candidate = self.candidates[event.option_index]
        self.open_log(candidate.path, candidate.pid)
        self.focus_default()

    def action_toggle_plots(self) -> None:
        """Show or hide the two plots (hidden by default when the terminal is under 30 lines)."""
        shown = self.query_one("#training-plots").display
        self.set_class(not shown, "-plots-on")
        self.set_class(shown, "-plots-off")
        if not shown and self.run is not None:
            self.call_after_refresh(self._draw_plots, self.run, True)

    def action_reload(self) -> None:
        """Read the file again from the start."""
        self.follow(self.path)
        if self._subscription is not None and self.log_feed is not None:
            self.log_feed.reload(self._subscription.spec)

    @on(Input.Submitted, "#training-path")
    def _path_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        path = Path(value).expanduser()
        refusal = log_refusal(policy_from_settings(self.settings), path) if value else "type a path"
        if refusal is not None:
            event.input.border_subtitle = refusal
            self.notify(refusal, title="Log not opened", severity="warning")
            return  # the input stays open with the reason
        event.input.remove_class("-open")
        self.follow(path)
        self.focus_default()
