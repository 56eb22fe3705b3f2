"""The status line at the top: host, GPU count, SIMULATED badge and the most urgent alert."""

from __future__ import annotations

import socket

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from tfgpu_tui.alerts import Alert, Severity

_SEVERITY_STYLE = {
    Severity.INFO: "bold",
    Severity.WARNING: "bold black on yellow",
    Severity.CRITICAL: "bold white on red",
}


class StatusHeader(Static):
    """Always visible: which machine, how many GPUs, and what needs attention first."""

    DEFAULT_CSS = """
    StatusHeader { dock: top; height: 1; background: $panel; color: $text; padding: 0 1; }
    """
    gpu_count: reactive[int | None] = reactive(None)
    simulated: reactive[bool] = reactive(False)
    no_gpu_reason: reactive[str] = reactive("")
    alert: reactive[Alert | None] = reactive(None)
    alert_count: reactive[int] = reactive(0)

    def __init__(self) -> None:
        super().__init__(id="status-header")
        self.host = socket.gethostname()

    def render(self) -> Text:
        text = Text()
        text.append("tfgpu-tui", style="bold")
        text.append(f"  {self.host}  ")
        if self.gpu_count is None:
            text.append("no GPU to monitor" if self.no_gpu_reason else "GPUs: …", style="dim")
        else:
            text.append(f"{self.gpu_count} GPU{'s' if self.gpu_count != 1 else ''}")
        if self.simulated:
            text.append("  ")
            text.append(" SIMULATED ", style="bold white on dark_magenta")
        text.append("  ")
        if self.alert is None:
            text.append("no alerts", style="green")
        else:
            more = f" (+{self.alert_count - 1} more)" if self.alert_count > 1 else ""
            text.append(f" {self.alert.message}{more} ", style=_SEVERITY_STYLE[self.alert.severity])
        return text
