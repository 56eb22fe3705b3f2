"""The Monitor tab: live GPU cards and history, host line, alerts, the process table and the kill action.

The tab owns the app's one Sampler. A worker thread samples every `settings.interval` seconds and posts each
snapshot here as a message; the event loop only applies it to the widgets.
"""

from __future__ import annotations

import math
import threading
import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from tfgpu_tui.alerts import Alert
from tfgpu_tui.gpu.kill import KillOutcome
from tfgpu_tui.gpu.model import DeviceSample, ProcessRow, Snapshot
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.source import GpuSource
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.log_sources import OutputKind, process_output
from tfgpu_tui.ui.messages import AlertsChanged, GpuCountChanged, OpenLog, ShowTab
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel
from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill
from tfgpu_tui.ui.widgets.gpu_card import GpuCard
from tfgpu_tui.ui.widgets.history_plot import GpuHistory, HistoryPlot, relative_series
from tfgpu_tui.ui.widgets.host_line import render_host_line
from tfgpu_tui.ui.widgets.process_table import SORT_KEYS, ProcessTable, build_process_rows, sort_caption

# The history plots span minutes: redrawing them every second costs CPU and shows nothing new.
PLOT_REDRAW_SECONDS = 5.0
NOTIFY_SECONDS = 10.0  # kill outcomes and refusals stay up longer than Textual's default 5 s
NO_GPU_ALERT = "no_gpu"  # the alert kind the sampler raises alongside Snapshot.error
# Severity of the notification for each kill result.
_OUTCOME_SEVERITY = {"freed": "information", "already_gone": "information", "still_held": "warning"}


class SnapshotReady(Message):
    """A fresh snapshot from the sampling thread, with the history series of each GPU when the plots are
    due a redraw (None otherwise)."""

    def __init__(self, snapshot: Snapshot, histories: list[GpuHistory] | None) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.histories = histories


class SamplerFailed(Message):
    """The sampler itself broke (a bug, not a missing driver): say so instead of freezing silently."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class KillProgress(Message):
    """A step of a kill in progress ("SIGTERM sent", "waiting 5 s", ...)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class KillFinished(Message):
    """The final outcome of a kill."""

    def __init__(self, outcome: KillOutcome) -> None:
        super().__init__()
        self.outcome = outcome


def collect_histories(sampler: Sampler, devices: list[DeviceSample], now: float) -> list[GpuHistory]:
    """Each GPU's utilisation and memory series relative to `now` (run in the sampling thread)."""
    history = sampler.history
    return [
        GpuHistory(
            device.index,
            relative_series(history.series(device.index, "utilization"), now),
            relative_series(history.series(device.index, "memory_percent"), now),
        )
        for device in devices
    ]


def no_gpu_text(snapshot: Snapshot) -> Text:
    """Why there is nothing to monitor, and the fix."""
    text = Text()
    if snapshot.error is None:
        return text
    text.append("Nothing to monitor: ", style="bold")
    text.append(snapshot.error.message)
    text.append("\nFix: ", style="bold")
    text.append(snapshot.error.fix)
    text.append(
        "\nHost CPU and memory, and TensorFlow processes on the CPU, are still shown below.", style="dim"
    )
    return text


