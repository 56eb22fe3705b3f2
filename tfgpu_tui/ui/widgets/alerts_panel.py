"""The alerts list: one line per alert (severity, short title, the key that acts on it), most urgent first;
the selected alert's full text and fix are shown by the Monitor below it."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace

from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.message import Message

from tfgpu_tui.alerts import Alert, AlertKind, Severity
from tfgpu_tui.gpu.efficiency import KINDS as DIAGNOSIS_KINDS
from tfgpu_tui.gpu.model import ProcessRow
from tfgpu_tui.ui.widgets.process_table import ProcessTable
from tfgpu_tui.ui.widgets.row_list import RowList, cursor_bindings

_BADGE = {Severity.INFO: "INFO", Severity.WARNING: "WARN", Severity.CRITICAL: "CRIT"}
_SEVERITY_LOOK = {
    Severity.INFO: "alerts-panel--info",
    Severity.WARNING: "alerts-panel--warning",
    Severity.CRITICAL: "alerts-panel--critical",
}
# What each kind of alert is called in one line, where the alert itself gives no short title.
KIND_TITLES: dict[str, str] = {
    AlertKind.CPU_FALLBACK: "CPU fallback",
    AlertKind.STALE_VRAM: "Stale VRAM",
    AlertKind.INPUT_STARVATION: "Input starved",
    AlertKind.MEMORY_FULL: "Memory full",
    AlertKind.GPU_LOST: "GPU lost",
    AlertKind.MEMORY_GROWTH_OFF: "Memory growth off",
    AlertKind.UNATTRIBUTED_VRAM: "Unattributed VRAM",
    AlertKind.PERSISTENCE_OFF: "Persistence off",
    AlertKind.NO_GPU: "No GPU",
    AlertKind.PROBE_ERROR: "Batch probe failed",
}


def program_name(command: str | None) -> str:
    """The script or program a command line runs: `python train.py --x` -> `train.py`, `python -m pkg` ->
    `pkg`."""
    try:
        words = shlex.split(command or "")
    except ValueError:
        words = (command or "").split()
    for position, word in enumerate(words[1:], start=1):
        if word == "-m" and position + 1 < len(words):
            return words[position + 1]
        if not word.startswith("-"):
            return os.path.basename(word)
    return os.path.basename(words[0]) if words else ""


def process_label(row: ProcessRow) -> str:
    """A process in a word or two: a Jupyter kernel's notebook (or kernel id), else its program."""
    kernel = row.jupyter
    if kernel is not None:
        if kernel.notebook_path:
            return os.path.basename(kernel.notebook_path)
        return f"jupyter kernel {kernel.kernel_id[:8]}"
    return program_name(row.command)


def short_title(alert: Alert) -> str:
    """The alert in a few words: its own short title, else what it is and what it is about."""
    if alert.short:
        return alert.short
    title = KIND_TITLES.get(alert.kind, alert.kind.replace("_", " ").capitalize())
    return f"{title}: {alert.subject}" if alert.subject else title


def with_short_titles(alerts: list[Alert], processes: list[ProcessRow]) -> list[Alert]:
    """The alerts with a short title filled in where they have none, naming the program of the process they
    are about (`CPU fallback: PID 1234 train.py`, `Stale VRAM: PID 4321 analysis.ipynb`)."""
    programs = {f"PID {row.pid}": process_label(row) for row in processes if row.local}
    filled = []
    for alert in alerts:
        if not alert.short:
            program = programs.get(alert.subject, "")
            alert = replace(alert, short=f"{short_title(alert)} {program}".rstrip())
        filled.append(alert)
    return filled


KILLABLE_KINDS = frozenset({AlertKind.STALE_VRAM, AlertKind.CPU_FALLBACK, AlertKind.INPUT_STARVATION})


def action_keys(alert: Alert, kill_offered: bool = True) -> list[str]:
    """The keys that act on the alert: `k` kills the process it names (where this session may send signals),
    `e` explains it where an Environment finding or an efficiency diagnosis is behind it."""
    keys = []
    if kill_offered and alert.subject.startswith("PID ") and alert.kind in KILLABLE_KINDS:
        keys.append("k kill")
    if alert.link or alert.kind in DIAGNOSIS_KINDS:
        keys.append("e explain")
    return keys


