"""Shared pieces of the Monitor tab's pilot tests: the demo scene's PIDs and table helpers."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.pilot import Pilot

from tests.helpers.waiting import wait_until
from tfgpu_tui.gpu.feed import SnapshotFeed
from tfgpu_tui.gpu.kill_requests import KillRequests
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui import APP_STYLESHEET
from tfgpu_tui.ui.monitor import PLOT_REDRAW_SECONDS, MonitorTab
from tfgpu_tui.ui.widgets.process_table import ProcessTable

FAST = 0.25  # the minimum interval, so tests see several refreshes quickly
TRAINING, KERNEL, OTHER_USER, CPU_JOB = 41873, 39012, 40555, 42210  # PIDs of the demo scene


class MonitorOnly(App[None]):
    """The Monitor tab alone, fed by its own feed over an injected GPU source (None: no feed at all, the test
    posts the snapshots); keys go to the process table, as in the app."""

    CSS_PATH = APP_STYLESHEET
    AUTO_FOCUS = "ProcessTable"

    def __init__(
        self, settings: Settings, source: object = None, plot_seconds: float = PLOT_REDRAW_SECONDS
    ) -> None:
        super().__init__()
        self.settings = settings
        self.feed = SnapshotFeed(settings, source) if source is not None else None  # type: ignore[arg-type]
        self.plot_seconds = plot_seconds

    def on_load(self) -> None:
        if self.feed is not None:
            self.feed.start()

    def on_unmount(self) -> None:
        if self.feed is not None:
            self.feed.close()

    def compose(self) -> ComposeResult:
        kills = KillRequests(self.feed) if self.feed is not None else None
        yield MonitorTab(self.settings, self.feed, kills, self.plot_seconds)


async def wait_for_table(pilot: Pilot, rows: int = 4) -> None:
    """Wait for the first snapshot's rows and for the app to give the process table focus (keys go there)."""
    app = pilot.app
    await wait_until(pilot, lambda: len(shown_pids(app)) == rows and isinstance(app.focused, ProcessTable))


def shown_pids(app: App) -> list[int]:
    return [row.process.pid for row in app.query_one(ProcessTable).rows_shown]


def record_notifications(app: App) -> list[tuple[str, str]]:
    """From now on, every notification the app shows as (title, message), in order."""
    shown: list[tuple[str, str]] = []
    notify = app.notify

    def recording(message: str, *, title: str = "", **options: object) -> None:
        shown.append((title, message))
        notify(message, title=title, **options)  # type: ignore[arg-type]

    app.notify = recording  # type: ignore[method-assign]
    return shown


async def select_pid(pilot: Pilot, pid: int) -> None:
    table = pilot.app.query_one(ProcessTable)
    table.focus()
    table.move_cursor(row=shown_pids(pilot.app).index(pid))
    await pilot.pause()
    assert table.selected is not None and table.selected.process.pid == pid
