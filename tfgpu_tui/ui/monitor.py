"""The Monitor tab: live GPU cards and history, host line, alerts, the process table and the kill action.

The tab owns the app's one Sampler. A worker thread samples every `settings.interval` seconds and posts each
snapshot here as a message; the event loop only applies it to the widgets.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.widgets import Static
from textual.worker import get_current_worker

from tfgpu_tui.alerts import Alert
from tfgpu_tui.gpu.history import GpuHistory, relative_series
from tfgpu_tui.gpu.kill import KillOutcome, KillResult
from tfgpu_tui.gpu.model import DeviceSample, ProcessRow, Snapshot
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.sampler_start import SamplerStart
from tfgpu_tui.gpu.source import GpuSource
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.messages import AlertsChanged, GpuCountChanged, OpenLog, ShowTab
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel, alert_detail, alert_pid, with_short_titles
from tfgpu_tui.ui.widgets.gpu_compact import GpuCompactList, compact_line_count
from tfgpu_tui.ui.widgets.gpu_format import set_level_colors
from tfgpu_tui.ui.widgets.host_line import render_host_line
from tfgpu_tui.ui.widgets.process_table import (
    SORT_KEYS,
    ProcessTable,
    TableRow,
    build_process_rows,
    is_descending,
    sort_caption,
)

if TYPE_CHECKING:
    from tfgpu_tui.gpu.kernel_actions import KillChoice

# The history plots span minutes: redrawing them every second costs CPU and shows nothing new.
PLOT_REDRAW_SECONDS = 5.0
# While another tab is shown the sampler still feeds the header (GPU count, alerts), at most this often
# (measurements in docs/performance.md); showing it samples at once.
HIDDEN_SAMPLE_SECONDS = 10.0
NOTIFY_SECONDS = 10.0  # kill outcomes and refusals stay up longer than Textual's default 5 s
NO_GPU_ALERT = "no_gpu"  # the alert kind the sampler raises alongside Snapshot.error
# The Monitor's styles (and those of its widgets, the header and the kill dialog): the app loads it.
CSS_PATH = Path(__file__).with_name("monitor.tcss")
# Severity of the notification for each kill result; any other result is an error.
_OUTCOME_SEVERITY: dict[KillResult, SeverityLevel] = {
    KillResult.FREED: "information",
    KillResult.ALREADY_GONE: "information",
    KillResult.STILL_HELD: "warning",
}
_SEVERITY_CLASS: dict[SeverityLevel, str] = {"information": "-ok", "warning": "-warning", "error": "-error"}
CARD_LINES = 6  # a GPU card with its history plot
# The lines around the tab: the status header, the tab titles and their underline, the footer. Before the
# first layout the tab's height is the terminal's less these, so the first frame already has the right view.
CHROME_LINES = 4
TABLE_MIN_LINES = 6  # the process table's header and five rows
FULL_TABLE_LINES = 10  # the full cards are chosen only when they leave the table at least this much
MAX_ALERT_LINES = 5
DETAIL_MIN_LINES = 4  # the selected alert's text and fix, at the least


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
    return [
        GpuHistory(
            device.index,
            relative_series(sampler.series(device.index, "utilization"), now),
            relative_series(sampler.series(device.index, "memory_percent"), now),
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
        Binding("c", "toggle_compact", "Compact GPUs"),
        Binding("a", "focus_alerts", "Alerts"),
        Binding("l", "open_log", "Open its log"),
        Binding("e", "explain", "Explain alert"),
    ]

    def __init__(
        self, settings: Settings, source: GpuSource | None = None, start: SamplerStart | None = None
    ) -> None:
        super().__init__(settings)
        self._source = source
        self._start = start  # the Sampler and first snapshot taken before the UI loaded (the dashboard's)
        self._sampler: Sampler | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._on_screen = threading.Event()  # set: the tab is shown, so sample at the full rate
        self._replan = threading.Event()  # set with _wake: re-plan the wait (the sampling rate changed)
        self.sort_by = SORT_KEYS[0]
        self.sort_reverse = False
        self.snapshot: Snapshot | None = None
        self.ui_ms: float | None = None  # what applying the last snapshot to the widgets cost
        self.kill_running = False
        self.compact_choice: bool | None = None  # None: the compact GPU view is chosen by the height
        self._gpu_count: tuple[int | None, str] | None = None
        self._alerts: list[Alert] | None = None
        self.plot_seconds = PLOT_REDRAW_SECONDS  # how often the history plots are redrawn
        self.hidden_sample_seconds = HIDDEN_SAMPLE_SECONDS  # the slowest sampling while another tab is shown
        self._plots_wanted = threading.Event()  # set: collect histories with the next sample
        self._plots_shown = threading.Event()  # set: the full cards and their plots are on screen
        self._histories: list[GpuHistory] = []  # the latest collected, for catching up when the tab is shown
        self._histories_at = -math.inf  # the timestamp of the snapshot they came with
        self._behind = False  # a snapshot arrived while the tab was hidden and is not shown yet
        self._lines: dict[str, str | Text] = {}  # what the one-line Statics show, by selector
        self._fitted: tuple[object, ...] = ()  # what the last layout fit was computed from

    def compose(self) -> ComposeResult:
        yield Static("Starting the monitor…", id="host-line")
        yield Static(id="no-gpu")
        yield VerticalScroll(id="gpu-rows", can_focus=False)
        yield GpuCompactList(id="gpu-compact")
        yield AlertsPanel(id="monitor-alerts")
        yield Static(id="alert-detail", markup=False)
        yield Static(id="process-caption")
        yield ProcessTable(id="process-table")
        yield Static(id="process-detail", markup=False)
        yield Static(id="kill-status")

    def on_mount(self) -> None:
        self._use_theme_colors()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._use_theme_colors())
        # The snapshot taken before the UI loaded goes on the first frame, not on one painted after it.
        first = self._start.take_snapshot() if self._start is not None else None
        if first is not None:
            self._receive(first, None, shown=True)
        self._sample_loop()

    def _use_theme_colors(self) -> None:
        """Bars and load figures take the theme's success, warning and error colours."""
        variables = self.app.theme_variables
        set_level_colors(
            variables.get("success", "green"),
            variables.get("warning", "yellow"),
            variables.get("error", "red"),
        )

    def on_unmount(self) -> None:
        with self._lock:
            self._stop.set()
            self._wake.set()
            if self._sampler is not None:
                self._sampler.close()

    def focus_default(self) -> None:
        self.query_one(ProcessTable).focus()

    @property
    def compact(self) -> bool:
        """Whether the GPUs are shown one line each (else as cards with history plots)."""
        return self.has_class("-compact")

    @property
    def sampler(self) -> Sampler | None:
        """The app's one Sampler (None until the sampling thread has created it)."""
        return self._sampler

    # --- sampling (worker thread) -------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="monitor-sampler", exit_on_error=False)
    def _sample_loop(self) -> None:
        """Create the sampler (or take the one started before the UI loaded, with its first snapshot), then
        sample every `settings.interval` s until the tab goes away."""
        worker = get_current_worker()
        first: Snapshot | None = None
        try:
            if self._start is not None:
                sampler, first = self._start.result()
            else:
                sampler = Sampler(self.settings, self._source)
        except Exception as error:  # noqa: BLE001 - the contract says it never raises; show it if it does
            self.post_message(SamplerFailed(f"the GPU sampler could not start: {error!r}"))
            return
        with self._lock:
            if self._stop.is_set():
                sampler.close()
                return
            self._sampler = sampler
        if self._start is not None and first is None:  # on_mount showed the start's snapshot: the next is due
            self._wait_for_next(time.monotonic())  # one period from now
        plots_at = -math.inf  # when the histories were last collected
        while not worker.is_cancelled:
            started = time.monotonic()
            with self._lock:
                if self._stop.is_set():
                    return
                try:
                    snapshot, first = first or sampler.sample(), None  # the start's snapshot comes first
                except Exception as error:  # noqa: BLE001 - keep the loop (and the app) alive
                    self.post_message(SamplerFailed(f"sampling failed: {error!r}"))
                    snapshot = None
            if snapshot is not None:
                histories = None
                due = started - plots_at >= self.plot_seconds or self._plots_wanted.is_set()
                if due and self._plots_shown.is_set():
                    self._plots_wanted.clear()
                    plots_at = started
                    histories = collect_histories(sampler, snapshot.devices, snapshot.timestamp)
                self.post_message(SnapshotReady(snapshot, histories))
            self._wait_for_next(started)

    def _wait_for_next(self, started: float) -> None:
        """Sleep until the next sample is due. A wake (a kill's end, the tab going away) ends the wait at
        once; the tab shown again re-plans it at the full rate (a fresher snapshot is not retaken)."""
        while self._wake.wait(max(0.0, self._sample_period() - (time.monotonic() - started))):
            self._wake.clear()
            if not self._replan.is_set() or self._stop.is_set():
                return
            self._replan.clear()

    def _sample_period(self) -> float:
        """Seconds between samples: the refresh interval while the tab is shown, less often while hidden."""
        interval = self.settings.interval
        return interval if self._on_screen.is_set() else max(interval, self.hidden_sample_seconds)

    # --- applying a snapshot (event loop) -----------------------------------------------------------------

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self._receive(message.snapshot, message.histories, shown=self.is_on_screen)

    def _receive(self, snapshot: Snapshot, histories: list[GpuHistory] | None, shown: bool) -> None:
        """Keep the snapshot and tell the header; update the widgets if `shown` (the tab is on screen)."""
        self.snapshot = snapshot
        if histories is not None:
            self._histories, self._histories_at = histories, snapshot.timestamp
        self._post_header_updates(snapshot)
        if shown:
            self._apply(snapshot, histories)
        else:
            self._behind = True

    def on_show(self) -> None:
        """Sample at the full rate again; catch up with what was sampled while the tab was hidden."""
        if not self._on_screen.is_set():
            self._on_screen.set()
            self._replan.set()
            self._wake.set()
        if self._behind and self.snapshot is not None:
            self._apply(self.snapshot, self._histories)
            if self.snapshot.timestamp - self._histories_at >= self.plot_seconds:
                self._plots_wanted.set()  # they are due: fresh ones with the next sample

    def on_hide(self) -> None:
        self._on_screen.clear()

    def on_resize(self, _event: events.Resize) -> None:
        self._fit()

    def _apply(self, snapshot: Snapshot, histories: list[GpuHistory] | None) -> None:
        """Show a snapshot in the widgets; each widget repaints only what changed, without a re-layout where
        its size is fixed. `histories` None leaves the plots as they are."""
        started = time.perf_counter()
        self._behind = False
        self._update_line("#host-line", render_host_line(snapshot, self.ui_ms))
        no_gpu = self.query_one("#no-gpu", Static)
        if no_gpu.has_class("-shown") != (snapshot.error is not None):
            no_gpu.set_class(snapshot.error is not None, "-shown")
        if snapshot.error is not None:
            no_gpu.update(no_gpu_text(snapshot))
        # The "nothing to monitor" panel already explains a missing driver; the header still gets that alert.
        shown = (
            [alert for alert in snapshot.alerts if alert.kind != NO_GPU_ALERT]
            if snapshot.error
            else snapshot.alerts
        )
        panel = self.query_one(AlertsPanel)
        panel.show(shown, snapshot.processes)
        self._fit()
        self._show_gpus(snapshot.devices, histories or [])
        self._refresh_table()
        self.ui_ms = (time.perf_counter() - started) * 1000

    def _fit(self) -> None:
        """Choose the GPU view (compact below a height, or as toggled) and how many alert lines fit, so that
        the process table keeps at least five rows."""
        snapshot = self.snapshot
        gpus = len(snapshot.devices) if snapshot is not None else 0
        # the compact view has a line per MIG device too; cards have no room for them, so MIG means compact
        lines = compact_line_count(snapshot.devices) if snapshot is not None else 0
        mig = lines > gpus
        processes = len(snapshot.processes) if snapshot is not None else 0
        panel = self.query_one(AlertsPanel)
        alerts = len(panel.ordered)
        # before the first layout: the terminal's height less the app's chrome
        height = self.size.height or max(0, self.app.size.height - CHROME_LINES)
        extra = self.query_one("#no-gpu").outer_size.height + self.query_one("#kill-status").outer_size.height
        key = (
            height,
            lines,
            min(processes, FULL_TABLE_LINES),
            alerts,
            extra,
            self.compact_choice,
            panel.has_focus,
        )
        if key == self._fitted or height == 0:
            return
        self._fitted = key
        cards = min(CARD_LINES * gpus, height // 2)
        fixed = 3 + extra  # host line, caption, selected command
        compact = self.compact_choice
        if compact is None:  # cards while they leave the table room for its rows (up to FULL_TABLE_LINES)
            room = height - fixed - CARD_LINES * gpus - min(alerts, MAX_ALERT_LINES)
            wanted = min(FULL_TABLE_LINES, max(TABLE_MIN_LINES, processes + 1))
            compact = mig or CARD_LINES * gpus > height // 2 or room < wanted
        self.set_class(compact, "-compact")
        gpu_lines = lines if compact else cards
        if compact:
            self._plots_shown.clear()
        elif not self._plots_shown.is_set():
            self._plots_shown.set()
            self._plots_wanted.set()
        room = height - fixed - gpu_lines - TABLE_MIN_LINES
        alert_lines = max(1, min(alerts, MAX_ALERT_LINES, room))
        panel.styles.max_height = alert_lines
        detail = self.query_one("#alert-detail")
        reading = panel.has_focus and alerts > 0  # the selected alert's text and fix show under the list
        detail_room = room - alert_lines
        # Too short to show it beside the GPUs and five table rows: the GPUs make way while it is read.
        hide_gpus = reading and detail_room < DETAIL_MIN_LINES
        self.set_class(hide_gpus, "-reading")
        detail.styles.max_height = max(DETAIL_MIN_LINES, detail_room + (gpu_lines if hide_gpus else 0))
        detail.set_class(reading, "-shown")

    def on_sampler_failed(self, message: SamplerFailed) -> None:
        self._set_kill_status(Text(f"Monitor error: {message.error}"), "error")

    def _show_gpus(self, devices: list[DeviceSample], histories: list[GpuHistory]) -> None:
        """The compact lines, or one row (card + history plot) per GPU; rows are rebuilt only when the set of
        GPUs changes, and the view that is not shown is left alone."""
        if self.compact:
            self.query_one(GpuCompactList).show(devices)
            return
        # Cards and plots (plotext) load when first shown: the compact view and the first frame need neither.
        from tfgpu_tui.ui.widgets.gpu_card import GpuCard
        from tfgpu_tui.ui.widgets.history_plot import HistoryPlot

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
            if history.index in plots:
                plots[history.index].show(history)

    def _refresh_table(self) -> None:
        """Rebuild the rows from the latest snapshot in the current order and apply them in place."""
        snapshot = self.snapshot
        if snapshot is None:
            return
        rows = build_process_rows(snapshot, self.sort_by, self.sort_reverse)
        table = self.query_one(ProcessTable)
        table.set_sort_mark(self.sort_by, is_descending(self.sort_by, self.sort_reverse))
        table.show_rows(rows)
        what = "TensorFlow processes on the CPU" if snapshot.error is not None else "Processes"
        caption = f"{what} ({len(rows)}), sorted by {sort_caption(self.sort_by, self.sort_reverse)}"
        self._update_line("#process-caption", caption)
        self._show_selected(table.selected)

    def _show_selected(self, row: TableRow | None) -> None:
        """The selected process's whole command line (the table may cut it), under the table."""
        if row is None:
            self._update_line("#process-detail", "")
            return
        process = row.process
        text = Text(f"PID {process.pid}: ", style="bold")
        text.append_text(row.cells[-1] if isinstance(row.cells[-1], Text) else Text(str(row.cells[-1])))
        if process.jupyter is not None and process.command:
            text.append(f"  ({process.command})")
        self._update_line("#process-detail", text)

    def on_process_table_highlighted(self, message: ProcessTable.Highlighted) -> None:
        self._show_selected(message.row)

    def on_alerts_panel_selected(self, message: AlertsPanel.Selected) -> None:
        detail = alert_detail(message.alert) if message.alert is not None else Text()
        self.query_one("#alert-detail", Static).update(detail)

    def on_descendant_focus(self) -> None:
        self._fit()

    def on_descendant_blur(self) -> None:
        self._fit()

    def _update_line(self, selector: str, content: str | Text) -> None:
        """Update a one-line Static only when its content changed, without a re-layout (its size is fixed)."""
        if self._lines.get(selector) != content:
            self._lines[selector] = content
            self.query_one(selector, Static).update(content, layout=False)

    def _post_header_updates(self, snapshot: Snapshot) -> None:
        """Tell the app (header) about the GPU count and alerts (short titles filled in) when they change."""
        count = (None, snapshot.error.message) if snapshot.error is not None else (len(snapshot.devices), "")
        if count != self._gpu_count:
            self._gpu_count = count
            self.post_message(GpuCountChanged(count[0], snapshot.simulated, count[1]))
        if snapshot.alerts != self._alerts:
            self._alerts = list(snapshot.alerts)
            alerts = with_short_titles(list(snapshot.alerts), snapshot.processes)
            self.post_message(AlertsChanged(self.TAB_ID, alerts))

    # --- views and sorting ----------------------------------------------------------------------------------

    def action_toggle_compact(self) -> None:
        """Switch between the compact GPU lines and the cards with history plots."""
        self.compact_choice = not self.compact
        self._fit()
        if self.snapshot is not None:
            self._show_gpus(self.snapshot.devices, self._histories)

    def action_focus_alerts(self) -> None:
        """Move to the alerts list (its selected alert's text and fix show below it); escape comes back."""
        panel = self.query_one(AlertsPanel)
        if panel.ordered:
            panel.focus()
        else:
            self.notify("No alerts.", severity="information")

    def action_cycle_sort(self) -> None:
        """Sort the process table by the next column (GPU memory, SM %, PID, running time)."""
        self.sort_by = SORT_KEYS[(SORT_KEYS.index(self.sort_by) + 1) % len(SORT_KEYS)]
        self.sort_reverse = False
        self._refresh_table()

    def action_reverse_sort(self) -> None:
        """Reverse the order of the process table."""
        self.sort_reverse = not self.sort_reverse
        self._refresh_table()

    def on_process_table_sort_requested(self, event: ProcessTable.SortRequested) -> None:
        """Clicking a sortable header sorts by it; clicking it again reverses the order."""
        self.sort_reverse = not self.sort_reverse if event.key == self.sort_by else False
        self.sort_by = event.key
        self._refresh_table()

    def _focused_alert(self) -> Alert | None:
        """The alert selected in the alerts list, when the list has focus."""
        panel = self.query_one(AlertsPanel)
        return panel.selected if panel.has_focus else None

    def action_explain(self) -> None:
        """Jump to the Environment finding behind an alert: the one selected in the alerts list, else the
        selected process's, else the first."""
        focused = self._focused_alert()
        if focused is not None and focused.link:
            self.post_message(ShowTab.from_link(focused.link))
            return
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
        from tfgpu_tui.training.log_sources import OutputKind, process_output  # only when `l` is pressed

        output = process_output(selected.process.pid)
        if output.kind is OutputKind.FILE and output.path is not None:
            self.post_message(OpenLog(output.path, selected.process.pid))
        else:
            self.notify(output.message, title="No log file", severity="warning", timeout=NOTIFY_SECONDS)

    # --- kill -----------------------------------------------------------------------------------------------

    def action_kill(self) -> None:
        """Ask to kill the selected process (or the one the selected alert names), with a choice of signal."""
        table = self.query_one(ProcessTable)
        focused = self._focused_alert()
        pid = alert_pid(focused) if focused is not None else None
        if pid is not None:
            # an alert's "PID N" is a local process: never another namespace's entry of the same number
            shown = enumerate(table.rows_shown)
            index = next((i for i, row in shown if row.process.pid == pid and row.process.local), None)
            if index is None:
                self.notify(f"PID {pid} is no longer listed.", severity="warning")
                return
            table.move_cursor(index)
        selected = table.selected
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
            self._set_kill_status(Text(f"Not killed: {refusal}"), "warning")
            return

        from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill  # loaded when first needed

        def confirmed(choice: KillChoice | None) -> None:
            if choice is not None:
                self._run_kill(row, choice)

        self.app.push_screen(ConfirmKill(row, self.settings.kill_grace_seconds, self.settings), confirmed)

    def _run_kill(self, row: ProcessRow, choice: KillChoice = signal.SIGTERM) -> None:
        from tfgpu_tui.gpu.kernel_actions import choice_label  # the kill path loads when first used

        self.kill_running = True
        self._set_kill_status(Text(f"Ending PID {row.pid} ({choice_label(choice)})…"), None)
        self._kill_worker(row, choice)

    @work(thread=True, group="monitor-kill", exit_on_error=False)
    def _kill_worker(self, row: ProcessRow, choice: KillChoice) -> None:
        """Run the blocking kill (signals, grace period, memory check) off the event loop."""
        from tfgpu_tui.gpu.kernel_actions import end_process

        sampler = self._sampler
        if sampler is None:
            return

        def progress(text: str) -> None:
            self.post_message(KillProgress(text))

        try:
            outcome = end_process(sampler, row, choice, progress)  # a signal, or a kernel action
        except Exception as error:  # noqa: BLE001 - report it rather than lose it in a dead worker
            outcome = KillOutcome(row.pid, KillResult.ERROR, f"Killing PID {row.pid} failed: {error!r}")
        self.post_message(KillFinished(outcome))
        self._wake.set()

    def on_kill_progress(self, message: KillProgress) -> None:
        self._set_kill_status(Text(message.text), None)

    def on_kill_finished(self, message: KillFinished) -> None:
        self.kill_running = False
        outcome = message.outcome
        severity = _OUTCOME_SEVERITY.get(outcome.result, "error")
        self.notify(
            outcome.message, title=f"Kill PID {outcome.pid}", severity=severity, timeout=NOTIFY_SECONDS
        )
        self._set_kill_status(Text(outcome.message), severity)

    def _set_kill_status(self, text: Text, severity: SeverityLevel | None) -> None:
        """Show a kill's progress or outcome under the table, coloured by `severity` (None: in progress)."""
        status = self.query_one("#kill-status", Static)
        for level, name in _SEVERITY_CLASS.items():
            status.set_class(level == severity, name)
        status.set_class(bool(text), "-shown")
        status.update(text)
        self._fit()

    @property
    def kill_status(self) -> str:
        """The kill status line as plain text (the last kill's progress or outcome)."""
        return str(self.query_one("#kill-status", Static).render())
