"""A training log as it is read: fit() runs, epochs, evaluations, the current step, ETA, problems.

Fed with segments (from `follow.py` or a history scan), it keeps everything the Training tab and
``tfgpu-tui log`` show; `snapshot()` hands an immutable copy to another thread. Pure: no I/O, no clocks
(callers pass idle time in). The reading side (problems, stall, runs, JSON) lives in `readout.py`.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from tfgpu_tui.alerts import Severity
from tfgpu_tui.env.diagnoses import diagnose_line, platform_hint
from tfgpu_tui.training import problems as known
from tfgpu_tui.training.callback_messages import MessageKind, parse_callback_message
from tfgpu_tui.training.follow import FileEvent, Segment
from tfgpu_tui.training.keras_progress import (
    EpochStart,
    JsonRecord,
    Progress,
    ValuesLine,
    clean_segment,
    is_bad_number,
    parse_epoch_header,
    parse_json_record,
    parse_progress,
    parse_values_line,
)
from tfgpu_tui.training.launchers import PREFIX_STARTS, split_launcher_prefix
from tfgpu_tui.training.loop_lines import BadLoss, LoopEpoch, LoopEpochs, LossTable, bad_loss, loop_epoch
from tfgpu_tui.training.problems import Problem, ProblemId
from tfgpu_tui.training.readout import RunReadout, TrainingSnapshot
from tfgpu_tui.training.records import (
    AnnouncedCheckpoint,
    CurrentState,
    EndTimeSource,
    EpochRecord,
    Evaluation,
    FinishReason,
    LiveState,
    RunInfo,
    RunSummary,
    format_seconds,
    json_metrics,
)
from tfgpu_tui.training.scheduler import JobEnd, job_end

__all__ = [
    "CurrentState",
    "EpochRecord",
    "Evaluation",
    "FinishReason",
    "RunSummary",
    "TrainingRun",
    "TrainingSnapshot",
    "format_seconds",
    "json_metrics",
]

MAX_CURVE_POINTS = 2000
MAX_VIEW_LINES = 1000
MAX_VIEW_LINE_CHARS = 4000
MAX_CHECKPOINTS = 100
INFINITIES = (math.inf, -math.inf)
AWAIT_VALUES_LINES = 20  # a bar without values waits this many lines for a line that carries them
TPU_FOUND = re.compile(r"Found TPU system|Num TPU Cores:")  # TensorFlow's TPU start-up lines
NO_CUDA_DEVICE = "CUINIT_NO_DEVICE"  # the log signature that means no CUDA device
XLA_COMPILED = "Compiled cluster using XLA"  # TensorFlow's line once XLA compiled something
MAX_RANK_TRACKERS = 1024  # one traceback reader per rank, at most; further ranks share one
OVERFLOW_RANKS = -1
MAX_PROBLEM_LINE = 500


class TrainingRun(RunReadout):
    """Everything parsed from one log so far (owned by one thread; others read `snapshot()`)."""

    current: LiveState
    epochs: list[EpochRecord]
    problems: dict[str, Problem]
    run_infos: list[RunInfo]
    checkpoints: list[AnnouncedCheckpoint]

    def __init__(self, context: EpochStart | None = None, continues: bool = False) -> None:
        """`context`: the epoch in progress where reading starts; `continues`: reading starts inside a fit()
        run that began earlier in the file (so `absorb_history` joins the two)."""
        self.epochs = []
        self.current = LiveState()
        self.problems = {}
        self.curve: list[tuple[int, float]] = []  # (step, loss) within the current epoch
        self.lines: deque[str] = deque(maxlen=MAX_VIEW_LINES)
        self.live = ""  # the unfinished last line, cleaned
        self.fit_run = 0
        self.run_infos = []
        self.checkpoints = []
        self.context_given = context is not None or continues
        self.scanned_lines = 0  # set by a history scan
        self._tracebacks: dict[int | None, known.TracebackTracker] = {}  # one per rank: they interleave
        self._rank: int | None = None  # the rank that printed the line being read (a launcher's prefix)
        self._lead_rank: int | None = None  # the rank whose training output is the run's progress
        self._loss_table = LossTable()
        self._loop_epochs = LoopEpochs()
        self._advisories: dict[str, Problem] = {}  # advisories shown as info, as their signature states them
        self._xla_compiled = False
        self._curve_stride = 1
        self._epoch_open = False  # an `Epoch k/N` header came and its epoch has not ended yet
        self._epoch_total_steps: int | None = None  # the open epoch's step total, once an update showed it
        self._pending_lr: float | None = None  # a learning rate set while the epoch was open
        self._awaiting: str | None = None  # "epoch" / "evaluation": a bar ended without values
        self._awaiting_left = 0
        self._awaiting_bar: Progress | None = None
        self._json_closed = False  # a JsonLinesLogger epoch_end came; its progress line may follow
        self._reclose_ok = False  # the last line closed an epoch: a repeated final update still belongs to it
        self._last_rate: float | None = None
        self._on_tpu = False  # TensorFlow found a TPU system: a failed cuInit is expected
        self._platform: str | None = None  # Linux, WSL2 or Windows, once a line of the log shows it
        if context is not None:
            self._start_epoch(context, new_run=True)

    # ----- feeding -----
    def feed_segment(self, segment: Segment) -> None:
        """One complete segment from the log."""
        text = clean_segment(segment.text)
        self._rank = None
        if text and text[0] in PREFIX_STARTS:
            self._rank, text = split_launcher_prefix(text)
            if self._rank is not None and not self._leads(self._rank, text):
                if segment.line_ends:
                    self._on_other_rank(text, segment.line_number)
                return
        progress = parse_progress(text, segment.line_ends) if text else None
        while progress is not None and progress.trailing:
            glued = parse_progress(progress.trailing, segment.line_ends)
            if glued is None:
                break
            # updates glued together: a capture that dropped Keras' carriage returns (CI transcripts)
            self._on_progress(progress, segment.line_number, committed=True)
            text, progress = progress.trailing, glued
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
        if cleaned[0] in PREFIX_STARTS:
            rank, cleaned = split_launcher_prefix(cleaned)
            if rank is not None and rank != self._lead_rank:
                return
        self.live = cleaned
        progress = parse_progress(cleaned)
        if progress is not None and not progress.final:
            self._on_progress(progress, None, committed=False)

    def feed_file_event(self, event: FileEvent | str) -> None:
        """React to a follower event (truncated, rotated, deleted, opened)."""
        if event == FileEvent.DELETED:
            self._raise(
                Problem(ProblemId.FILE_DELETED, Severity.WARNING, known.DELETED_MESSAGE, known.DELETED_FIX)
            )
        elif event in (FileEvent.TRUNCATED, FileEvent.ROTATED):
            self.problems.pop(ProblemId.FILE_DELETED, None)
            self.lines.append(f"--- log {event}: reading the new content from its start ---")
            self.live = ""

    # ----- handing over -----
    def snapshot(self) -> TrainingSnapshot:
        """An immutable copy for another thread to read (the records themselves are frozen and shared)."""
        return TrainingSnapshot(
            tuple(self.epochs),
            self.current.freeze(),
            MappingProxyType(dict(self.problems)),
            tuple(self.curve),
            tuple(self.lines),
            self.live,
            self.fit_run,
            tuple(self.run_infos),
            tuple(self.checkpoints),
        )

    def absorb_history(self, history: TrainingRun, line_offset: int) -> None:
        """Put the runs, epochs and problems of the file's earlier part (parsed separately) before ours.

        Args:
            history: the run parsed from the start of the file up to where this one began.
            line_offset: lines in that earlier part (our line numbers were counted from its end).
        """
        if self.run_infos and not self.run_infos[0].headerless:
            history._undo_lone_headerless_epoch()  # our first line was an `Epoch` header
        run_offset = max(history.fit_run - (1 if self.context_given else 0), 0)
        self.epochs[:] = [
            *history.epochs,
            *(
                r._replace(fit_run=r.fit_run + run_offset, line_number=_shift(r.line_number, line_offset))
                for r in self.epochs
            ),
        ]
        self.checkpoints[:] = [
            *history.checkpoints,
            *(
                replace(c, fit_run=c.fit_run + run_offset, line_number=_shift(c.line_number, line_offset))
                for c in self.checkpoints
            ),
        ][-MAX_CHECKPOINTS:]
        self._absorb_infos(history, run_offset, line_offset)
        self.fit_run += run_offset
        self._absorb_problems(history, line_offset)
        if self.current.batch_size is None:
            self.current.batch_size = history.current.batch_size

    def _absorb_infos(self, history: TrainingRun, run_offset: int, line_offset: int) -> None:
        older = {info.index: info for info in history.run_infos}
        for info in self.run_infos:
            index = info.index + run_offset
            evaluation = info.evaluation
            if evaluation is not None:
                evaluation = replace(evaluation, line_number=_shift(evaluation.line_number, line_offset))
            earlier = older.get(index)
            if earlier is not None:  # the run the tail started in the middle of
                info = replace(
                    earlier,
                    finish_reason=info.finish_reason or earlier.finish_reason,
                    evaluation=evaluation or earlier.evaluation,
                )
            else:
                info = replace(info, index=index, evaluation=evaluation)
            older[index] = info
        self.run_infos[:] = [older[index] for index in sorted(older)]

    def _absorb_problems(self, history: TrainingRun, line_offset: int) -> None:
        merged = dict(history.problems)
        if self.fit_run > history.fit_run:
            merged.pop(ProblemId.FINISHED, None)
        for key, problem in self.problems.items():
            problem = replace(problem, line_number=_shift(problem.line_number, line_offset))
            if key in merged and key not in (ProblemId.EXCEPTION, ProblemId.FINISHED):
                earlier = merged[key]
                problem = replace(
                    problem,
                    count=problem.count + earlier.count,
                    line_number=earlier.line_number,
                    line=earlier.line,
                )
            merged[key] = problem
        self.problems = merged

    # ----- runs -----
    def _new_run(self, headerless: bool = False) -> None:
        """A fit() call starts: earlier problems that ended a run stay, as warnings about that run."""
        self.fit_run += 1
        self.run_infos.append(RunInfo(self.fit_run, headerless=headerless))
        self.problems.pop(ProblemId.FINISHED, None)
        for key in (ProblemId.EXCEPTION, ProblemId.KILLED):
            problem = self.problems.get(key)
            if problem is not None and problem.severity is Severity.CRITICAL:
                self.problems[key] = replace(
                    problem,
                    severity=Severity.WARNING,
                    message=f"{problem.message} (fit() run {self.fit_run - 1}; a new run followed)",
                )
        self.current.finished = False
        self._pending_lr = None
        self._last_rate = None
        self._awaiting = None

    def _set_info(self, **changes: Any) -> None:
        if not self.run_infos:
            self._new_run()
        self.run_infos[-1] = replace(self.run_infos[-1], **changes)

    def _end_run(self, reason: FinishReason) -> None:
        """Record why the current run ended (the first reason wins; COMPLETED may be refined)."""
        if not self.run_infos:
            return
        info = self.run_infos[-1]
        if info.finish_reason is None or (
            info.finish_reason is FinishReason.COMPLETED and reason is FinishReason.EARLY_STOPPING
        ):
            self.run_infos[-1] = replace(info, finish_reason=reason)
        self.current.eta_seconds = None  # a run that ended has no time left, whatever its last update said
        if reason.normal:
            self._mark_finished()

    def _mark_finished(self) -> None:
        cur = self.current
        cur.finished = True
        cur.eta_seconds = None
        reason = self.finish_reason()
        epochs = self.latest_fit_epochs()
        last = epochs[-1] if epochs and epochs[-1].fit_run == self.fit_run else None
        loss = last.metrics.get("loss") if last else None
        detail = f", final loss {loss:.4g}" if loss is not None else ""
        if reason is FinishReason.EARLY_STOPPING:
            where = (
                f"{last.epoch}/{last.total_epochs}"
                if last and last.total_epochs
                else str(last.epoch if last else "?")
            )
            message = f"Training finished: stopped early by EarlyStopping at epoch {where}{detail}."
        else:
            message = f"Training finished: {last.epoch if last else 0} epochs{detail}."
        self.problems[ProblemId.FINISHED] = Problem(
            ProblemId.FINISHED, Severity.INFO, message, line_number=last.line_number if last else None
        )

    # ----- internals -----
    def _add_line(self, text: str) -> None:
        self.lines.append(text[:MAX_VIEW_LINE_CHARS])
        self.live = ""

    def _start_epoch(self, start: EpochStart, new_run: bool) -> None:
        if new_run:
            self._new_run()
        cur = self.current
        cur.epoch, cur.total_epochs = start.epoch, start.total_epochs
        cur.step, cur.eta_seconds, cur.finished = 0, None, False
        self.curve = []
        self._curve_stride = 1
        self._epoch_open = True
        self._epoch_total_steps = None
        self._awaiting = None
        self._json_closed = False
        self._reclose_ok = False

    def _on_header(self, header: EpochStart) -> None:
        if len(self.epochs) == 1:
            self._undo_lone_headerless_epoch()
        cur = self.current
        previous = cur.epoch
        same_header = (header.epoch, header.total_epochs) == (previous, cur.total_epochs)
        if same_header and self._epoch_open and cur.step == 0:
            return  # the same header again before any step: a callback printing it too, not a new run
        new_run = (
            self.fit_run == 0
            or header.epoch == 1
            or previous is None
            or header.epoch < previous
            or (header.epoch == previous and not self._epoch_open)
            or header.total_epochs != cur.total_epochs
            or self.run_infos[-1].finish_reason is not None
        )
        self._start_epoch(header, new_run)

    def _undo_lone_headerless_epoch(self) -> None:
        """A first bar without `Epoch` header nor validation values, followed by a fit() with headers, was an
        evaluate() before training, not a fit(epochs=1): it is no epoch."""
        last = self.epochs[-1] if self.epochs else None
        if (
            last is None
            or len(self.epochs) != 1
            or not self.latest_info_headerless()
            or any(name.startswith("val_") for name in last.metrics)
        ):
            return
        self.epochs.pop()
        self.run_infos.pop()
        self.fit_run -= 1
        self.problems.pop(ProblemId.FINISHED, None)

    def _on_text(self, text: str, line_number: int | None) -> None:
        header = parse_epoch_header(text)
        if header is not None:
            self._on_header(header)
            return
        record = parse_json_record(text)
        if record is not None:
            self._on_json(record, line_number)
            return
        message = parse_callback_message(text)
        if message is not None:
            self._on_callback_message(message, line_number)
            return
        self._reclose_ok = False
        values = parse_values_line(text)
        if values is not None and self._on_values(values, line_number):
            return
        if self._awaiting:
            self._awaiting_left -= 1
            if self._awaiting_left <= 0:
                self._awaiting = None
        self._on_other_text(text, line_number)

    def _leads(self, rank: int, text: str) -> bool:
        """Whether `rank`'s line is read as the run's progress: the first rank that prints training output
        (an `Epoch` header, a progress bar, a custom loop's epoch marker) leads; the others' lines are read
        for problems only, so interleaved ranks neither mix their progress nor add up their epochs."""
        if self._lead_rank is None and (
            parse_epoch_header(text) or parse_progress(text) is not None or loop_epoch(text) is not None
        ):
            self._lead_rank = rank
        return rank == self._lead_rank

    def _on_other_rank(self, text: str, line_number: int | None) -> None:
        """A line of a rank that does not lead: kept for the view, read for its problems (an error, a kill, a
        NaN loss in its progress or its prints)."""
        self._add_line(text)
        progress = parse_progress(text, True)
        if progress is None:
            self._on_other_text(text, line_number, lead=False)
            return
        loss = progress.metrics.get("loss")
        if loss is not None and is_bad_number(loss):
            self._check_loss(loss, progress.step, line_number)

    def _on_other_text(self, text: str, line_number: int | None, lead: bool = True) -> None:
        key = self._rank if len(self._tracebacks) < MAX_RANK_TRACKERS else OVERFLOW_RANKS
        tracker = self._tracebacks.get(self._rank) or self._tracebacks.get(key)
        if tracker is None:
            tracker = self._tracebacks[key] = known.TracebackTracker()
        exception = tracker.feed(text)
        if exception is not None:
            self._on_exception(exception, line_number)
        end = job_end(text)
        if end is not None or known.is_killed_line(text):
            self._on_killed(end, text, line_number)
            return
        marker = loop_epoch(text) if lead and self.fit_run == 0 else None  # Keras' epochs count where shown
        if marker is not None:
            self._on_loop_epoch(marker)
        bad = bad_loss(text) if exception is None else None
        bad = bad or self._loss_table.feed(text)
        if bad is not None:
            self._on_bad_loss(bad, text, line_number)
        if marker is not None:
            return  # a custom loop's own progress line: no TensorFlow message in it
        if XLA_COMPILED in text:
            self._xla_compiled = True
        if TPU_FOUND.search(text):  # a TPU host has no CUDA device, and needs none
            self._on_tpu = True
            self.problems.pop(NO_CUDA_DEVICE, None)
        self._platform = platform_hint(text) or self._platform
        diagnosis = diagnose_line(text, line_number, platform_name=self._platform)
        if diagnosis is None or (self._on_tpu and diagnosis.id == NO_CUDA_DEVICE):
            return
        problem = known.from_diagnosis(diagnosis)
        if exception is None and known.is_advisory(diagnosis.id, text):
            self._advisories.setdefault(diagnosis.id, problem)
            problem = known.as_advisory(problem)
        self._raise(problem)

    def _on_killed(self, end: JobEnd | None, text: str, line_number: int | None) -> None:
        """The shell's ``Killed``, or a scheduler's end of the job (which names what a plain kill did not)."""
        if end is None:
            problem = Problem(
                ProblemId.KILLED,
                Severity.CRITICAL,
                "The training process was killed.",
                known.KILLED_FIX,
                line_number,
                text[:MAX_PROBLEM_LINE],
            )
        else:
            problem = Problem(
                ProblemId.KILLED,
                Severity.CRITICAL,
                end.message,
                end.fix,
                line_number,
                text[:MAX_PROBLEM_LINE],
                title=end.title,
                rank=end.rank,
            )
        existing = self.problems.get(ProblemId.KILLED)
        if existing is not None and existing.severity is Severity.CRITICAL:
            named = end is not None and existing.title == known.title_for(ProblemId.KILLED)
            kept = problem if named else existing  # a scheduler's reason replaces a plain "Killed"
            self.problems[ProblemId.KILLED] = replace(kept, count=existing.count + 1)
        else:
            self._raise(problem)
        if not self.current.finished:
            self._end_run(FinishReason.KILLED)

    def _on_exception(self, exception: str, line_number: int | None) -> None:
        """A traceback ended: the run stops with its error (another rank's error is listed as critical without
        ending the leading rank's run). When another rank failed first in this run, its error stays the
        cause (the others then fail in their collectives); this one is counted."""
        existing = self.problems.get(ProblemId.EXCEPTION)
        if (
            existing is not None
            and existing.severity is Severity.CRITICAL
            and existing.rank is not None
            and existing.rank != self._rank
        ):
            self.problems[ProblemId.EXCEPTION] = replace(existing, count=existing.count + 1)
            return
        self.problems[ProblemId.EXCEPTION] = self._exception_problem(exception, line_number)
        leading = self._rank is None or self._rank == self._lead_rank
        if (
            leading and not self.current.finished
        ):  # another rank's error is listed; the run read is the lead's
            self._end_run(FinishReason.EXCEPTION)

    def _on_bad_loss(self, bad: BadLoss, text: str, line_number: int | None) -> None:
        """A NaN or infinite loss a custom loop printed (a line, a table row, check_numerics)."""
        cur = self.current
        if bad.where == "check_numerics":
            what = f"tf.debugging.check_numerics found {bad.value} values" + (
                f" ({bad.detail})" if bad.detail else ""
            )
        else:
            what = f"The {bad.name} is {bad.value}"
        at = f" at epoch {cur.epoch}" if cur.epoch is not None else ""
        at += f" step {cur.step}" if cur.step else ""
        message = f"{what}{at}."
        self._raise(
            Problem(
                ProblemId.NAN_LOSS,
                Severity.CRITICAL,
                message,
                known.NAN_FIX,
                line_number,
                text[:MAX_PROBLEM_LINE],
            )
        )

    def _on_loop_epoch(self, marker: LoopEpoch) -> None:
        """A custom loop's epoch marker sets the current epoch (and step) while its numbering is clear."""
        cur = self.current
        if not self._loop_epochs.accept(marker):
            cur.epoch = cur.total_epochs = None
            return
        cur.epoch, cur.total_epochs = marker.epoch, marker.total
        if marker.step is not None:
            cur.step, cur.total_steps = marker.step, marker.total_steps

    def _exception_problem(self, exception: str, line_number: int | None) -> Problem:
        """The error a traceback ended with, said about this run: where training was, and what to do."""
        error = known.error_name(exception).rstrip(".")  # the sentence ends with its own full stop
        cur = self.current
        oom = known.is_oom_exception(exception)
        what = "ran out of GPU memory" if oom else "stopped"
        if cur.finished:
            message = f"Your script failed after training finished, with {error}."
        elif cur.epoch is None and cur.step is None:
            message = f"Your script failed before training started, with {error}."
        else:
            at = f"epoch {cur.epoch or '?'}/{cur.total_epochs or '?'}"
            at += f", step {cur.step}/{cur.total_steps or '?'}" if cur.step else ""
            kind = error.split(":", 1)[0]  # the OOM's detail (shape, device) is its own problem's sentence
            message = f"Training {what} at {at} " + (f"({kind})." if oom else f"with {error}.")
        diagnosis = diagnose_line(exception, line_number)
        if oom:
            fix = known.oom_fix()
        elif diagnosis is not None:
            fix = diagnosis.fix
        else:
            fix = known.EXCEPTION_FIX.format(line=line_number or "?")
        title = known.OOM_TITLE if oom else ""
        advisory = self._advisory_behind(exception)
        if advisory is not None:
            title, fix = advisory.title, advisory.fix
            message = f"{message} {advisory.message}"
        elif known.CHECK_NUMERICS_ERROR in exception:
            title, fix = known.title_for(ProblemId.NAN_LOSS), known.NAN_FIX
        return Problem(
            ProblemId.EXCEPTION,
            Severity.CRITICAL,
            message,
            fix,
            line_number,
            exception,
            title=title,
            rank=self._rank,
        )

    def _advisory_behind(self, exception: str) -> Problem | None:
        """The advisory the run failed for, if any (then no longer an advisory: the error is the problem).
        ptxas: only when XLA compiled (``Compiled cluster using XLA``, or the error names XLA) and the error
        is about compiling."""
        if known.PTXAS not in self._advisories or not known.COMPILE_ERROR.search(exception):
            return None
        if not (self._xla_compiled or known.XLA_ERROR.search(exception)):
            return None
        self.problems.pop(known.PTXAS, None)
        return self._advisories[known.PTXAS]

    def _on_callback_message(self, message, line_number: int | None) -> None:
        if message.kind is MessageKind.EARLY_STOPPING:
            self._end_run(FinishReason.EARLY_STOPPING)
        elif message.kind is MessageKind.TERMINATED_ON_NAN:
            self._end_run(FinishReason.TERMINATED_ON_NAN)
        elif message.kind is MessageKind.LR_CHANGE:
            self._on_lr_change(message.learning_rate)
        elif message.kind is MessageKind.CHECKPOINT:
            epoch = self.current.epoch
            self.checkpoints.append(
                AnnouncedCheckpoint(message.path, max(self.fit_run, 1), epoch, line_number)
            )
            del self.checkpoints[:-MAX_CHECKPOINTS]

    def _on_lr_change(self, rate: float | None) -> None:
        """ReduceLROnPlateau prints at an epoch's end (before its final line in tf.keras 2.x and Keras 3,
        after it in standalone Keras); LearningRateScheduler at an epoch's start: either way the epoch of
        the last header. A rate equal to the last one set is no change."""
        if rate == self._last_rate:
            return
        self._last_rate = rate
        last = self.epochs[-1] if self.epochs else None
        if self._epoch_open or last is None or last.fit_run != self.fit_run:
            self._pending_lr = rate
        else:
            self.epochs[-1] = last._replace(lr_change=rate)

    def _raise(self, problem: Problem) -> None:
        if self._rank is not None and problem.rank is None:
            problem = replace(problem, rank=self._rank)
        existing = self.problems.get(problem.id)
        if existing is None:
            self.problems[problem.id] = problem
        else:
            self.problems[problem.id] = replace(existing, count=existing.count + 1)

    def _on_progress(self, progress: Progress, line_number: int | None, committed: bool) -> None:
        self._awaiting = None
        if progress.final and committed:
            self._on_final(progress, line_number)
            return
        total = progress.total_steps
        if self._epoch_open:
            known_total = self._epoch_total_steps
            if known_total is None:
                self._epoch_total_steps = total
            elif total != known_total:
                return  # an evaluate() bar inside the epoch (a callback's)
        elif self.epochs or self.fit_run > 1:
            return  # an evaluate()/predict() bar after the epoch, before the next `Epoch` line
        cur = self.current
        cur.step, cur.total_steps = progress.step, total
        if progress.step_seconds is not None and progress.per == "step":
            cur.step_seconds = progress.step_seconds
        cur.eta_seconds = progress.eta_seconds
        metrics = progress.metrics
        if metrics:
            cur.metrics = metrics  # a fresh dict per update, never changed afterwards
            loss = metrics.get("loss")
            if committed and loss is not None:
                if loss != loss or loss in INFINITIES:
                    self._check_loss(loss, progress.step, line_number)
                else:
                    self._add_curve_point(progress.step, loss)

    def _check_loss(self, loss: float, step: int | None, line_number: int | None) -> None:
        if is_bad_number(loss):
            self._raise(
                Problem(
                    ProblemId.NAN_LOSS,
                    Severity.CRITICAL,
                    f"The loss is {loss} at epoch {self.current.epoch or '?'} step {step}.",
                    known.NAN_FIX,
                    line_number,
                )
            )

    def _loss_recovered(self, epoch: int) -> None:
        """An epoch ended with a finite loss after a NaN one: still worth a look, no longer the run's end."""
        problem = self.problems.get(ProblemId.NAN_LOSS)
        if problem is not None and problem.severity is Severity.CRITICAL:
            self.problems[ProblemId.NAN_LOSS] = replace(
                problem,
                severity=Severity.WARNING,
                message=f"{problem.message} The loss was finite again at the end of epoch {epoch}.",
            )

    def _on_final(self, progress: Progress, line_number: int | None) -> None:
        """A bar's last update: the open epoch's end, a headerless fit(epochs=1), or an evaluation."""
        values = (
            progress.metrics,
            progress.elapsed_seconds,
            progress.step_seconds,
            progress.step,
            line_number,
        )
        if self._epoch_open and not self._json_closed:
            known_total = self._epoch_total_steps
            if known_total is None or progress.total_steps == known_total or has_validation(progress.metrics):
                self._close_epoch(*values)
                if not progress.metrics:
                    self._await("epoch", progress)
                return
        validating = has_validation(progress.metrics)
        if self._json_closed:
            self._json_closed = False
            return  # the exact JsonLinesLogger record of this epoch came first
        last = self.epochs[-1] if self.epochs else None
        if (
            self._reclose_ok
            and last is not None
            and last.steps == progress.step
            and last.fit_run == self.fit_run
            and (validating or not has_validation(last.metrics))  # its own repeat keeps its val_ values
        ):
            if self._pending_lr is None:
                self._pending_lr = last.lr_change
            self._close_epoch(*values)  # Keras 3 without \r (Windows): N/N twice, the second one final
            return
        if self._epoch_open:
            if progress.metrics:  # evaluate() called by a callback inside the epoch
                self._set_info(
                    evaluation=Evaluation(
                        progress.metrics, progress.step, progress.elapsed_seconds, line_number
                    )
                )
            return
        if not progress.metrics:
            self._await("evaluation", progress)  # predict(), or evaluate() printing its values later
            return
        if validating and last is not None and self._took_evaluation_for_epoch(last):
            self.epochs.pop()  # an evaluate() bar (a callback's, inside the epoch) ended it: it was no epoch
            self._set_info(evaluation=Evaluation(last.metrics, last.steps, last.seconds, last.line_number))
            self._pending_lr = last.lr_change
            self._close_epoch(*values)
            return
        info = self.latest_info()
        repeat = (
            info is not None
            and info.headerless
            and last is not None
            and last.fit_run == self.fit_run
            and last.steps == progress.step
        )
        if validating or (not self.epochs and self.fit_run <= 1) or repeat:
            self._new_run(headerless=True)  # Keras prints no `Epoch 1/1` for fit(epochs=1)
            self._start_epoch(EpochStart(1, 1), new_run=False)
            self._close_epoch(*values)
            return
        self._set_info(
            evaluation=Evaluation(progress.metrics, progress.step, progress.elapsed_seconds, line_number)
        )

    def _took_evaluation_for_epoch(self, last: EpochRecord) -> bool:
        """Whether `last` closed the current epoch without validation values (no header came since): a
        validating final update for the same epoch shows it was an evaluate() bar."""
        return (
            last.fit_run == self.fit_run
            and last.epoch == self.current.epoch
            and last.source == "progress"
            and not self.latest_info_headerless()
            and not any(name.startswith("val_") for name in last.metrics)
        )

    def latest_info_headerless(self) -> bool:
        info = self.latest_info()
        return info is not None and info.headerless

    def _await(self, kind: str, bar: Progress) -> None:
        self._awaiting, self._awaiting_left, self._awaiting_bar = kind, AWAIT_VALUES_LINES, bar

    def _on_values(self, values: ValuesLine, line_number: int | None) -> bool:
        """Metrics on a line of their own: an old one-line epoch, or the values of a bar that had none."""
        # an epoch's values: with its time (Keras 1), or training and validation values together; a line of
        # validation values alone is someone's print (a callback listing metrics one a line), not an epoch
        if self._epoch_open and (
            values.elapsed_seconds is not None or (values.has_validation and values.has_training)
        ):
            self._close_epoch(values.metrics, values.elapsed_seconds, values.step_seconds, None, line_number)
            return True
        kind, bar = self._awaiting, self._awaiting_bar
        if kind is None or bar is None:
            return False
        self._awaiting = None
        if kind == "epoch" and self.epochs:
            last = self.epochs[-1]
            self.epochs[-1] = last._replace(metrics=MappingProxyType({**last.metrics, **values.metrics}))
            self.current.metrics = dict(self.epochs[-1].metrics)
            if self.current.finished:
                self._mark_finished()
        else:
            seconds = bar.elapsed_seconds if values.elapsed_seconds is None else values.elapsed_seconds
            self._set_info(evaluation=Evaluation(values.metrics, bar.step, seconds, line_number))
        return True

    def _add_curve_point(self, step: int, loss: float) -> None:
        if self.curve and step <= self.curve[-1][0]:
            return
        if step % self._curve_stride:
            return
        self.curve.append((step, loss))
        if len(self.curve) > MAX_CURVE_POINTS:
            self._curve_stride *= 2
            self.curve = [p for p in self.curve if p[0] % self._curve_stride == 0]

    def _close_epoch(
        self,
        metrics: dict[str, float],
        seconds: float | None,
        step_seconds: float | None,
        steps: int | None,
        line_number: int | None,
    ) -> None:
        cur = self.current
        if self.fit_run == 0:
            self._new_run()
        previous = self.epochs[-1] if self.epochs and self.epochs[-1].fit_run == self.fit_run else None
        epoch = cur.epoch if cur.epoch is not None else (previous.epoch + 1 if previous else 1)
        if previous is not None and previous.epoch == epoch:
            if previous.source == "json":
                self._epoch_open = False
                return  # the exact record came first
            self.epochs.pop()
        loss = metrics.get("loss")
        if loss is not None and (loss != loss or loss in INFINITIES):
            self._check_loss(loss, steps, line_number)
        elif loss is not None:
            self._loss_recovered(epoch)
        record = EpochRecord(
            epoch,
            cur.total_epochs,
            MappingProxyType(metrics) if type(metrics) is dict else metrics,  # ours alone: no copy needed
            seconds,
            step_seconds,
            steps,
            self.fit_run,
            line_number,
            lr_change=self._pending_lr,
        )
        self._pending_lr = None
        self._append_epoch(record)
        self._reclose_ok = steps is not None

    def _append_epoch(self, record: EpochRecord) -> None:
        self.epochs.append(record)
        self._epoch_open = False
        cur = self.current
        cur.epoch = record.epoch
        cur.metrics = record.metrics
        if record.steps is not None:
            cur.step = cur.total_steps = record.steps
        cur.eta_seconds = 0.0
        if record.total_epochs is not None and record.epoch >= record.total_epochs:
            self._end_run(FinishReason.COMPLETED)
        elif self.run_infos and self.run_infos[-1].finish_reason is FinishReason.EARLY_STOPPING:
            self._mark_finished()  # Keras 1 printed "early stopping" before the last epoch's line

    def _on_json(self, record: JsonRecord, line_number: int | None) -> None:
        data = record.data
        cur = self.current
        if record.event == "train_begin":
            self._new_run()
            cur.total_epochs = data.get("epochs")
            cur.total_steps = data.get("steps")
            cur.batch_size = data.get("batch_size")
            cur.epoch, cur.step, cur.finished = None, 0, False
        elif record.event == "epoch_begin":
            self._start_epoch(
                EpochStart(int(data["epoch"]), int(data.get("epochs") or 0)), new_run=self.fit_run == 0
            )
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
                self._new_run()
            epoch = int(data["epoch"])
            if self.epochs and self.epochs[-1].fit_run == self.fit_run and self.epochs[-1].epoch == epoch:
                self.epochs.pop()
            self._append_epoch(
                EpochRecord(
                    epoch,
                    data.get("epochs"),
                    MappingProxyType(_numbers(data.get("logs"))),
                    data.get("seconds"),
                    data.get("step_seconds"),
                    data.get("steps"),
                    self.fit_run,
                    line_number,
                    "json",
                    **_logged_end(data.get("time")),
                    lr_change=self._pending_lr,
                )
            )
            self._pending_lr = None
            self._json_closed = True


def has_validation(metrics: Mapping[str, float]) -> bool:
    """Whether the metrics hold validation values (``val_...``): an evaluate() bar never does."""
    return any(name.startswith("val_") for name in metrics)


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


def _logged_end(when: object) -> dict[str, Any]:
    """``ended_at`` and its source for a record that carries its time (JsonLinesLogger's ``time``)."""
    if isinstance(when, (int, float)) and not isinstance(when, bool) and math.isfinite(when):
        return {"ended_at": float(when), "ended_at_source": EndTimeSource.LOG}
    return {}


def _shift(line_number: int | None, offset: int) -> int | None:
    return None if line_number is None else line_number + offset
