"""Shared pieces of the Monitor tab's pilot tests: the demo scene's PIDs and table helpers."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from waiting import wait_until

from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.monitor import CSS_PATH, MonitorTab
from tfgpu_tui.ui.widgets.process_table import ProcessTable

FAST = 0.25  # the minimum interval, so tests see several refreshes quickly
TRAINING, KERNEL, OTHER_USER, CPU_JOB = 41873, 39012, 40555, 42210  # PIDs of the demo scene


class MonitorOnly(App[None]):
    """The Monitor tab alone, with an injected GPU source; keys go to the process table, as in the app."""

    CSS_PATH = CSS_PATH
    AUTO_FOCUS = "ProcessTable"

    def __init__(self, settings: Settings, source: object) -> None:
        super().__init__()
        self.settings = settings
        self.source = source

    def compose(self) -> ComposeResult:
        yield MonitorTab(self.settings, self.source)  # type: ignore[arg-type]


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
