"""A panel listing alerts, most urgent first, each with what to do about it; hidden when there are none."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from tfgpu_tui.alerts import Alert, Severity

_BADGE = {
    Severity.INFO: ("INFO", "bold"),
    Severity.WARNING: ("WARN", "bold black on yellow"),
    Severity.CRITICAL: ("CRIT", "bold white on red"),
}


def render_alerts(alerts: list[Alert]) -> Text:
    """One block per alert: severity badge, subject and message, then the fix on the next line."""
    text = Text()
    for alert in sorted(alerts, key=lambda alert: alert.severity, reverse=True):
        if text:
            text.append("\n")
        label, style = _BADGE[alert.severity]
        text.append(f" {label} ", style=style)
        if alert.subject and alert.subject not in alert.message:
            text.append(f" {alert.subject}:", style="bold")
        text.append(f" {alert.message}")
        if alert.fix:
            text.append(f"\n       fix: {alert.fix}", style="dim")
    return text


class AlertsPanel(VerticalScroll, can_focus=False):
    """The alerts of the latest snapshot (scrolls when there are many); re-rendered only when they change."""

    DEFAULT_CSS = """
    AlertsPanel { height: auto; max-height: 12; border: round $warning; padding: 0 1; display: none; }
    AlertsPanel.-shown { display: block; }
    AlertsPanel > Static { height: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's own parameter name
        super().__init__(id=id)
        self.alerts: list[Alert] = []
        self._shown_size = (-1, -1)  # alerts and characters shown

    def compose(self) -> ComposeResult:
        yield Static(markup=False)

    def show(self, alerts: list[Alert]) -> None:
        """Display these alerts (hides the panel when the list is empty)."""
        if alerts == self.alerts and self.has_class("-shown") == bool(alerts):
            return
        self.alerts = list(alerts)
        self.border_title = f"Alerts ({len(alerts)})"
        self.set_class(bool(alerts), "-shown")
        text = render_alerts(alerts)
        # A figure in a message that moves ("averaged 37 %" -> "38 %") leaves the text as long as it was, so
        # it wraps to the same height: repaint without re-laying out the screen. Any other change re-lays out.
        size = (len(alerts), len(text.plain))
        same_size, self._shown_size = size == self._shown_size, size
        self.query_one(Static).update(text, layout=not same_size)
