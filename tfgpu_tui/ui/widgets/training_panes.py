"""The Training tab's text panes: the run's status, its writer and checkpoint, the problems with their fixes,
and the last lines of the log. Each draws what it is given; the tab decides when."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.content import Content
from textual.widgets import Static

from tfgpu_tui.alerts import Severity
from tfgpu_tui.training.follow import FileState
from tfgpu_tui.training.oversight import OversightState
from tfgpu_tui.training.problems import Problem, fixes_to_show
from tfgpu_tui.training.run import TrainingSnapshot, format_seconds
from tfgpu_tui.training.text_format import evaluation_text, format_value, status_parts
from tfgpu_tui.ui.text_fit import whole_words
from tfgpu_tui.ui.widgets.styled_text import ACCENT, ERROR, SUCCESS, WARNING, StyledText

TONE_STYLE = {"": "", "strong": "bold", "good": SUCCESS, "bad": ERROR}
MAX_QUOTED_CHARS = 600  # of the log line quoted under a problem (a TensorFlow OOM line with its shape fits)
SEVERITY_STYLE = {Severity.CRITICAL: ERROR, Severity.WARNING: WARNING, Severity.INFO: SUCCESS}
MAX_LOG_LINES_SHOWN = 200  # the log's last lines kept for the pane (it shows those that fit)


class RunStatus(Static):
    """The file and its state, then progress, metrics and an evaluate() result (one paragraph when narrow)."""

    def say(self, text: str, style: str = "") -> None:
        """A one-off message instead of the status (opening, refused, failed)."""
        self.update(Content.styled(text, style))

    def show(
        self,
        path: Path,
        state: FileState,
        backfill: tuple[int, int] | None,
        run: TrainingSnapshot,
        simulated: bool,
        narrow: bool,
    ) -> None:
        cur = run.current
        gap = "  " if narrow else "   "
        text = StyledText()
        if simulated:
            text.append(" SIMULATED ", f"bold reverse {WARNING}")
            text.append(" demo log, made-up numbers ")
            text.append("" if narrow else "(run without --demo, or with --log, for real) ")
        text.append(f"{path}", "bold")
        if state is FileState.WAITING:
            text.append(
                "  waiting for the file to appear: start training with "
                f"`python train.py > {path.name} 2>&1`, or press o to open another log",
                WARNING,
            )
        elif state is FileState.DELETED:
            text.append("  the file was deleted", ERROR)
        if backfill:
            done, total = backfill
            text.append(f"  reading history {100 * done // max(total, 1)}%", "dim")
        text.append("\n")
        if cur.epoch is None and cur.step is None:
            if state is not FileState.WAITING:
                text.append("No Keras progress in this file yet.", "dim")
            self.update(text.content())
            return
        # Each part ("20.0 steps/s", "loss 0.7684") stays whole: a line breaks only between parts.
        width = self.content_size.width or 10**6
        line = 0

        def add(*pieces: tuple[str, str]) -> None:
            nonlocal line
            size = sum(len(piece) for piece, _ in pieces)
            if line == 0:
                pass
            elif line + len(gap) + size > width:
                text.append("\n")
                line = 0
            else:
                text.append(gap)
                line += len(gap)
            for piece, style in pieces:
                text.append(piece, style)
            line += size

        for part, tone in status_parts(run):
            add((part, TONE_STYLE[tone]))
        if cur.metrics:
            if not narrow:
                text.append("\n")
                line = 0
            for name, value in cur.metrics.items():
                add((f"{name} ", "dim"), (format_value(value), ERROR if value != value else "bold"))
        if evaluation := evaluation_text(run):  # evaluate() after fit(): its own result, not an epoch
            text.append(gap if narrow else "\n")
            text.append(evaluation, ACCENT)
        self.update(text.content())


class RunContext(Static):
    """The writer process and the newest checkpoint, a line each (the CSS cuts them with an ellipsis)."""

    def show(self, oversight: OversightState, simulated: bool, card: str | None = None) -> None:
        """The writer and the newest checkpoint; `card`: the ended run's efficiency (gpu/report_card.py)."""
        text = StyledText("writer ", "dim")
        writer = oversight.writer
        if simulated:
            text.append("SIMULATED: a thread inside tfgpu-tui (--demo)", WARNING)
        elif writer is None:
            text.append("unknown (no process here has this file as its output)", "dim")
        else:
            text.append(f"PID {writer.pid} ", "bold")
            text.append(writer.state, SUCCESS if writer.alive else ERROR)
            text.append(f"  {writer.command[:300]}", "dim")
        text.append("\ncheckpoint ", "dim")
        newest = oversight.newest_checkpoint
        if not oversight.scanned:
            text.append("looking ...", "dim")
        elif newest is None:
            roots = ", ".join(str(root) for root in oversight.checkpoint_roots)
            text.append(f"none found under {roots}", WARNING)
        else:
            text.append(str(newest.path), "bold")
            text.append(f"  {format_seconds(newest.age_seconds())} old", "")
            told = oversight.announced
            if told is not None and newest.path.name == told.path.rsplit("/", 1)[-1]:
                text.append(f"  announced in the log at epoch {told.epoch or '?'}", "dim")
            if oversight.checkpoint_count > 1:
                text.append(f"  ({oversight.checkpoint_count} found)", "dim")
        if oversight.checkpoint_warning:
            text.append(f"  {oversight.checkpoint_warning}", WARNING)
        if card:
            text.append("\nefficiency ", "dim")
            text.append(card, "")
        self.update(text.content())


class ProblemsView(Static):
    """Each problem on a line, its title in words with its id, where and how often, its fix right after it
    (unless the one above has it), then the log line."""

    def show(self, problems: list[Problem]) -> None:
        text = StyledText()
        if not problems:
            text.append("No problems found.", SUCCESS)
        for index, (problem, fix) in enumerate(zip(problems, fixes_to_show(problems), strict=True)):
            if index:
                text.append("\n")
            where = f", {problem.where()}" if problem.where() else ""  # rank N (a launcher's prefix), line N
            times = f" x{problem.count}" if problem.count > 1 else ""
            text.append(problem.title, SEVERITY_STYLE[problem.severity])
            text.append(f" ({problem.id}{where}){times}: ", "dim")  # the id, as the docs and --json name it
            text.append(problem.message)
            if fix:
                text.append("\n  fix: ", "dim")
                text.append(fix)
            if problem.line and problem.line != problem.message:
                text.append("\n  > ", "dim")
                text.append(whole_words(problem.line, MAX_QUOTED_CHARS), "dim")
        self.update(text.content())


class LogLines(Static):
    """The last lines of the log as the terminal would show them (progress bars redrawn in place)."""

    lines: list[str] = []

    def show(self, run: TrainingSnapshot) -> None:
        self.lines = run.view_lines()[-MAX_LOG_LINES_SHOWN:]
        self.refresh()

    def render(self) -> Text:
        """The last lines that fit the pane as it is now, each in whole words at its width (a cut line ends
        in " …")."""
        width, height = self.content_size.width, max(self.content_size.height, 1)
        return Text("\n".join(whole_words(line, width) for line in self.lines[-height:]), no_wrap=True)
