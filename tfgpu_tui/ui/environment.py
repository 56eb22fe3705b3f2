"""The Environment tab (placeholder until its issue lands)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from tfgpu_tui.ui.tab_base import DashboardTab


class EnvironmentTab(DashboardTab):
    """The Environment tab."""

    TAB_ID = "environment"
    TAB_TITLE = "Environment"

    def compose(self) -> ComposeResult:
        yield Static("Environment: not built yet")
