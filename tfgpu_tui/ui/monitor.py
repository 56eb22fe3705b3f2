"""The Monitor tab: live GPU cards and history, host line, alerts, the process table and the kill action.

A view: the app's feed (gpu/feed.py) posts each snapshot here as a message, and the kill path
(gpu/kill_requests.py) reports a kill's steps and outcome the same way. The tab holds no thread and no lock;
it tells the feed how often it wants snapshots (the refresh interval while shown, nothing while hidden) and
whether it wants the history series for its plots.
"""

from __future__ import annotations

import math
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.widgets import Static

from tfgpu_tui.alerts import Alert, AlertKind
from tfgpu_tui.gpu.feed import FeedUpdate, SnapshotFeed, Subscription
from tfgpu_tui.gpu.history import GpuHistory
from tfgpu_tui.gpu.kill import KillOutcome, KillResult
from tfgpu_tui.gpu.kill_requests import STARTING, KillRequests
from tfgpu_tui.gpu.model import DeviceSample, ProcessRow, Snapshot
from tfgpu_tui.serve.policy import signal_refusal
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.feed_link import FeedUpdated, subscribe
from tfgpu_tui.ui.messages import OpenLog, ShowTab
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel, alert_detail, alert_pid, short_title
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
NOTIFY_SECONDS = 10.0  # kill outcomes and refusals stay up longer than Textual's default 5 s
# Severity of the notification for each kill result; any other result is an error.
_OUTCOME_SEVERITY: dict[KillResult, SeverityLevel] = {
    KillResult.FREED: "information",
    KillResult.ALREADY_GONE: "information",
    KillResult.STILL_HELD: "warning",
}
_SEVERITY_CLASS: dict[SeverityLevel, str] = {"information": "-ok", "warning": "-warning", "error": "-error"}
CARD_LINES = 6  # a GPU card with its history plot (app.tcss: .gpu-row)
# The lines around the tab: the status header, the tab titles and their underline, the footer. Before the
# first layout the tab's height is the terminal's less these, so the first frame already has the right view.
CHROME_LINES = 4
FIXED_LINES = 3  # the host line, the table's caption and the selected command
MAX_ALERT_LINES = 5  # app.tcss: AlertsPanel's max-height
TABLE_MIN_LINES = 6  # the process table's header and five rows
FULL_TABLE_LINES = 10  # the cards are chosen only when they leave the table at least this much
MAX_ROW_LINES = 12  # a GPU's row grows up to this when the table does not need the lines


def cards_fit(height: int, devices: list[DeviceSample], processes: int, alerts: int) -> bool:
    """Whether the GPUs get cards with history plots in a tab `height` lines high: at most half of it, and
    room left for the table's rows (up to FULL_TABLE_LINES). A GPU in MIG mode has a line per MIG device,
    which only the compact view shows."""
    if compact_line_count(devices) > len(devices):
        return False
    cards = CARD_LINES * len(devices)
    room = height - FIXED_LINES - cards - min(alerts, MAX_ALERT_LINES)
    wanted = min(FULL_TABLE_LINES, max(TABLE_MIN_LINES, processes + 1))
    return cards <= height // 2 and room >= wanted


def shown_alerts(snapshot: Snapshot) -> list[Alert]:
    """The alerts the tab lists: the "nothing to monitor" panel already explains a missing driver (the
    header still gets that alert)."""
    if snapshot.error is None:
        return snapshot.alerts
    return [alert for alert in snapshot.alerts if alert.kind != AlertKind.NO_GPU]


def table_rows(snapshot: Snapshot) -> int:
    """The process table's rows that the GPU view leaves room for. While the processes are still being read
    (the first frame), a full table's: the view then chosen is a busy host's, and changes at most once."""
    return FULL_TABLE_LINES - 1 if snapshot.processes_pending else len(snapshot.processes)


