"""The modal that asks before a process is signalled: it names the process and what it holds."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tfgpu_tui.gpu.model import ProcessRow
from tfgpu_tui.ui.widgets.gpu_format import NA, duration_text, mib_text


def kill_summary(row: ProcessRow, grace_seconds: float) -> str:
    """What the dialog says: which process, whose, what it runs and holds, and what will happen."""
    gpu = "the CPU" if row.gpu_index is None else f"GPU {row.gpu_index}"
    return (
        f"PID {row.pid}   user {row.user or NA}   running {duration_text(row.running_seconds)}\n"
        f"Command: {row.command or NA}\n"
        f"Holds {mib_text(row.gpu_memory_mib)} on {gpu}\n\n"
        f"SIGTERM now, SIGKILL if it is still alive after {grace_seconds:g} s."
    )


class ConfirmKill(ModalScreen[bool]):
    """Kill / Cancel for one process; focus starts on Cancel and escape cancels."""

    DEFAULT_CSS = """
    ConfirmKill { align: center middle; }
    ConfirmKill > Vertical {
        width: 80; max-width: 95%; height: auto; border: thick $error; background: $surface; padding: 1 2;
    }
    ConfirmKill #confirm-kill-title { text-style: bold; margin-bottom: 1; }
    ConfirmKill #confirm-kill-buttons { height: auto; margin-top: 1; align-horizontal: right; }
    ConfirmKill Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, row: ProcessRow, grace_seconds: float) -> None:
        super().__init__()
        self.row = row
        self.grace_seconds = grace_seconds

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Kill process {self.row.pid}?", id="confirm-kill-title")
            yield Static(kill_summary(self.row, self.grace_seconds), id="confirm-kill-body", markup=False)
            with Horizontal(id="confirm-kill-buttons"):
                yield Button("Kill", variant="error", id="kill")
                yield Button("Cancel", variant="primary", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "kill")

    def action_cancel(self) -> None:
        """Close the dialog without sending anything."""
        self.dismiss(False)
