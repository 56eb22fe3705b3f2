"""Textual messages that carry data from the tabs up to the app (attributes down, messages up)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.message import Message

from tfgpu_tui.alerts import Alert


@dataclass
class AlertsChanged(Message):
    """A tab's current alerts; `source` names the tab so each tab replaces only its own."""

    source: str
    alerts: list[Alert]


@dataclass
class ShowTab(Message):
    """Ask the app to switch to a tab (by pane id), e.g. from a finding that links to the Monitor tab;
    `target` names something in that tab to reveal (a finding id), or is empty."""

    tab_id: str
    target: str = ""

    @classmethod
    def from_link(cls, link: str) -> ShowTab:
        """From an alert's link, `"tab"` or `"tab:target"` (e.g. `"environment:gpus_visible"`)."""
        tab_id, _, target = link.partition(":")
        return cls(tab_id, target)


@dataclass
class OpenLog(Message):
    """Ask the app to follow this log in the Training tab (e.g. the file a GPU process writes to)."""

    path: Path
    pid: int | None = None
