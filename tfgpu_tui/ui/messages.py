"""Textual messages that carry data from the tabs up to the app (attributes down, messages up)."""

from __future__ import annotations

from textual.message import Message

from tfgpu_tui.alerts import Alert


class AlertsChanged(Message):
    """A tab's current alerts; `source` names the tab so each tab replaces only its own."""

    def __init__(self, source: str, alerts: list[Alert]) -> None:
        super().__init__()
        self.source = source
        self.alerts = alerts


class GpuCountChanged(Message):
    """How many GPUs the monitor sees (None when there is nothing to monitor), and whether simulated."""

    def __init__(self, count: int | None, simulated: bool, reason: str = "") -> None:
        super().__init__()
        self.count = count
        self.simulated = simulated
        self.reason = reason


class ShowTab(Message):
    """Ask the app to switch to a tab (by pane id), e.g. from a finding that links to the Monitor tab."""

    def __init__(self, tab_id: str) -> None:
        super().__init__()
        self.tab_id = tab_id
