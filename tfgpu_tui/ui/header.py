"""The status line at the top: host, GPU count, SIMULATED badge, `notify → ntfy` while this user's notify
runs, the Python in use and why, and the most urgent alert.

The header subscribes to the feed itself for the GPU count, and to the app's SharedInterpreter for the Python
(at each snapshot it asks whether a TensorFlow job in use has ended, so that it is forgotten); the alerts of
every source come from the app.
"""

from __future__ import annotations

import re
import socket

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.env.targets import Target
from tfgpu_tui.gpu.feed import SnapshotFeed, Subscription
from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.ui import interpreter
from tfgpu_tui.ui.feed_link import FeedUpdated, subscribe
from tfgpu_tui.ui.text_fit import whole_words
from tfgpu_tui.ui.widgets.alerts_panel import short_title

NOTIFY_CHECK_SECONDS = 10.0
ALERT_TITLE_ROOM = 16  # cells the alert's title keeps before the Python's text shortens (the host goes first)
MIN_PYTHON = 8  # cells under which the Python's text is left out rather than cut
_SEVERITY_CLASS = {
    Severity.INFO: "status-header--info",
    Severity.WARNING: "status-header--warning",
    Severity.CRITICAL: "status-header--critical",
}


PID_SUBJECT = re.compile(r"^.*?\bPID \d+")


def essential(title: str) -> str:
    """What an alert's short title cannot lose: up to its "PID N" (the program after it may go); "" for a
    title about no process."""
    match = PID_SUBJECT.match(title)
    return match.group(0) if match else ""


class StatusHeader(Static):
    """Always visible: which machine, how many GPUs, and what needs attention first, in a short form that
    fits the width (the host name gives way first)."""

    COMPONENT_CLASSES = {*_SEVERITY_CLASS.values(), "status-header--simulated", "status-header--ok"}
    gpu_count: reactive[int | None] = reactive(None)
    simulated: reactive[bool] = reactive(False)
    no_gpu_reason: reactive[str] = reactive("")
    alert: reactive[Alert | None] = reactive(None)
    alert_count: reactive[int] = reactive(0)
    notify_line: reactive[str] = reactive("")  # "notify → ntfy, slack" while this user's notify runs
    interpreter: reactive[Target | None] = reactive(None)  # the Python the tabs use, and why

    def __init__(self, feed: SnapshotFeed | None = None) -> None:
        super().__init__(id="status-header")
        self.host = socket.gethostname()
        self._feed = feed
        self._subscription: Subscription | None = None
        self._notify_checked = -NOTIFY_CHECK_SECONDS

    def on_mount(self) -> None:
        shared = interpreter.subscribe(self, self._take_interpreter)
        self.call_after_refresh(shared.start_choosing)  # after the first frame: it asks interpreters
        self.call_after_refresh(self._check_notify)  # and this reads a file
        if self._feed is not None:
            self._subscription = subscribe(self, self._feed)
            if (latest := self._feed.latest) is not None:  # on the first frame already
                self._notify_checked = latest.timestamp  # the check above counts for this snapshot
                self.show_snapshot(latest)

    def on_unmount(self) -> None:
        if self._subscription is not None:
            self._subscription.cancel()

    def on_feed_updated(self, message: FeedUpdated) -> None:
        self.show_snapshot(message.update.snapshot)
        interpreter.shared_interpreter(self).forget_ended_job()

    def _take_interpreter(self, target: Target) -> None:
        self.interpreter = target

    def show_snapshot(self, snapshot: Snapshot) -> None:
        """Take the GPU count (or why there is none) and whether it is simulated from a snapshot; now and
        then, whether this user's notify runs."""
        self.gpu_count = len(snapshot.devices) if snapshot.error is None else None
        self.no_gpu_reason = snapshot.error.message if snapshot.error is not None else ""
        self.simulated = snapshot.simulated
        if snapshot.timestamp - self._notify_checked >= NOTIFY_CHECK_SECONDS:
            self._notify_checked = snapshot.timestamp
            self._check_notify()

    def _check_notify(self) -> None:
        """Show `notify → ...` while this user's notify runs (its status file says so)."""
        from tfgpu_tui.notify.status import read_status

        status = read_status()
        self.notify_line = status.indicator() if status is not None else ""

    def render(self) -> Text:
        width = self.content_region.width or 80
        status = Text()
        if self.gpu_count is None:
            status.append("no GPU to monitor" if self.no_gpu_reason else "GPUs: …", style="dim")
        else:
            status.append(f"{self.gpu_count} GPU{'s' if self.gpu_count != 1 else ''}")
        if self.simulated:
            status.append("  ")
            status.append(" SIMULATED ", style=self.get_component_rich_style("status-header--simulated"))
        if self.notify_line and width >= 100:
            status.append(f"  {self.notify_line}", style="dim")
        status.append("  ")
        host = f"  {self.host}  "
        python, alert, whole = self._python_and_alert(width - len("tfgpu-tui") - len(host) - status.cell_len)
        if not whole:  # the host name gives way first
            host = "  "
            python, alert, _ = self._python_and_alert(width - len("tfgpu-tui  ") - status.cell_len)
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append("tfgpu-tui", style="bold")
        text.append(host)
        text.append_text(status)
        text.append(python)
        text.append_text(alert)
        return text

    def _python_and_alert(self, room: int) -> tuple[str, Text, bool]:
        """The Python's text (with its 2 cells of gap) in the longest form that leaves the alert's title
        ALERT_TITLE_ROOM cells, the alert fitted to the rest (`room`: the cells after the GPU count), and
        whether both are whole."""
        alert = Text(no_wrap=True, overflow="ellipsis")
        if self.alert is None:
            # beside "no GPU to monitor", "no alerts" would read as if all were well
            if not self.no_gpu_reason:
                alert.append("no alerts", style=self.get_component_rich_style("status-header--ok"))
            title = more = ""
        else:
            more = f" (+{self.alert_count - 1})" if self.alert_count > 1 else ""
            title = short_title(self.alert)
            alert.append(f" {title}{more} ")
        python = ""
        forms = interpreter.interpreter_forms(self.interpreter) if self.interpreter else []
        least = max(ALERT_TITLE_ROOM, len(essential(title)))  # a title is never cut inside "PID N"
        keep = alert.cell_len if self.alert is None else min(len(title), least) + len(more) + 2
        fitting = [form for form in forms if len(form) + 2 + keep <= room]
        if fitting:
            python = fitting[0]
        elif forms and room - keep - 2 >= MIN_PYTHON:
            python = "…" + forms[-1][-(room - keep - 3) :]
        whole = not forms or python == forms[0]
        python = f"{python}  " if python else ""
        if self.alert is None:
            return python, alert, whole and len(python) + alert.cell_len <= room
        room -= len(python) + len(more) + 2
        if len(title) > room:
            cut, core = whole_words(title, max(1, room)), essential(title)
            title, whole = (core if core and not cut.startswith(core) and len(core) <= room else cut), False
        style = self.get_component_rich_style(_SEVERITY_CLASS[self.alert.severity])
        return python, Text(f" {title}{more} ", style=style, no_wrap=True, overflow="ellipsis"), whole
