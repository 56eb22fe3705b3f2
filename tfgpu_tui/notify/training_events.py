"""Training events from a followed log's state (training/log_state.py): finished, crashed, NaN/inf loss,
writer died and no recent checkpoint are the log's problems of the same ids (its one problem list), each
event naming its problem; stalled is the STALL check at notify's own threshold (--stall-minutes) while the
writer lives. Pure: the caller follows the log (training/feed.py)."""

from __future__ import annotations

from tfgpu_tui.notify.events import Event, EventKind
from tfgpu_tui.training.keras_progress import is_bad_number
from tfgpu_tui.training.log_state import LogState
from tfgpu_tui.training.problems import STALL_FIX, Problem, ProblemId
from tfgpu_tui.training.records import EpochRecord, format_seconds

CRASH_PROBLEMS = (ProblemId.EXCEPTION, ProblemId.KILLED)
WRITER_DIED_FIX = (
    "Look at the end of the log and at `dmesg -T | grep -i -E 'killed|oom'` (the OOM killer ends a process "
    "without a word in its log); restart from the last checkpoint"
)
MAX_METRICS = 6  # metrics named in a message


def subject(reading: LogState) -> str:
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

    def evaluate(self, reading: LogState, card: str | None = None) -> list[Event]:
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
        no_checkpoint = reading.problem(ProblemId.NO_CHECKPOINT)
        if no_checkpoint is not None:
            events.append(
                self._event(
                    EventKind.NO_CHECKPOINT,
                    reading,
                    f"{run.fit_run}",
                    no_checkpoint.message,
                    no_checkpoint.fix,
                    no_checkpoint.id,
                )
            )
        return events

    def _event(
        self, kind: EventKind, reading: LogState, occurrence: str, message: str, fix: str, problem: str
    ) -> Event:
        key = f"{kind.value}:{reading.path}:{occurrence}"
        return Event(kind, key, self.host, subject(reading), message, fix, str(problem))

    def _finished(self, reading: LogState, card: str | None = None) -> Event | None:
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
        occurrence = f"{last.fit_run}:{last.line_number}"
        return self._event(EventKind.FINISHED, reading, occurrence, message, "", ProblemId.FINISHED)

    def _crash_problem(self, reading: LogState) -> Problem | None:
        return reading.problem(*CRASH_PROBLEMS)

    def _crashed(self, reading: LogState) -> Event | None:
        run = reading.run
        problem = self._crash_problem(reading)
        reason = run.finish_reason()
        if problem is None or (reason is not None and reason.normal):
            return None
        message = problem.message
        detail = run.stop_reason()
        if run.ran_out_of_memory() and detail and detail not in message:
            message += f" {detail[:1].upper()}{detail[1:]}."
        occurrence = f"{problem.line_number}"
        return self._event(EventKind.CRASHED, reading, occurrence, message, problem.fix, problem.id)

    def _nan(self, reading: LogState) -> Event | None:
        problem = reading.problem(ProblemId.NAN_LOSS)
        if problem is None:
            return None
        occurrence = f"{problem.line_number}"
        return self._event(EventKind.NAN_LOSS, reading, occurrence, problem.message, problem.fix, problem.id)

    def _running(self, reading: LogState) -> bool:
        """Training started and has not ended (finished, crashed, stopped) as far as the log says."""
        run = reading.run
        if run.current.finished or run.current.epoch is None and run.current.step is None:
            return False
        if run.finish_reason() is not None or self._crash_problem(reading) is not None:
            return False
        return ProblemId.FILE_DELETED not in run.problems

    def _stalled(self, reading: LogState) -> Event | None:
        writer = reading.writer
        if writer is not None and not writer.alive or not self._running(reading):
            return None
        if reading.idle_seconds < self.stall_seconds:
            return None
        silent = format_seconds(reading.idle_seconds)
        who = f"Its writer (PID {writer.pid}) is alive but" if writer is not None else "The log"
        message = f"{who} has written nothing for {silent}: training may be hung."
        occurrence = f"{writer.pid if writer is not None else '-'}"
        return self._event(EventKind.STALLED, reading, occurrence, message, STALL_FIX, ProblemId.STALL)

    def _writer_died(self, reading: LogState) -> Event | None:
        """The STALL problem of a writer that is gone (the problem list says so at once)."""
        writer = reading.writer
        stall = reading.problem(ProblemId.STALL)
        if writer is None or writer.alive or stall is None:
            return None
        cur = reading.run.current
        at = f"epoch {cur.epoch or '?'}/{cur.total_epochs or '?'}"
        message = (
            f"The training process (PID {writer.pid}) {writer.state} at {at} without an error in its log."
        )
        return self._event(
            EventKind.WRITER_DIED, reading, f"{writer.pid}", message, WRITER_DIED_FIX, stall.id
        )