class MonitorTab(DashboardTab):
    """Live GPUs, their processes and alerts; `k` kills the selected process after a confirmation."""

    TAB_ID = "monitor"
    TAB_TITLE = "Monitor"
    BINDINGS = [
        Binding("k", "kill", "Kill process"),
        Binding("s", "cycle_sort", "Sort by next"),
        Binding("r", "reverse_sort", "Reverse sort"),
        Binding("l", "open_log", "Open its log"),
        Binding("e", "explain", "Explain alert"),
    ]
    DEFAULT_CSS = """
    MonitorTab #host-line { height: 1; padding: 0 1; }
    MonitorTab #no-gpu { height: auto; border: round $error; padding: 0 1; display: none; }
    MonitorTab #no-gpu.-shown { display: block; }
    MonitorTab #gpu-rows { height: auto; max-height: 50%; }
    MonitorTab .gpu-row { height: 6; }
    MonitorTab #process-caption { height: 1; padding: 0 1; background: $boost; }
    MonitorTab #kill-status { height: 1; padding: 0 1; }
    """

    def __init__(self, settings: Settings, source: GpuSource | None = None) -> None:
        super().__init__(settings)
        self._source = source
        self._sampler: Sampler | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self.sort_by = SORT_KEYS[0]
        self.sort_reverse = False
        self.snapshot: Snapshot | None = None
        self.ui_ms: float | None = None  # what applying the last snapshot to the widgets cost
        self.kill_running = False
        self._gpu_count: tuple[int | None, str] | None = None
        self._alerts: list[Alert] | None = None
        self.plot_seconds = PLOT_REDRAW_SECONDS  # how often the history plots are redrawn
        self._plots_wanted = threading.Event()  # set: collect histories with the next sample
        self._histories: list[GpuHistory] = []  # the latest collected, for catching up when the tab is shown
        self._histories_at = -math.inf  # the timestamp of the snapshot they came with
        self._behind = False  # a snapshot arrived while the tab was hidden and is not shown yet
        self._lines: dict[str, str | Text] = {}  # what the one-line Statics show, by selector

    def compose(self) -> ComposeResult:
        yield Static("Starting the monitor…", id="host-line")
        yield Static(id="no-gpu")
        yield VerticalScroll(id="gpu-rows", can_focus=False)
        yield AlertsPanel(id="monitor-alerts")
        yield Static(id="process-caption")
        yield ProcessTable(id="process-table")
        yield Static(id="kill-status")

    def on_mount(self) -> None:
        self._sample_loop()

    def on_unmount(self) -> None:
        with self._lock:
            self._stop.set()
            self._wake.set()
            if self._sampler is not None:
                self._sampler.close()

    def focus_default(self) -> None:
        self.query_one(ProcessTable).focus()

    @property
    def sampler(self) -> Sampler | None:
        """The app's one Sampler (None until the sampling thread has created it)."""
        return self._sampler

    # --- sampling (worker thread) -------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="monitor-sampler", exit_on_error=False)
    def _sample_loop(self) -> None:
        """Create the sampler, then sample every `settings.interval` s until the tab goes away."""
        worker = get_current_worker()
        try:
            sampler = Sampler(self.settings, self._source)
        except Exception as error:  # noqa: BLE001 - the contract says it never raises; show it if it does
            self.post_message(SamplerFailed(f"the GPU sampler could not start: {error!r}"))
            return
        with self._lock:
            if self._stop.is_set():
                sampler.close()
                return
            self._sampler = sampler
        plots_at = -math.inf  # when the histories were last collected
        while not worker.is_cancelled:
            started = time.monotonic()
            with self._lock:
                if self._stop.is_set():
                    return
                try:
                    snapshot = sampler.sample()
                except Exception as error:  # noqa: BLE001 - keep the loop (and the app) alive
                    self.post_message(SamplerFailed(f"sampling failed: {error!r}"))
                    snapshot = None
            if snapshot is not None:
                histories = None
                if started - plots_at >= self.plot_seconds or self._plots_wanted.is_set():
                    self._plots_wanted.clear()
                    plots_at = started
                    try:
                        histories = collect_histories(sampler, snapshot.devices, snapshot.timestamp)
                    except RuntimeError:  # a kill's confirming sample grew the history meanwhile: retry
                        self._plots_wanted.set()
                self.post_message(SnapshotReady(snapshot, histories))
            self._wake.wait(max(0.0, self.settings.interval - (time.monotonic() - started)))
            self._wake.clear()

    # --- applying a snapshot (event loop) -----------------------------------------------------------------

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        """Keep the snapshot and tell the header; update the widgets only while the tab is on screen."""
        self.snapshot = message.snapshot
        if message.histories is not None:
            self._histories, self._histories_at = message.histories, message.snapshot.timestamp
        self._post_header_updates(message.snapshot)
        if self.is_on_screen:
            self._apply(message.snapshot, message.histories)
        else:
            self._behind = True

    def on_show(self) -> None:
        """Catch up with what was sampled while the tab was hidden (plots included)."""
        if self._behind and self.snapshot is not None:
            self._apply(self.snapshot, self._histories)
            if self.snapshot.timestamp - self._histories_at >= self.plot_seconds:
                self._plots_wanted.set()  # they are due: fresh ones with the next sample

    def _apply(self, snapshot: Snapshot, histories: list[GpuHistory] | None) -> None:
        """Show a snapshot in the widgets; each widget repaints only what changed, without a re-layout where
        its size is fixed. `histories` None leaves the plots as they are."""
        started = time.perf_counter()
        self._behind = False
        self._update_line("#host-line", render_host_line(snapshot, self.ui_ms))
        no_gpu = self.query_one("#no-gpu", Static)
        no_gpu.set_class(snapshot.error is not None, "-shown")
        if snapshot.error is not None:
            no_gpu.update(no_gpu_text(snapshot))
        self._show_gpus(snapshot.devices, histories or [])
        # The "nothing to monitor" panel already explains a missing driver; the header still gets that alert.
        shown = (
            [alert for alert in snapshot.alerts if alert.kind != NO_GPU_ALERT]
            if snapshot.error
            else snapshot.alerts
        )
        self.query_one(AlertsPanel).show(shown)
        self._refresh_table()
        self.ui_ms = (time.perf_counter() - started) * 1000

    def on_sampler_failed(self, message: SamplerFailed) -> None:
        self.query_one("#kill-status", Static).update(
            Text(f"Monitor error: {message.error}", style="bold red")
        )

    def _show_gpus(self, devices: list[DeviceSample], histories: list[GpuHistory]) -> None:
        """One row (card + history plot) per GPU; rows are rebuilt only when the set of GPUs changes."""
        container = self.query_one("#gpu-rows", VerticalScroll)
        cards = {card.index: card for card in container.query(GpuCard)}
        if sorted(cards) != [device.index for device in devices]:
            container.remove_children()
            cards = {device.index: GpuCard(device.index) for device in devices}
            plots = {device.index: HistoryPlot(device.index) for device in devices}
            container.mount_all(
                Horizontal(cards[device.index], plots[device.index], classes="gpu-row") for device in devices
            )
            if not histories:
                self._plots_wanted.set()  # new plots: fill them with the next sample
        else:
            plots = {plot.index: plot for plot in container.query(HistoryPlot)}
        if container.display != bool(devices):
            container.display = bool(devices)
        for device in devices:
            cards[device.index].show(device)
        for history in histories:
            plots[history.index].show(history)

    def _refresh_table(self) -> None:
        """Rebuild the rows from the latest snapshot in the current order and apply them in place."""
        snapshot = self.snapshot
        if snapshot is None:
            return
        rows = build_process_rows(snapshot, self.sort_by, self.sort_reverse)
        self.query_one(ProcessTable).show_rows(rows)
        what = "TensorFlow processes on the CPU" if snapshot.error is not None else "Processes"
        caption = f"{what} ({len(rows)}), sorted by {sort_caption(self.sort_by, self.sort_reverse)}"
        self._update_line("#process-caption", caption)

    def _update_line(self, selector: str, content: str | Text) -> None:
        """Update a one-line Static only when its content changed, without a re-layout (its size is fixed)."""
        if self._lines.get(selector) != content:
            self._lines[selector] = content
            self.query_one(selector, Static).update(content, layout=False)

    def _post_header_updates(self, snapshot: Snapshot) -> None:
        """Tell the app (header) about the GPU count and alerts, only when they changed."""
        count = (None, snapshot.error.message) if snapshot.error is not None else (len(snapshot.devices), "")
        if count != self._gpu_count:
            self._gpu_count = count
            self.post_message(GpuCountChanged(count[0], snapshot.simulated, count[1]))
        if snapshot.alerts != self._alerts:
            self._alerts = list(snapshot.alerts)
            self.post_message(AlertsChanged(self.TAB_ID, list(snapshot.alerts)))

    # --- sorting --------------------------------------------------------------------------------------------

    def action_cycle_sort(self) -> None:
        """Sort the process table by the next column (GPU memory, SM %, PID, running time)."""
        self.sort_by = SORT_KEYS[(SORT_KEYS.index(self.sort_by) + 1) % len(SORT_KEYS)]
        self.sort_reverse = False
        self._refresh_table()

    def action_reverse_sort(self) -> None:
        """Reverse the order of the process table."""
        self.sort_reverse = not self.sort_reverse
        self._refresh_table()

    @on(DataTable.HeaderSelected)
    def _sort_by_header(self, event: DataTable.HeaderSelected) -> None:
        """Clicking a sortable header sorts by it; clicking it again reverses the order."""
        key = event.column_key.value
        if key not in SORT_KEYS:
            return
        self.sort_reverse = not self.sort_reverse if key == self.sort_by else False
        self.sort_by = key
        self._refresh_table()

    def action_explain(self) -> None:
        """Jump to the Environment finding behind an alert: the selected process's, else the first."""
        alerts = [alert for alert in (self.snapshot.alerts if self.snapshot else []) if alert.link]
        if not alerts:
            self.notify("No alert here links to an Environment finding.", severity="information")
            return
        selected = self.query_one(ProcessTable).selected
        subject = f"PID {selected.process.pid}" if selected is not None else ""
        alert = next((alert for alert in alerts if alert.subject == subject), alerts[0])
        self.post_message(ShowTab.from_link(alert.link))

    # --- log -----------------------------------------------------------------------------------------------

    def action_open_log(self) -> None:
        """Follow the file the selected process writes its output to, in the Training tab."""
        selected = self.query_one(ProcessTable).selected
        if selected is None:
            self.notify("Select a process in the table first.", severity="warning")
            return
        if self.settings.demo:
            self.notify("The demo's processes are simulated: they have no log.", severity="warning")
            return
        output = process_output(selected.process.pid)
        if output.kind is OutputKind.FILE and output.path is not None:
            self.post_message(OpenLog(output.path, selected.process.pid))
        else:
            self.notify(output.message, title="No log file", severity="warning", timeout=NOTIFY_SECONDS)

    # --- kill -----------------------------------------------------------------------------------------------

    def action_kill(self) -> None:
        """Ask to kill the selected process (SIGTERM, then SIGKILL after the grace period)."""
        selected = self.query_one(ProcessTable).selected
        if selected is None:
            self.notify("Select a process in the table first.", severity="warning")
            return
        if self.kill_running:
            self.notify("A kill is already in progress; wait for its outcome.", severity="warning")
            return
        if self._sampler is None:
            self.notify("The monitor is still starting.", severity="warning")
            return
        row = selected.process
        refusal = self._sampler.kill_refusal(row)
        if refusal is not None:
            self.notify(
                refusal, title=f"Cannot kill PID {row.pid}", severity="warning", timeout=NOTIFY_SECONDS
            )
            self._set_kill_status(Text(f"Not killed: {refusal}", style="yellow"))
            return

        def confirmed(kill: bool | None) -> None:
            if kill:
                self._run_kill(row)

        self.app.push_screen(ConfirmKill(row, self.settings.kill_grace_seconds), confirmed)

    def _run_kill(self, row: ProcessRow) -> None:
        self.kill_running = True
        self._set_kill_status(Text(f"Killing PID {row.pid}…", style="bold"))
        self._kill_worker(row)

    @work(thread=True, group="monitor-kill", exit_on_error=False)
    def _kill_worker(self, row: ProcessRow) -> None:
        """Run the blocking kill (signals, grace period, memory check) off the event loop."""
        sampler = self._sampler
        if sampler is None:
            return
        try:
            outcome = sampler.kill(row, lambda text: self.post_message(KillProgress(text)))
        except Exception as error:  # noqa: BLE001 - report it rather than lose it in a dead worker
            outcome = KillOutcome(row.pid, "error", f"Killing PID {row.pid} failed: {error!r}")
        self.post_message(KillFinished(outcome))
        self._wake.set()

    def on_kill_progress(self, message: KillProgress) -> None:
        self._set_kill_status(Text(message.text))

    def on_kill_finished(self, message: KillFinished) -> None:
        self.kill_running = False
        outcome = message.outcome
        severity = _OUTCOME_SEVERITY.get(outcome.result, "error")
        self.notify(
            outcome.message, title=f"Kill PID {outcome.pid}", severity=severity, timeout=NOTIFY_SECONDS
        )
        style = {"information": "green", "warning": "yellow"}.get(severity, "bold red")
        self._set_kill_status(Text(outcome.message, style=style))

    def _set_kill_status(self, text: Text) -> None:
        self.query_one("#kill-status", Static).update(text, layout=False)

    @property
    def kill_status(self) -> str:
        """The kill status line as plain text (the last kill's progress or outcome)."""
        return str(self.query_one("#kill-status", Static).render())
