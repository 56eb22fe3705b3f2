"""A training run as the log tells it: epochs, the current step, ETA, throughput, problems.

Fed with segments (from `follow.py` or a history scan), it keeps everything the Training tab and
``tfgpu-tui log`` show. Pure: no I/O, no clocks (callers pass idle time in).
"""

from __future__ import annotations

import copy
import math
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tfgpu_tui.alerts import Severity
from tfgpu_tui.durations import span_text
from tfgpu_tui.env.diagnoses import diagnose_line
from tfgpu_tui.training import problems as known
from tfgpu_tui.training.follow import Segment
from tfgpu_tui.training.keras_progress import (
    EpochStart,
    JsonRecord,
    Progress,
    clean_segment,
    is_bad_number,
    parse_epoch_header,
    parse_json_record,
    parse_progress,
)
from tfgpu_tui.training.problems import Problem

if TYPE_CHECKING:
    from tfgpu_tui.training.log_sources import LogWriter

MAX_CURVE_POINTS = 2000
MAX_VIEW_LINES = 1000
MAX_VIEW_LINE_CHARS = 4000
STALL_MIN_SECONDS = 60.0
STALL_STEP_FACTOR = 50.0
STALL_EPOCH_FACTOR = 3.0


@dataclass
class EpochRecord:
    """One finished epoch.

    Attributes:
        epoch: its number as printed (1-based); total_epochs: N of ``Epoch k/N`` (None if not printed).
        metrics: every metric printed at its end (``loss``, ``val_loss``, ...).
        seconds: its duration where printed; step_seconds: time per step where printed.
        steps: steps in the epoch; fit_run: which ``fit()`` call in the file (1-based).
        line_number: the line it ended on; source: ``progress`` or ``json`` (exact, from JsonLinesLogger).
        ended_at: wall-clock time it ended, set by the follower (`watch.py`): when its last line arrived
            while following, estimated back from the file's modification time for history; None if unknown.
    """

    epoch: int
    total_epochs: int | None
    metrics: dict[str, float]
    seconds: float | None = None
    step_seconds: float | None = None
    steps: int | None = None
    fit_run: int = 1
    line_number: int | None = None
    source: str = "progress"
    ended_at: float | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready; nan/inf become the strings "nan", "inf", "-inf"."""
        return {
            "epoch": self.epoch,
            "total_epochs": self.total_epochs,
            "metrics": json_metrics(self.metrics),
            "seconds": self.seconds,
            "step_seconds": self.step_seconds,
            "steps": self.steps,
            "fit_run": self.fit_run,
            "line_number": self.line_number,
            "source": self.source,
            "ended_at": self.ended_at,
        }


@dataclass
class CurrentState:
    """Where training is now (the latest update, finished or not)."""

    epoch: int | None = None
    total_epochs: int | None = None
    step: int | None = None
    total_steps: int | None = None
    eta_seconds: float | None = None
    step_seconds: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    batch_size: int | None = None
    finished: bool = False

    @property
    def steps_per_second(self) -> float | None:
        return 1.0 / self.step_seconds if self.step_seconds else None

    @property
    def samples_per_second(self) -> float | None:
        """Known only when the batch size is (JsonLinesLogger(batch_size=...))."""
        rate = self.steps_per_second
        return rate * self.batch_size if rate and self.batch_size else None

    def as_dict(self) -> dict[str, object]:
        return {
            "epoch": self.epoch,
            "total_epochs": self.total_epochs,
            "step": self.step,
            "total_steps": self.total_steps,
            "eta_seconds": self.eta_seconds,
            "step_seconds": self.step_seconds,
            "samples_per_second": self.samples_per_second,
            "metrics": json_metrics(self.metrics),
            "finished": self.finished,
        }


def json_metrics(metrics: dict[str, float]) -> dict[str, float | str]:
    """Metrics with nan/inf as strings (JSON has no such numbers)."""
    return {k: (str(v) if is_bad_number(v) else v) for k, v in metrics.items()}


class TrainingRun:
    """Everything parsed from one log so far."""

    def __init__(self, context: EpochStart | None = None) -> None:
        self.epochs: list[EpochRecord] = []
        self.current = CurrentState()
        self.problems: dict[str, Problem] = {}
        self.curve: list[tuple[int, float]] = []  # (step, loss) within the current epoch
        self.lines: deque[str] = deque(maxlen=MAX_VIEW_LINES)
        self.live = ""  # the unfinished last line, cleaned
        self.fit_run = 0
        self.context_given = context is not None
        self.scanned_lines = 0  # set by a history scan
        self._tracebacks = known.TracebackTracker()
        self._curve_stride = 1
        if context is not None:
            self._start_epoch(context, new_run=True)

    # ----- feeding -----
    def feed_segment(self, segment: Segment) -> None:
        """One complete segment from the log."""
        text = clean_segment(segment.text)
        progress = parse_progress(text, segment.line_ends) if text else None
        if progress is not None:
            self._on_progress(progress, segment.line_number, committed=True)
            if segment.line_ends:
                self._add_line(text if not progress.trailing else text[: -len(progress.trailing)].rstrip())
                if progress.trailing:
                    self._on_text(progress.trailing, segment.line_number)
            else:
                self.live = text
            return
        if not segment.line_ends:
            self.live = text
            return
        self.live = ""
        self._add_line(text)
        if text:
            self._on_text(text, segment.line_number)

    def feed_segments(self, segments: list[Segment]) -> None:
        for segment in segments:
            self.feed_segment(segment)

    def feed_partial(self, text: str) -> None:
        """The unfinished text after the last terminator: shown and used as the current state, not kept."""
        cleaned = clean_segment(text)
        if not cleaned:
            return
        self.live = cleaned
        progress = parse_progress(cleaned)
        if progress is not None and not progress.final:
            self._on_progress(progress, None, committed=False)

    def feed_file_event(self, event: str) -> None:
        """React to a follower event (``truncated``, ``rotated``, ``deleted``, ``opened``)."""
        if event == "deleted":
            self._raise(
                Problem("FILE_DELETED", Severity.WARNING, "The log file was deleted.", known.DELETED_FIX)
            )
        elif event in ("truncated", "rotated"):
            self.problems.pop("FILE_DELETED", None)
            self.lines.append(f"--- log {event}: reading the new content from its start ---")
            self.live = ""

    # ----- derived -----
    def stall_threshold(self) -> float:
        """Idle seconds after which a running training counts as stalled."""
        threshold = STALL_MIN_SECONDS
        if self.current.step_seconds:
            threshold = max(threshold, STALL_STEP_FACTOR * self.current.step_seconds)
        durations = [e.seconds for e in self.epochs[-3:] if e.seconds]
        if durations and self._is_epoch_granular():
            threshold = max(threshold, STALL_EPOCH_FACTOR * max(durations))
        return threshold

    def stall_problem(self, idle_seconds: float, writer: LogWriter | None = None) -> Problem | None:
        """A STALL problem when the log has not grown for much longer than a step takes, or at once when the
        process writing it (`writer`, when known) has exited before training finished; None otherwise."""
        if self.current.finished or self.current.epoch is None and self.current.step is None:
            return None
        if any(p in self.problems for p in ("KILLED", "EXCEPTION", "FILE_DELETED")):
            return None
        silent = format_seconds(idle_seconds)
        if writer is not None and not writer.alive:
            message = (
                f"The writer (PID {writer.pid}) {writer.state} before training finished; "
                f"no new output for {silent}."
            )
            return Problem("STALL", Severity.WARNING, message, known.STALL_FIX)
        if idle_seconds < self.stall_threshold():
            return None
        step = format_seconds(self.current.step_seconds) if self.current.step_seconds else "unknown"
        if writer is not None:
            message = (
                f"The writer (PID {writer.pid}) is alive but silent for {silent} (a step takes {step}): "
                "it may be hung or buffering its output."
            )
        else:
            message = f"No new output for {silent} (a step takes {step}): the process may have died or hung."
        return Problem("STALL", Severity.WARNING, message, known.STALL_FIX)

    def problem_list(
        self, idle_seconds: float | None = None, writer: LogWriter | None = None
    ) -> list[Problem]:
        """Problems, most severe first, then by line; with the stall check when idle time is given."""
        found = list(self.problems.values())
        stall = self.stall_problem(idle_seconds, writer) if idle_seconds is not None else None
        if stall:
            found.append(stall)
        return sorted(found, key=lambda p: (-p.severity, p.line_number or 0))

    def stopped_by(self) -> Problem | None:
        """The problem that ended training early (an exception or the OOM killer), if any."""
        for key in ("EXCEPTION", "KILLED"):
            if key in self.problems and not self.current.finished:
                return self.problems[key]
        return None

    def latest_fit_epochs(self) -> list[EpochRecord]:
        """Epochs of the last fit() call in the file."""
        last = self.epochs[-1].fit_run if self.epochs else 0
        return [e for e in self.epochs if e.fit_run == last]

    def training_eta_seconds(self) -> float | None:
        """Time left for the whole fit(): this epoch's ETA plus the remaining epochs at the mean duration."""
        cur = self.current
        if cur.finished or cur.epoch is None or not cur.total_epochs:
            return None
        if self.stopped_by() is not None:
            return None
        durations = [e.seconds for e in self.latest_fit_epochs() if e.seconds]
        if not durations:
            return cur.eta_seconds
        return (cur.eta_seconds or 0.0) + (cur.total_epochs - cur.epoch) * sum(durations) / len(durations)

    def view_lines(self) -> list[str]:
        """The clean view: the last lines as a terminal would show them, the live line last."""
        return [*self.lines, self.live] if self.live else list(self.lines)

    def snapshot(self) -> TrainingRun:
        """An independent copy for another thread to read."""
        clone = copy.copy(self)
        clone.epochs = list(self.epochs)
        clone.current = copy.deepcopy(self.current)
        clone.problems = {k: copy.copy(v) for k, v in self.problems.items()}
        clone.curve = list(self.curve)
        clone.lines = deque(self.lines, maxlen=MAX_VIEW_LINES)
        return clone

    def absorb_history(self, history: TrainingRun, line_offset: int) -> None:
        """Put the epochs and problems of the file's earlier part (parsed separately) before ours.

        Args:
            history: the run parsed from the start of the file up to where this one began.
            line_offset: lines in that earlier part (our line numbers were counted from its end).
        """
        run_offset = max(history.fit_run - (1 if self.context_given else 0), 0)
        for record in self.epochs:
            record.fit_run += run_offset
            record.line_number = _shift(record.line_number, line_offset)
        for problem in self.problems.values():
            problem.line_number = _shift(problem.line_number, line_offset)
        self.fit_run += run_offset
        self.epochs[:0] = history.epochs
        merged = dict(history.problems)
        if self.fit_run > history.fit_run:
            merged.pop("FINISHED", None)
        for key, problem in self.problems.items():
            if key in merged and key not in ("EXCEPTION", "FINISHED"):
                problem.count += merged[key].count
                problem.line_number = merged[key].line_number
                problem.line = merged[key].line
            merged[key] = problem
        self.problems = merged
        if self.current.batch_size is None:
            self.current.batch_size = history.current.batch_size

    def as_dict(self, idle_seconds: float | None = None) -> dict[str, object]:
        """The JSON of ``tfgpu-tui log --json``: epochs, current, problems."""
        return {
            "epochs": [e.as_dict() for e in self.epochs],
            "current": self.current.as_dict(),
            "training_eta_seconds": self.training_eta_seconds(),
            "problems": [p.as_dict() for p in self.problem_list(idle_seconds)],
        }

    # ----- internals -----
    def _is_epoch_granular(self) -> bool:
        return self.current.step is None or self.current.step == self.current.total_steps

    def _add_line(self, text: str) -> None:
        self.lines.append(text[:MAX_VIEW_LINE_CHARS])
        self.live = ""

    def _start_epoch(self, start: EpochStart, new_run: bool) -> None:
        if new_run:
            self.fit_run += 1
            self.problems.pop("FINISHED", None)
        cur = self.current
        cur.epoch, cur.total_epochs = start.epoch, start.total_epochs
        cur.step, cur.eta_seconds, cur.finished = 0, None, False
        self.curve = []
        self._curve_stride = 1

    def _on_text(self, text: str, line_number: int | None) -> None:
        header = parse_epoch_header(text)
        if header is not None:
            previous = self.current.epoch
            new_run = (
                self.fit_run == 0 or header.epoch == 1 or (previous is not None and header.epoch < previous)
            )
            self._start_epoch(header, new_run)
            return
        record = parse_json_record(text)
        if record is not None:
            self._on_json(record, line_number)
            return
        exception = self._tracebacks.feed(text)
        if exception is not None:
            diagnosis = diagnose_line(exception, line_number)
            fix = diagnosis.fix if diagnosis else ""
            self.problems["EXCEPTION"] = Problem(
                "EXCEPTION",
                Severity.CRITICAL,
                f"Training stopped with {exception}",
                fix,
                line_number,
                exception,
            )
        if known.is_killed_line(text):
            self._raise(
                Problem(
                    "KILLED",
                    Severity.CRITICAL,
                    "The process was killed.",
                    known.KILLED_FIX,
                    line_number,
                    text,
                )
            )
            return
        diagnosis = diagnose_line(text, line_number)
        if diagnosis is not None:
            self._raise(known.from_diagnosis(diagnosis))

    def _raise(self, problem: Problem) -> None:
        existing = self.problems.get(problem.id)
        if existing is None:
            self.problems[problem.id] = problem
        else:
            existing.count += 1

    def _on_progress(self, progress: Progress, line_number: int | None, committed: bool) -> None:
        cur = self.current
        cur.step, cur.total_steps = progress.step, progress.total_steps
        if progress.step_seconds is not None and progress.per == "step":
            cur.step_seconds = progress.step_seconds
        cur.eta_seconds = progress.eta_seconds if not progress.final else 0.0
        if progress.metrics:
            cur.metrics = dict(progress.metrics)
        loss = progress.metrics.get("loss")
        if committed and loss is not None and is_bad_number(loss):
            self._raise(
                Problem(
                    "NAN_LOSS",
                    Severity.CRITICAL,
                    f"The loss is {loss} at epoch {cur.epoch or '?'} step {progress.step}.",
                    known.NAN_FIX,
                    line_number,
                )
            )
        if not committed:
            return
        if progress.final:
            self._finish_epoch(progress, line_number)
        elif loss is not None and not math.isnan(loss):
            self._add_curve_point(progress.step, loss)

    def _add_curve_point(self, step: int, loss: float) -> None:
        if self.curve and step <= self.curve[-1][0]:
            return
        if step % self._curve_stride:
            return
        self.curve.append((step, loss))
        if len(self.curve) > MAX_CURVE_POINTS:
            self._curve_stride *= 2
            self.curve = [p for p in self.curve if p[0] % self._curve_stride == 0]

    def _finish_epoch(self, progress: Progress, line_number: int | None) -> None:
        cur = self.current
        if self.fit_run == 0:
            self.fit_run = 1
        previous = self.epochs[-1] if self.epochs and self.epochs[-1].fit_run == self.fit_run else None
        epoch = cur.epoch if cur.epoch is not None else (previous.epoch + 1 if previous else 1)
        if previous is not None and previous.epoch == epoch:
            if previous.source == "json":
                return  # the exact record came first
            self.epochs.pop()
        record = EpochRecord(
            epoch,
            cur.total_epochs,
            dict(progress.metrics),
            progress.elapsed_seconds,
            progress.step_seconds,
            progress.step,
            self.fit_run,
            line_number,
        )
        self._append_epoch(record)

    def _append_epoch(self, record: EpochRecord) -> None:
        self.epochs.append(record)
        cur = self.current
        cur.epoch = record.epoch
        cur.metrics = dict(record.metrics)
        if record.steps is not None:
            cur.step = cur.total_steps = record.steps
        cur.eta_seconds = 0.0
        if record.total_epochs is not None and record.epoch >= record.total_epochs:
            cur.finished = True
            loss = record.metrics.get("loss")
            detail = f", final loss {loss:.4g}" if loss is not None else ""
            self.problems["FINISHED"] = Problem(
                "FINISHED",
                Severity.INFO,
                f"Training finished: {record.epoch} epochs{detail}.",
                line_number=record.line_number,
            )

    def _on_json(self, record: JsonRecord, line_number: int | None) -> None:
        data = record.data
        cur = self.current
        if record.event == "train_begin":
            self.fit_run += 1
            self.problems.pop("FINISHED", None)
            cur.total_epochs = data.get("epochs")
            cur.total_steps = data.get("steps")
            cur.batch_size = data.get("batch_size")
            cur.epoch, cur.step, cur.finished = None, 0, False
        elif record.event == "epoch_begin":
            self._start_epoch(EpochStart(int(data["epoch"]), int(data.get("epochs") or 0)), new_run=False)
            cur.total_epochs = data.get("epochs")
        elif record.event == "batch_end":
            logs = _numbers(data.get("logs"))
            self._on_progress(
                Progress(
                    int(data.get("step", 0)),
                    data.get("steps"),
                    logs,
                    data.get("eta_seconds"),
                    None,
                    data.get("step_seconds"),
                ),
                line_number,
                committed=True,
            )
        elif record.event == "epoch_end":
            if self.fit_run == 0:
                self.fit_run = 1
            epoch = int(data["epoch"])
            if self.epochs and self.epochs[-1].fit_run == self.fit_run and self.epochs[-1].epoch == epoch:
                self.epochs.pop()
            self._append_epoch(
                EpochRecord(
                    epoch,
                    data.get("epochs"),
                    _numbers(data.get("logs")),
                    data.get("seconds"),
                    data.get("step_seconds"),
                    data.get("steps"),
                    self.fit_run,
                    line_number,
                    "json",
                )
            )


def _numbers(logs: object) -> dict[str, float]:
    if not isinstance(logs, dict):
        return {}
    found = {}
    for key, value in logs.items():
        try:
            found[str(key)] = float(value)
        except (TypeError, ValueError):
            continue
    return found


def _shift(line_number: int | None, offset: int) -> int | None:
    return None if line_number is None else line_number + offset


def format_seconds(seconds: float | None) -> str:
    """``45s``, ``3m 05s``, ``2h 03m``; ``-`` for None; sub-second as ``12ms`` (``durations.span_text``)."""
    return span_text(seconds)
