"""The Batch probe tab (placeholder until its issue lands)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from tfgpu_tui.ui.tab_base import DashboardTab


class BatchProbeTab(DashboardTab):
    """The Batch probe tab."""

    TAB_ID = "probe"
    TAB_TITLE = "Batch probe"

    def compose(self) -> ComposeResult:
        yield Static("Batch probe: not built yet")
