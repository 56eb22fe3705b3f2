"""The Monitor tab (placeholder until its issue lands)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from tfgpu_tui.ui.tab_base import DashboardTab


class MonitorTab(DashboardTab):
    """The Monitor tab."""

    TAB_ID = "monitor"
    TAB_TITLE = "Monitor"

    def compose(self) -> ComposeResult:
        yield Static("Monitor: not built yet")
