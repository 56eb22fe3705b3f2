"""Training events from a followed log as the log reader sees it: finished, crashed, NaN/inf loss, stalled
while its writer lives, writer died, no recent checkpoint. Pure: the caller reads the log and its writer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfgpu_tui.notify.events import Event, EventKind
from tfgpu_tui.proc.log_writers import LogWriter
from tfgpu_tui.training.checkpoints import CHECKPOINT_FIX
from tfgpu_tui.training.keras_progress import is_bad_number
from tfgpu_tui.training.problems import STALL_FIX, Problem, ProblemId
from tfgpu_tui.training.readout import TrainingSnapshot
from tfgpu_tui.training.records import EpochRecord, format_seconds

CRASH_PROBLEMS = (ProblemId.EXCEPTION, ProblemId.KILLED)
WRITER_DIED_FIX = (
    "Look at the end of the log and at `dmesg -T | grep -i -E 'killed|oom'` (the OOM killer ends a process "
    "without a word in its log); restart from the last checkpoint"
)
MAX_METRICS = 6  # metrics named in a message


@dataclass(frozen=True)
class LogReading:
    """One followed log as read now: its parsed run, how long it has been silent, and its writer."""

    path: Path
    run: TrainingSnapshot
    idle_seconds: float
    writer: LogWriter | None
    checkpoint_warning: str = ""


def subject(reading: LogReading) -> str:
    """The run: its log and its writer's PID."""
    writer = reading.writer
    return f"Log {reading.path}" + (f", PID {writer.pid}" if writer is not None else "")


def metrics_text(record: EpochRecord) -> str:
    """``loss 0.0312, accuracy 0.9901`` (at most MAX_METRICS, as printed)."""
    parts = []
    for name, value in list(record.metrics.items())[:MAX_METRICS]:
        parts.append(f"{name} {value}" if is_bad_number(value) else f"{name} {value:.4g}")
    return ", ".join(parts)


def wall_time(epochs: list[EpochRecord]) -> float | None:
    """From the first epoch's start to the last one's end when both are known, else the epochs' durations."""
    first, last = epochs[0], epochs[-1]
    if first.ended_at is not None and last.ended_at is not None and first.seconds is not None:
        return last.ended_at - first.ended_at + first.seconds
    durations = [e.seconds for e in epochs]
    return sum(d for d in durations if d is not None) if all(d is not None for d in durations) else None


class TrainingEvents:
    """The training events that hold for a log now.

    Args:
        host: the machine's name for the messages.
        stall_seconds: a log silent this long while its writer lives has stalled.
    """

    def __init__(self, host: str, stall_seconds: float) -> None:
        self.host = host
        self.stall_seconds = stall_seconds

    def evaluate(self, reading: LogReading, card: str | None = None) -> list[Event]:
        """The events that hold; `card`: the run's report card, added to its "finished" message."""
        run = reading.run
        events = [
            event
            for event in (
                self._finished(reading, card),
                self._crashed(reading),
                self._nan(reading),
                self._stalled(reading),
                self._writer_died(reading),
            )
            if event is not None
        ]
        if reading.checkpoint_warning:
            message = f"No recent checkpoint: {reading.checkpoint_warning}."
            fix = CHECKPOINT_FIX
            events.append(self._event(EventKind.NO_CHECKPOINT, reading, f"{run.fit_run}", message, fix))
        return events

    def _event(self, kind: EventKind, reading: LogReading, occurrence: str, message: str, fix: str) -> Event:
        key = f"{kind.value}:{reading.path}:{occurrence}"
        return Event(kind, key, self.host, subject(reading), message, fix)

    def _finished(self, reading: LogReading, card: str | None = None) -> Event | None:
        run = reading.run
        reason = run.finish_reason()
        epochs = run.latest_fit_epochs()
        if reason is None or not reason.normal or not epochs:
            return None
        last = epochs[-1]
        how = "all its epochs" if reason.value == "completed" else "early stopping"
        message = f"Training finished ({how}) at epoch {last.epoch}/{last.total_epochs or '?'}"
        if last.metrics:
            message += f": {metrics_text(last)}"
        message += f". Wall time {format_seconds(wall_time(epochs))}."
        if card:
            message += f" {card}"
        return self._event(EventKind.FINISHED, reading, f"{last.fit_run}:{last.line_number}", message, "")

    def _crash_problem(self, reading: LogReading) -> Problem | None:
        return next((reading.run.problems[p] for p in CRASH_PROBLEMS if p in reading.run.problems), None)

    def _crashed(self, reading: LogReading) -> Event | None:
        run = reading.run
        problem = self._crash_problem(reading)
        reason = run.finish_reason()
        if problem is None or (reason is not None and reason.normal):
            return None
        message = problem.message
        detail = run.stop_reason()
        if run.ran_out_of_memory() and detail and detail not in message:
            message += f" {detail[:1].upper()}{detail[1:]}."
        return self._event(EventKind.CRASHED, reading, f"{problem.line_number}", message, problem.fix)

    def _nan(self, reading: LogReading) -> Event | None:
        problem = reading.run.problems.get(ProblemId.NAN_LOSS)
        if problem is None:
            return None
        return self._event(
            EventKind.NAN_LOSS, reading, f"{problem.line_number}", problem.message, problem.fix
        )

    def _running(self, reading: LogReading) -> bool:
        """Training started and has not ended (finished, crashed, stopped) as far as the log says."""
        run = reading.run
        if run.current.finished or run.current.epoch is None and run.current.step is None:
            return False
        if run.finish_reason() is not None or self._crash_problem(reading) is not None:
            return False
        return ProblemId.FILE_DELETED not in run.problems

    def _stalled(self, reading: LogReading) -> Event | None:
        writer = reading.writer
        if writer is not None and not writer.alive or not self._running(reading):
            return None
        if reading.idle_seconds < self.stall_seconds:
            return None
        silent = format_seconds(reading.idle_seconds)
        who = f"Its writer (PID {writer.pid}) is alive but" if writer is not None else "The log"
        message = f"{who} has written nothing for {silent}: training may be hung."
        occurrence = f"{writer.pid if writer is not None else '-'}"
        return self._event(EventKind.STALLED, reading, occurrence, message, STALL_FIX)

    def _writer_died(self, reading: LogReading) -> Event | None:
        writer = reading.writer
        if writer is None or writer.alive or not self._running(reading):
            return None
        cur = reading.run.current
        at = f"epoch {cur.epoch or '?'}/{cur.total_epochs or '?'}"
        message = (
            f"The training process (PID {writer.pid}) {writer.state} at {at} without an error in its log."
        )
        return self._event(EventKind.WRITER_DIED, reading, f"{writer.pid}", message, WRITER_DIED_FIX)
