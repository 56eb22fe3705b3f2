"""The Training tab (placeholder until its issue lands)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from tfgpu_tui.ui.tab_base import DashboardTab


class TrainingTab(DashboardTab):
    """The Training tab."""

    TAB_ID = "training"
    TAB_TITLE = "Training"

    def compose(self) -> ComposeResult:
        yield Static("Training: not built yet")
