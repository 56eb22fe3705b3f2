"""The modal that asks before a process is signalled: it names the process and what it holds, and offers the
signal to start with (SIGTERM, SIGKILL or SIGINT, as nvitop does)."""

from __future__ import annotations

import signal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, RadioButton, RadioSet, Static

from tfgpu_tui.gpu.attribution import basis_sentence
from tfgpu_tui.gpu.kill import KILL_SIGNALS
from tfgpu_tui.gpu.model import ProcessRow
from tfgpu_tui.ui.widgets.gpu_format import NA, duration_text, mib_text

SIGNAL_HINTS = {
    signal.SIGTERM: "ask it to exit (default)",
    signal.SIGKILL: "end it at once, no clean-up",
    signal.SIGINT: "interrupt, as Ctrl+C does",
}


def kill_plan(first: signal.Signals, grace_seconds: float) -> str:
    """What will be sent, and when."""
    if first == signal.SIGKILL:
        return "SIGKILL now (the process cannot clean up)."
    return f"{first.name} now, SIGKILL if it is still alive after {grace_seconds:g} s."


def kill_summary(row: ProcessRow, grace_seconds: float, first: signal.Signals = signal.SIGTERM) -> str:
    """What the dialog says: which process, whose, what it runs and holds, and what will happen."""
    gpu = "the CPU" if row.gpu_index is None else f"GPU {row.gpu_index}"
    held = ("≈ " if row.memory_estimated else "") + mib_text(row.gpu_memory_mib)
    if row.gpu_memory_mib is None and row.memory_note:
        held = f"memory ({row.memory_note})"
    basis = basis_sentence(row)
    return (
        f"PID {row.pid}   user {row.user or NA}   running {duration_text(row.running_seconds)}\n"
        f"Command: {row.command or NA}\n"
        f"Holds {held} on {gpu}\n"
        + (f"Why this process: {basis}\n" if basis else "")
        + f"\n{kill_plan(first, grace_seconds)}"
    )


class ConfirmKill(ModalScreen["signal.Signals | None"]):
    """Signal choice, Kill / Cancel for one process; focus starts on Cancel, ←/→ and Tab move between the
    buttons, escape cancels. Dismissed with the chosen signal, or None."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("left", "move(-1)", "Previous button", show=False),
        Binding("right", "move(1)", "Next button", show=False),
    ]

    def __init__(self, row: ProcessRow, grace_seconds: float) -> None:
        super().__init__()
        self.row = row
        self.grace_seconds = grace_seconds
        self.signal: signal.Signals = signal.SIGTERM

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-kill"):
            yield Static(f"Kill process {self.row.pid}?", id="confirm-kill-title")
            yield Static(kill_summary(self.row, self.grace_seconds), id="confirm-kill-body", markup=False)
            with RadioSet(id="confirm-kill-signal"):
                for signum in KILL_SIGNALS:
                    label = f"{signum.name}: {SIGNAL_HINTS[signum]}"
                    yield RadioButton(label, value=signum == self.signal, name=signum.name)
            with Horizontal(id="confirm-kill-buttons"):
                yield Button("Kill", variant="error", id="kill")
                yield Button("Cancel", variant="primary", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        event.stop()
        self.signal = signal.Signals[str(event.pressed.name)]
        body = kill_summary(self.row, self.grace_seconds, self.signal)
        self.query_one("#confirm-kill-body", Static).update(body)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(self.signal if event.button.id == "kill" else None)

    def action_move(self, step: int) -> None:
        """Move focus to the previous or next button (from the signal choice, to the first button)."""
        buttons = list(self.query(Button))
        focused = self.focused
        if focused not in buttons:
            buttons[0].focus()
            return
        buttons[(buttons.index(focused) + step) % len(buttons)].focus()

    def action_cancel(self) -> None:
        """Close the dialog without sending anything."""
        self.dismiss(None)
