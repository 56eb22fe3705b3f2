"""`e` on an efficiency diagnosis: what it means, what it says with its number and basis, and the fix."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tfgpu_tui.alerts import Alert
from tfgpu_tui.gpu.efficiency import KINDS, MEANING, SHORT


def is_diagnosis(alert: Alert) -> bool:
    """Whether the alert is an efficiency diagnosis (gpu/efficiency.py)."""
    return alert.kind in KINDS


def explanation(alert: Alert) -> Text:
    """The diagnosis explained: its meaning, what it found (number and basis), its fix, where to read more."""
    text = Text()
    title = SHORT.get(alert.kind, alert.kind)
    text.append(title[:1].upper() + title[1:], style="bold")
    if alert.subject:
        text.append(f" ({alert.subject})", style="bold")
    text.append("\n\n")
    text.append(MEANING.get(alert.kind, ""))
    text.append("\n\nFound: ", style="bold")
    text.append(alert.message)
    text.append("\n\nFix: ", style="bold")
    text.append(alert.fix)
    text.append("\n\nThresholds and definitions: docs/efficiency.md (settings in config.toml)", style="dim")
    return text


class DiagnosisScreen(ModalScreen[None]):
    """One diagnosis explained over the dashboard; any of esc, enter, q or e goes back."""

    DEFAULT_CSS = """
    DiagnosisScreen { align: center middle; }
    DiagnosisScreen #diagnosis-box { width: 90%; max-width: 100; height: auto; max-height: 90%;
        border: round $primary; background: $panel; padding: 0 1; }
    DiagnosisScreen #diagnosis-keys { color: $text-muted; }
    """
    BINDINGS = [Binding("escape,enter,q,e", "dismiss", "Back")]

    def __init__(self, alert: Alert) -> None:
        super().__init__()
        self.alert = alert

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="diagnosis-box"):
            yield Static(explanation(self.alert), id="diagnosis-text")
            yield Static("esc: back", id="diagnosis-keys")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
