"""Textual messages that carry data from the tabs up to the app (attributes down, messages up)."""

from __future__ import annotations

from pathlib import Path

from textual.message import Message

from tfgpu_tui.alerts import Alert


class AlertsChanged(Message):
    """A tab's current alerts; `source` names the tab so each tab replaces only its own."""

    def __init__(self, source: str, alerts: list[Alert]) -> None:
        super().__init__()
        self.source = source
        self.alerts = alerts


class ShowTab(Message):
    """Ask the app to switch to a tab (by pane id), e.g. from a finding that links to the Monitor tab;
    `target` names something in that tab to reveal (a finding id), or is empty."""

    def __init__(self, tab_id: str, target: str = "") -> None:
        super().__init__()
        self.tab_id = tab_id
        self.target = target

    @classmethod
    def from_link(cls, link: str) -> ShowTab:
        """From an alert's link, `"tab"` or `"tab:target"` (e.g. `"environment:gpus_visible"`)."""
        tab_id, _, target = link.partition(":")
        return cls(tab_id, target)


class OpenLog(Message):
    """Ask the app to follow this log in the Training tab (e.g. the file a GPU process writes to)."""

    def __init__(self, path: Path, pid: int | None = None) -> None:
        super().__init__()
        self.path = path
        self.pid = pid
