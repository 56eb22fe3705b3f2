"""A small modal listing the Python interpreters found (with their TensorFlow version) to check instead, with
a field for the path of one that was not found."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tfgpu_tui.env.targets import Candidate, typed_interpreter


def candidate_label(candidate: Candidate, current: str) -> Text:
    """One line: a mark for the current target, the interpreter, its TensorFlow, and why it is listed."""
    text = Text("● " if candidate.python == current else "  ", style="bold")
    text.append(candidate.python, style="bold")
    if candidate.tf_version:
        text.append(f"  TensorFlow {candidate.tf_version}", style="green")
    elif candidate.error:
        text.append(f"  {candidate.error}", style="red")
    else:
        text.append("  no TensorFlow", style="yellow")
    text.append(f"  ({candidate.source})", style="dim")
    return text


class TargetPicker(ModalScreen[str | None]):
    """Enter picks the highlighted interpreter, or checks the path typed in the field (Tab reaches it);
    Escape keeps the current one."""

    DEFAULT_CSS = """
    /* Environment: the interpreter picker (p) */
    TargetPicker { align: center middle; }
    TargetPicker > Vertical {
        width: 90%; max-width: 120; height: auto; max-height: 80%; border: round $primary;
        background: $surface; padding: 0 1;
    }
    TargetPicker OptionList { height: auto; max-height: 16; }
    TargetPicker #picker-path { margin-top: 1; }
    TargetPicker #picker-problem { height: auto; color: $error; display: none; }
    """

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, candidates: list[Candidate], current: str) -> None:
        super().__init__()
        self.candidates = candidates
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Which Python's TensorFlow to check (Enter picks, Tab: type a path, Esc cancels)")
            yield OptionList(
                *(Option(candidate_label(c, self.current), id=str(i)) for i, c in enumerate(self.candidates))
            )
            yield Input(
                placeholder="or the path of another interpreter, e.g. ~/venvs/tf/bin/python", id="picker-path"
            )
            yield Static(id="picker-problem")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        pythons = [c.python for c in self.candidates]
        options.highlighted = pythons.index(self.current) if self.current in pythons else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.candidates[int(event.option.id or 0)].python)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Check the typed path: an existing executable file is picked, anything else gets one line why."""
        problem = self.query_one("#picker-problem", Static)
        try:
            python = typed_interpreter(event.value)
        except ValueError as error:
            problem.update(str(error))
            problem.display = True
            return
        self.dismiss(python)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
