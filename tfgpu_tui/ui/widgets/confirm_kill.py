"""The modal that asks before a process is ended: it names the process and what it holds, and offers one
action per line, each with its key: for a Jupyter kernel whose server can be asked, Shut down and Restart
through the server's API; the signals to start with (SIGTERM, SIGKILL, SIGINT, as nvitop offers); Cancel."""

from __future__ import annotations

import signal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tfgpu_tui.gpu.attribution import basis_sentence
from tfgpu_tui.gpu.kernel_actions import (
    KernelAction,
    KillChoice,
    action_refusal,
    available_actions,
    choice_label,
)
from tfgpu_tui.gpu.kill import KILL_SIGNALS
from tfgpu_tui.gpu.model import ProcessRow
from tfgpu_tui.settings import Settings
from tfgpu_tui.sizes import mib_text
from tfgpu_tui.ui.widgets.gpu_format import NA, duration_text

SIGNAL_HINTS = {
    signal.SIGTERM: "ask it to exit",
    signal.SIGKILL: "end it at once, no clean-up",
    signal.SIGINT: "interrupt, as Ctrl+C does",
}
# Each action's key. SIGKILL is `9` (kill -9), never `k`: a second `k` after the one that opened the dialog
# must not end anything.
CHOICE_KEYS: dict[KillChoice, str] = {
    KernelAction.SHUTDOWN: "s",
    KernelAction.RESTART: "r",
    signal.SIGTERM: "t",
    signal.SIGKILL: "9",
    signal.SIGINT: "i",
}
KERNEL_HINTS = {
    KernelAction.SHUTDOWN: "the notebook shows it shut down",
    KernelAction.RESTART: "memory freed, the notebook stays open",
}
CANCEL = "cancel"
SIMULATED_TITLE = "SIMULATED (--demo): end simulated process {pid}? Nothing on this machine is signalled."


def kill_plan(first: signal.Signals, grace_seconds: float) -> str:
    """What will be sent, and when."""
    if first == signal.SIGKILL:
        return "SIGKILL now (the process cannot clean up)."
    return f"{first.name} now, SIGKILL if it is still alive after {grace_seconds:g} s."


def choice_plan(row: ProcessRow, choice: KillChoice | None, grace_seconds: float) -> str:
    """What the highlighted action will do."""
    if choice is None:
        return "Nothing is sent (Esc or Enter on Cancel)."
    if isinstance(choice, KernelAction):
        kernel = row.jupyter
        url = kernel.server_url if kernel else None
        verb = "shut down" if choice is KernelAction.SHUTDOWN else "restart"
        then = (
            "the notebook shows it shut down."
            if choice is KernelAction.SHUTDOWN
            else "the kernel comes back under the same id, empty; the notebook stays open."
        )
        return f"Asks the Jupyter server at {url} to {verb} this kernel; {then}"
    plan = kill_plan(choice, grace_seconds)
    if row.jupyter is not None:
        plan += " A Jupyter server usually starts a killed kernel again (the notebook shows a crash)."
    return plan


def kill_summary(
    row: ProcessRow, grace_seconds: float, first: KillChoice | None = signal.SIGTERM, kernel_note: str = ""
) -> str:
    """What the dialog says: which process, whose, what it runs and holds, and what the choice will do."""
    gpu = "the CPU" if row.gpu_index is None else f"GPU {row.gpu_index}"
    held = ("≈ " if row.memory_estimated else "") + mib_text(row.gpu_memory_mib)
    if row.gpu_memory_mib is None and row.memory_note:
        held = f"memory ({row.memory_note})"
    basis = basis_sentence(row)
    kernel = row.jupyter
    return (
        f"PID {row.pid}   user {row.user or NA}   running {duration_text(row.running_seconds)}\n"
        f"Command: {row.command or NA}\n"
        f"Holds {held} on {gpu}\n"
        + (f"Why this process: {basis}\n" if basis else "")
        + (f"Notebook: {kernel.notebook_path or 'not known'}\n" if kernel else "")
        + (f"Shut down / Restart kernel: not offered ({kernel_note})\n" if kernel_note else "")
        + f"\n{choice_plan(row, first, grace_seconds)}"
    )


def choice_id(choice: KillChoice) -> str:
    """The option id of a choice: `SIGTERM`, `shutdown`, ..."""
    return choice.value if isinstance(choice, KernelAction) else choice.name


def choice_prompt(choice: KillChoice) -> str:
    if isinstance(choice, KernelAction):
        return f"[{CHOICE_KEYS[choice]}] {choice.label}: {KERNEL_HINTS[choice]}"
    return f"[{CHOICE_KEYS[choice]}] {choice.name}: {SIGNAL_HINTS[choice]}"


class ConfirmKill(ModalScreen["KillChoice | None"]):
    """One line per action (kernel actions first, when its server can be asked; then the signals; Cancel),
    each with its key; ↑/↓ (or ←/→) move, Enter takes the highlighted line, which starts on Cancel; escape
    cancels. Dismissed with the choice (a signal or a KernelAction), or None."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("left", "move(-1)", "Previous action", show=False),
        Binding("right", "move(1)", "Next action", show=False),
        *[
            Binding(key, f"choose('{choice_id(choice)}')", choice_label(choice), show=False)
            for choice, key in CHOICE_KEYS.items()
        ],
    ]

    def __init__(self, row: ProcessRow, grace_seconds: float, settings: Settings | None = None) -> None:
        super().__init__()
        self.row = row
        self.grace_seconds = grace_seconds
        kernel_actions = available_actions(row, settings) if settings is not None else ()
        self.kernel_note = ""
        if row.jupyter is not None and not kernel_actions:
            self.kernel_note = (action_refusal(row, settings) if settings else None) or "no server to ask"
        self.choices: list[KillChoice] = [*kernel_actions, *KILL_SIGNALS]
        self.choice: KillChoice | None = None  # the highlighted line (None: Cancel)
        self.simulated = settings is not None and settings.demo  # --demo: nothing real is ended

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-kill"):
            title = SIMULATED_TITLE if self.simulated else "End process {pid}?"
            yield Static(title.format(pid=self.row.pid), id="confirm-kill-title")
            yield Static(self._summary(), id="confirm-kill-body", markup=False)
            options = [Option(choice_prompt(choice), id=choice_id(choice)) for choice in self.choices]
            yield OptionList(
                *options, Option("[esc] Cancel", id=CANCEL), id="confirm-kill-choices", markup=False
            )

    def _summary(self) -> str:
        return kill_summary(self.row, self.grace_seconds, self.choice, self.kernel_note)

    def on_mount(self) -> None:
        choices = self.query_one(OptionList)
        choices.highlighted = len(self.choices)  # Cancel: Enter on its own never ends anything
        choices.focus()

    def _choice(self, option_id: str | None) -> KillChoice | None:
        return next((c for c in self.choices if choice_id(c) == option_id), None)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self.choice = self._choice(event.option.id)
        self.query_one("#confirm-kill-body", Static).update(self._summary())

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self._choice(event.option.id))

    def action_choose(self, option_id: str) -> None:
        """Take the action of that key at once (a key of an action not offered here does nothing)."""
        choice = self._choice(option_id)
        if choice is not None:
            self.dismiss(choice)

    def action_move(self, step: int) -> None:
        """Highlight the previous or next line (wrapping round)."""
        choices = self.query_one(OptionList)
        count = choices.option_count
        choices.highlighted = ((choices.highlighted or 0) + step) % count

    def action_cancel(self) -> None:
        """Close the dialog without doing anything."""
        self.dismiss(None)