def alert_pid(alert: Alert) -> int | None:
    """The PID an alert is about, if it names one."""
    number = alert.subject.removeprefix("PID ")
    return int(number) if alert.subject.startswith("PID ") and number.isdigit() else None


def alert_detail(alert: Alert) -> Text:
    """The full text of one alert and its fix."""
    text = Text()
    if alert.subject and alert.subject not in alert.message:
        text.append(f"{alert.subject}: ", style="bold")
    text.append(alert.message)
    if alert.fix:
        text.append("\nFix: ", style="bold")
        text.append(alert.fix)
    return text


def render_alerts(alerts: list[Alert]) -> Text:
    """Every alert in full, most urgent first: badge, subject and message, then the fix (used where there is
    room for all of them, e.g. a snapshot in a report)."""
    text = Text()
    for alert in sorted(alerts, key=lambda alert: alert.severity, reverse=True):
        if text:
            text.append("\n")
        text.append(f" {_BADGE[alert.severity]} ")
        if alert.subject and alert.subject not in alert.message:
            text.append(f" {alert.subject}:")
        text.append(f" {alert.message}")
        if alert.fix:
            text.append(f"\n       fix: {alert.fix}")
    return text


class AlertsPanel(RowList[Alert]):
    """One line per alert, most urgent first; up/down select one (the Monitor shows its text and fix).
    Hidden when there are none; at most `max-height` lines, scrolled to keep the selection in view."""

    HEADER_LINES = 0
    CURSOR = "alerts-panel--cursor"  # marked only while the list has the focus
    COMPONENT_CLASSES = {*_SEVERITY_LOOK.values(), "alerts-panel--key", CURSOR}
    BINDINGS = [
        *cursor_bindings(),
        Binding("escape", "leave", "Back to processes"),
    ]

    @dataclass
    class Selected(Message):
        """Another alert was selected."""

        alert: Alert | None

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's own parameter name
        super().__init__(id=id)
        self.alerts: list[Alert] = []  # as given
        self.kill_offered = True  # whether `[k kill]` is offered (False where the session sends no signals)

    @property
    def ordered(self) -> list[Alert]:
        """The alerts as shown, most urgent first, short titles filled in."""
        return self.rows

    @property
    def cursor(self) -> int:
        return self.cursor_row

    @property
    def selected(self) -> Alert | None:
        """The alert under the cursor (as shown, with its short title)."""
        return self.selected_row

    def show(self, alerts: list[Alert], processes: list[ProcessRow] | None = None) -> None:
        """Display these alerts (hides the panel when the list is empty); the selection stays on the same
        kind of alert about the same subject."""
        if alerts == self.alerts and self.has_class("-shown") == bool(alerts):
            return
        previous = self.selected
        self.alerts = list(alerts)
        ordered = sorted(alerts, key=lambda alert: alert.severity, reverse=True)
        self.show_rows(with_short_titles(ordered, processes or []))
        self.border_title = f"Alerts ({len(alerts)})"
        self.set_class(bool(alerts), "-shown")
        if self.selected != previous:
            self.post_message(self.Selected(self.selected))

    def action_leave(self) -> None:
        """Give the focus back to the process table."""
        self.screen.focus_next(ProcessTable)

    # --- the RowList's questions --------------------------------------------------------------------------

    def row_key(self, row: Alert) -> tuple[str, str]:
        return row.kind, row.subject

    def cursor_moved(self) -> None:
        self.post_message(self.Selected(self.selected))

    def render_row(self, row: Alert, width: int) -> list[Segment]:
        key = "][".join(action_keys(row, self.kill_offered))
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        line.append(f" {_BADGE[row.severity]} ", style=self.cell_style(_SEVERITY_LOOK[row.severity]))
        line.append(" ")
        title = short_title(row)
        room = width - line.cell_len - (len(key) + 3 if key else 0)
        line.append(title if len(title) <= room else title[: max(0, room - 1)] + "…")
        if key:
            line.append(" " * max(1, width - line.cell_len - len(key) - 2))
            line.append(f"[{key}]", style=self.cell_style("alerts-panel--key"))
        return list(line.render(self.app.console))