def gpu_row_lines(height: int, gpus: int, processes: int, alerts: int) -> int:
    """Lines of each GPU's row (card and plot): CARD_LINES, and an even share of the lines neither the
    table (a line a process, at least TABLE_MIN_LINES) nor the alerts need, up to MAX_ROW_LINES; a busy
    table keeps them instead."""
    table = max(TABLE_MIN_LINES, processes + 1)
    free = height - FIXED_LINES - min(alerts, MAX_ALERT_LINES) - table - CARD_LINES * gpus
    return CARD_LINES + max(0, min(MAX_ROW_LINES - CARD_LINES, free // max(1, gpus)))


@dataclass
class KillProgress(Message):
    """A step of a kill in progress ("SIGTERM sent", "waiting 5 s", ...)."""

    text: str


@dataclass
class KillFinished(Message):
    """The final outcome of a kill."""

    outcome: KillOutcome


def no_gpu_text(snapshot: Snapshot) -> Text:
    """Why there is nothing to monitor, the fix, and how to look around anyway (`--demo`)."""
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
    if not snapshot.simulated:
        text.append("\nTo try the dashboard on simulated GPUs: ", style="dim")
        text.append("tfgpu-tui --demo", style="bold")
    return text


NO_PROCESS = "The selected alert names no process: k acts on none (esc goes back to the processes)."


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
        self,
        settings: Settings,
        feed: SnapshotFeed | None = None,
        kills: KillRequests | None = None,
        plot_seconds: float = PLOT_REDRAW_SECONDS,
    ) -> None:
        """`feed`: where the snapshots come from (None: only what is posted to the tab as `FeedUpdated`);
        `kills`: the kill path (None: kills are refused as not started); `plot_seconds`: how often the
        history plots are redrawn."""
        super().__init__(settings)
        self.feed = feed
        self.kills = kills
        self.plot_seconds = plot_seconds
        self._subscription: Subscription | None = None
        self.sort_by = SORT_KEYS[0]
        self.sort_reverse = False
        self.snapshot: Snapshot | None = None
        self.ui_ms: float | None = None  # what applying the last snapshot to the widgets cost
        self.kill_running = False
        self.compact_choice: bool | None = None  # None: the compact GPU view is chosen by the height
        self._plots_shown = False  # the full cards and their plots are on screen
        self._row_lines = CARD_LINES  # each GPU row's height (the plot takes what the card leaves)
        self._histories: tuple[GpuHistory, ...] = ()  # the latest received, for catching up when shown
        self._histories_at = -math.inf  # the timestamp of the snapshot they came with
        self._behind = False  # a snapshot arrived while the tab was hidden and is not shown yet
        self._lines: dict[str, str | Text] = {}  # what the one-line Statics show, by selector

    def compose(self) -> ComposeResult:
        if self.feed is not None and self.feed.latest is not None:
            self.snapshot = self.feed.latest
            self._fit()  # the GPU view's classes, before the widgets below are styled (no restyle on mount)
        yield Static("Starting the monitor…", id="host-line")
        yield Static(id="no-gpu")
        yield VerticalScroll(id="gpu-rows", can_focus=False)
        yield GpuCompactList(id="gpu-compact")
        alerts = AlertsPanel(id="monitor-alerts")
        alerts.kill_offered = self.offers("kill")
        yield alerts
        yield Static(id="alert-detail", markup=False)
        yield Static(id="process-caption")
        yield ProcessTable(id="process-table")
        yield Static(id="process-detail", markup=False)
        yield Static(id="kill-status")

    def on_mount(self) -> None:
        self._use_theme_colors()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._use_theme_colors())
        if self.feed is not None:
            self._subscription = subscribe(self, self.feed)
            self._ask_for_histories()  # the GPU view may have been chosen in compose, before this
            # the newest snapshot goes on the first frame, not on one painted after the next sample
            if (latest := self.feed.latest) is not None:
                self._receive(FeedUpdate(latest), shown=True)

    def _use_theme_colors(self) -> None:
        """Bars and load figures take the theme's success, warning and error colours."""
        variables = self.app.theme_variables
        set_level_colors(
            variables.get("success", "green"),
            variables.get("warning", "yellow"),
            variables.get("error", "red"),
        )

    def on_unmount(self) -> None:
        if self._subscription is not None:
            self._subscription.cancel()

    def focus_default(self) -> None:
        self.query_one(ProcessTable).focus()

    def offers(self, action: str) -> bool:
        """`k` is not offered where this session sends no signals (--readonly, least privilege without
        --allow-kill); pressing it says which option allows it."""
        return action != "kill" or signal_refusal(self.settings) is None

    @property
    def compact(self) -> bool:
        """Whether the GPUs are shown one line each (else as cards with history plots)."""
        return self.has_class("-compact")

    # --- applying a snapshot (event loop) -----------------------------------------------------------------

    def on_feed_updated(self, message: FeedUpdated) -> None:
        self._receive(message.update, shown=self.is_on_screen)

    def _receive(self, update: FeedUpdate, shown: bool) -> None:
        """Keep the snapshot; update the widgets if `shown` (the tab is on screen)."""
        self.snapshot = update.snapshot
        if update.histories is not None:
            self._histories, self._histories_at = update.histories, update.snapshot.timestamp
        if shown:
            self._apply(update.snapshot, update.histories)
        else:
            self._behind = True

    def on_show(self) -> None:
        """Ask the feed for the full rate again; catch up with what came while the tab was hidden."""
        if self._subscription is not None:
            self._subscription.set_period(self.settings.interval)
        self._ask_for_histories()
        if self._behind and self.snapshot is not None:
            self._apply(self.snapshot, self._histories)
            if self.snapshot.timestamp - self._histories_at >= self.plot_seconds:
                self._want_histories()  # they are due: fresh ones with the next sample

    def on_hide(self) -> None:
        """Hidden, the tab wants no particular rate and no histories (the feed slows down)."""
        if self._subscription is not None:
            self._subscription.set_period(None)
            self._subscription.set_histories(None)

    def _ask_for_histories(self) -> None:
        """Histories every `plot_seconds` while the plots are shown, else none."""
        if self._subscription is not None:
            self._subscription.set_histories(self.plot_seconds if self._plots_shown else None)

    def _want_histories(self) -> None:
        if self._subscription is not None:
            self._subscription.want_histories()

    def on_resize(self, _event: events.Resize) -> None:
        self._fit()
        if self.snapshot is not None:
            self._show_host_line(self.snapshot)

    def _show_host_line(self, snapshot: Snapshot) -> None:
        """The host line, fitted to the tab's width (before the first layout: the terminal's)."""
        width = (self.size.width or self.app.size.width) - 2  # its padding
        self._update_line("#host-line", render_host_line(snapshot, self.ui_ms, width))

    def _apply(self, snapshot: Snapshot, histories: tuple[GpuHistory, ...] | None) -> None:
        """Show a snapshot in the widgets; each widget repaints only what changed, without a re-layout where
        its size is fixed. `histories` None leaves the plots as they are."""
        timer = self.feed.timer if self.feed is not None else time.perf_counter
        started = timer()
        self._behind = False
        self._show_host_line(snapshot)
        no_gpu = self.query_one("#no-gpu", Static)
        if no_gpu.has_class("-shown") != (snapshot.error is not None):
            no_gpu.set_class(snapshot.error is not None, "-shown")
        if snapshot.error is not None:
            no_gpu.update(no_gpu_text(snapshot))
        self.query_one(AlertsPanel).show(shown_alerts(snapshot), snapshot.processes)
        self._fit()
        self._show_gpus(snapshot.devices, histories or ())
        self._refresh_table()
        self.ui_ms = (timer() - started) * 1000

    def _fit(self) -> None:
        """Choose the GPU view from the data: the compact lines below a height or as toggled, else the cards
        with their plots. The rest of the layout is app.tcss's (the table takes what is left)."""
        snapshot = self.snapshot
        # before the first layout: the terminal's height less the app's chrome
        height = self.size.height or max(0, self.app.size.height - CHROME_LINES)
        if height == 0:
            return
        alerts = len(shown_alerts(snapshot)) if snapshot is not None else 0
        compact = self.compact_choice
        if compact is None:
            compact = snapshot is None or not cards_fit(
                height, snapshot.devices, table_rows(snapshot), alerts
            )
        if compact != self.compact:
            self.set_class(compact, "-compact")
        if not compact and snapshot is not None:
            lines = gpu_row_lines(height, len(snapshot.devices), table_rows(snapshot), alerts)
            if lines != self._row_lines:
                self._row_lines = lines
                self.set_class(lines > CARD_LINES, "-tall-rows")
                for row in self.query(".gpu-row"):
                    row.styles.height = lines
        if self._plots_shown == compact:
            self._plots_shown = not compact
            self._ask_for_histories()
            if self._plots_shown:
                self._want_histories()

    def _show_gpus(self, devices: list[DeviceSample], histories: tuple[GpuHistory, ...]) -> None:
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
            for row in container.query(".gpu-row"):
                row.styles.height = self._row_lines
            if not histories:
                self._want_histories()  # new plots: fill them with the next sample
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
        caption = f"Processes ({len(rows)}), sorted by {sort_caption(self.sort_by, self.sort_reverse)}"
        if snapshot.error is not None:  # no GPU: an order by GPU memory or SM % would mean nothing
            caption = f"TensorFlow processes on the CPU ({len(rows)})"
            if rows and self.sort_by in ("pid", "time"):
                caption += f", sorted by {sort_caption(self.sort_by, self.sort_reverse)}"
        elif snapshot.processes_pending:
            caption = "Processes: reading…"
        self._update_line("#process-caption", caption)
        self._show_selected(table.selected)

    def _show_selected(self, row: TableRow | None) -> None:
        """The whole command line (the table may cut it) of the process `k` would act on, under the table:
        the selected alert's while the alerts list has the focus, else the table's selected one."""
        focused = self._focused_alert()
        pid = alert_pid(focused) if focused is not None else None
        if pid is not None:
            row = self._listed(pid)
            if row is None:
                self._update_line(
                    "#process-detail", Text(f"PID {pid} (the selected alert's) is no longer listed.")
                )
                return
        elif focused is not None:
            self._update_line("#process-detail", Text(NO_PROCESS))
            return
        if row is None:
            self._update_line("#process-detail", "")
            return
        process = row.process
        text = Text(f"PID {process.pid}: ", style="bold")
        text.append_text(row.cells[-1] if isinstance(row.cells[-1], Text) else Text(str(row.cells[-1])))
        if process.jupyter is not None and process.command:
            text.append(f"  ({process.command})")
        self._update_line("#process-detail", text)

    def _listed(self, pid: int) -> TableRow | None:
        """The table's row of local process `pid` (never another namespace's entry of the same number)."""
        rows = self.query_one(ProcessTable).rows_shown
        return next((row for row in rows if row.process.pid == pid and row.process.local), None)

    def on_process_table_highlighted(self, message: ProcessTable.Highlighted) -> None:
        self._show_selected(message.row)

    def on_alerts_panel_selected(self, message: AlertsPanel.Selected) -> None:
        detail = alert_detail(message.alert) if message.alert is not None else Text()
        self.query_one("#alert-detail", Static).update(detail)
        self._show_selected(self.query_one(ProcessTable).selected)

    def on_descendant_focus(self) -> None:
        self._show_reading()
        self._show_selected(self.query_one(ProcessTable).selected)

    def on_descendant_blur(self) -> None:
        self._show_reading()

    def _show_reading(self) -> None:
        """While the alerts list has focus, the selected alert's text and fix show under it (app.tcss:
        on a short terminal the GPUs make way for them)."""
        panel = self.query_one(AlertsPanel)
        self.set_class(panel.has_focus and bool(panel.ordered), "-reading")

    def _update_line(self, selector: str, content: str | Text) -> None:
        """Update a one-line Static only when its content changed, without a re-layout (its size is fixed)."""
        if self._lines.get(selector) != content:
            self._lines[selector] = content
            self.query_one(selector, Static).update(content, layout=False)

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
        """Explain an alert: an efficiency diagnosis in a window of its own, else jump to the Environment
        finding behind it. The one selected in the alerts list, else the selected process's, else the
        first."""
        from tfgpu_tui.ui.diagnosis_screen import is_diagnosis

        focused = self._focused_alert()
        if focused is not None:
            self._explain(focused)
            return
        alerts = self.snapshot.alerts if self.snapshot else []
        selected = self.query_one(ProcessTable).selected
        subject = f"PID {selected.process.pid}" if selected is not None else ""
        about = [alert for alert in alerts if subject and alert.subject == subject]
        explained = [alert for alert in about or alerts if alert.link or is_diagnosis(alert)]
        if not explained:
            what = f"PID {selected.process.pid}'s alerts" if about and selected else "the alerts here"
            self.notify(
                f"Nothing to explain: no Environment finding or diagnosis is behind {what}; each alert's fix "
                "is under it (a selects them).",
                severity="information",
            )
            return
        self._explain(explained[0])

    def _explain(self, alert: Alert) -> None:
        """An efficiency diagnosis in a window of its own, the Environment finding behind `alert`, or say
        there is none."""
        from tfgpu_tui.ui.diagnosis_screen import DiagnosisScreen, is_diagnosis

        if is_diagnosis(alert):
            self.app.push_screen(DiagnosisScreen(alert))
            return
        if alert.link:
            self.post_message(ShowTab.from_link(alert.link))
            return
        self.notify(
            f"Nothing to explain for “{short_title(alert)}”: no Environment finding is behind it; its fix is "
            "shown under the list.",
            severity="information",
        )

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
        from tfgpu_tui.proc.log_writers import OutputKind, process_output  # only when `l` is pressed

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
        if focused is not None and pid is None:
            self.notify(NO_PROCESS, severity="warning")
            return
        if pid is not None:
            listed = self._listed(pid)  # a local process: never another namespace's entry of the same number
            if listed is None:
                self.notify(f"PID {pid} is no longer listed.", severity="warning")
                return
            table.move_cursor(table.rows_shown.index(listed))
        selected = table.selected
        if selected is None:
            self.notify("Select a process in the table first.", severity="warning")
            return
        if self.kill_running:
            self.notify("A kill is already in progress; wait for its outcome.", severity="warning")
            return
        row = selected.process
        refusal = self.kills.refusal(row) if self.kills is not None else STARTING
        if refusal is not None:
            self._refused(row, refusal)
            return

        from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill  # loaded when first needed

        def confirmed(choice: KillChoice | None) -> None:
            if choice is not None:
                self._start_kill(row, choice)

        self.app.push_screen(ConfirmKill(row, self.settings.kill_grace_seconds, self.settings), confirmed)

    def _refused(self, row: ProcessRow, refusal: str) -> None:
        self.notify(refusal, title=f"Cannot kill PID {row.pid}", severity="warning", timeout=NOTIFY_SECONDS)
        self._set_kill_status(Text(f"Not killed: {refusal}"), "warning")

    def _start_kill(self, row: ProcessRow, choice: KillChoice = signal.SIGTERM) -> None:
        """Hand the kill (a signal, or a kernel action) to the core; its steps and outcome come back as
        messages."""
        if self.kills is None:
            self._refused(row, STARTING)
            return

        def progress(text: str) -> None:
            self.post_message(KillProgress(text))

        refusal = self.kills.start(
            row, choice, progress, lambda outcome: self.post_message(KillFinished(outcome))
        )
        if refusal is not None:
            self._refused(row, refusal)
            return
        from tfgpu_tui.gpu.kernel_actions import choice_label  # loaded by the kill just started

        self.kill_running = True
        self._set_kill_status(Text(f"Ending PID {row.pid} ({choice_label(choice)})…"), None)

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

    @property
    def kill_status(self) -> str:
        """The kill status line as plain text (the last kill's progress or outcome)."""
        return str(self.query_one("#kill-status", Static).render())
