"""Reading a parsed training log: problems, stall, ETA, runs, the JSON report. Shared by the live
`TrainingRun` and its frozen `TrainingSnapshot` (the copy another thread reads)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tfgpu_tui.alerts import Severity
from tfgpu_tui.training import problems as known
from tfgpu_tui.training.problems import Problem, ProblemId
from tfgpu_tui.training.records import (
    AnnouncedCheckpoint,
    CurrentState,
    EpochRecord,
    FinishReason,
    LiveState,
    RunInfo,
    RunSummary,
    format_seconds,
)

if TYPE_CHECKING:
    from tfgpu_tui.proc.log_writers import LogWriter

STALL_MIN_SECONDS = 60.0
STALL_STEP_FACTOR = 50.0
STALL_EPOCH_FACTOR = 3.0
#: Known-signature ids that report running out of memory: the allocator's warning before one is its prelude.
OOM_PROBLEMS = frozenset({"OOM_TENSOR", "CUDA_OOM_ALLOC"})
OOM_PRELUDE = "BFC_RAN_OUT"
STOPPED_BY = {
    FinishReason.EXCEPTION: ProblemId.EXCEPTION,
    FinishReason.KILLED: ProblemId.KILLED,
    FinishReason.TERMINATED_ON_NAN: ProblemId.NAN_LOSS,
}


def lower_first(sentence: str) -> str:
    """A sentence to follow a colon: its first letter in lower case (``Your run ...`` -> ``your run ...``)."""
    return sentence[:1].lower() + sentence[1:]


def one_problem_per_cause(found: list[Problem]) -> list[Problem]:
    """The error that stopped the run absorbs the known message that said the same thing: an out-of-memory
    error and the allocation it failed (its detail joins the error's sentence), a check_numerics error and
    the NaN found by check_numerics."""
    exception = next((p for p in found if p.id == ProblemId.EXCEPTION), None)
    if exception is None:
        return found
    absorbed: set[str] = set()
    if known.is_oom_exception(exception.line):
        for problem in found:
            if str(problem.id) in OOM_PROBLEMS:
                absorbed.add(str(problem.id))
                exception = replace(exception, message=f"{exception.message} {problem.message}")
                break
    if known.CHECK_NUMERICS_ERROR in exception.line:
        nan = next((p for p in found if p.id == ProblemId.NAN_LOSS), None)
        if nan is not None and known.CHECK_NUMERICS_ERROR in nan.line:
            absorbed.add(str(nan.id))
    if not absorbed:
        return found
    return [exception if p.id == ProblemId.EXCEPTION else p for p in found if str(p.id) not in absorbed]


class RunReadout:
    """Derived views over: epochs, current, problems, curve, lines, live, fit_run, run_infos, checkpoints."""

    epochs: Sequence[EpochRecord]
    current: LiveState | CurrentState
    problems: Mapping[str, Problem]
    curve: Sequence[tuple[int, float]]
    lines: Sequence[str]
    live: str
    fit_run: int
    run_infos: Sequence[RunInfo]
    checkpoints: Sequence[AnnouncedCheckpoint]

    def stall_threshold(self) -> float:
        """Idle seconds after which a running training counts as stalled."""
        threshold = STALL_MIN_SECONDS
        if self.current.step_seconds:
            threshold = max(threshold, STALL_STEP_FACTOR * self.current.step_seconds)
        durations = [e.seconds for e in self.epochs[-3:] if e.seconds]
        if durations and self._is_epoch_granular():
            threshold = max(threshold, STALL_EPOCH_FACTOR * max(durations))
        return threshold

    def _is_epoch_granular(self) -> bool:
        return self.current.step is None or self.current.step == self.current.total_steps

    def latest_info(self) -> RunInfo | None:
        """The last fit() run's info (None before any)."""
        return self.run_infos[-1] if self.run_infos else None

    def finish_reason(self) -> FinishReason | None:
        """Why the last fit() run ended; None while it runs."""
        info = self.latest_info()
        return info.finish_reason if info else None

    def stall_problem(self, idle_seconds: float, writer: LogWriter | None = None) -> Problem | None:
        """A STALL problem when the log has not grown for much longer than a step takes, or at once when the
        process writing it (`writer`, when known) has exited before training finished; None otherwise."""
        if self.current.finished or self.current.epoch is None and self.current.step is None:
            return None
        if self.finish_reason() is not None:
            return None
        if any(p in self.problems for p in (ProblemId.KILLED, ProblemId.EXCEPTION, ProblemId.FILE_DELETED)):
            return None
        silent = format_seconds(idle_seconds)
        if writer is not None and not writer.alive:
            message = (
                f"The writer (PID {writer.pid}) {writer.state} before training finished; "
                f"no new output for {silent}."
            )
            return Problem(ProblemId.STALL, Severity.WARNING, message, known.STALL_FIX)
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
        return Problem(ProblemId.STALL, Severity.WARNING, message, known.STALL_FIX)

    def problem_list(
        self, idle_seconds: float | None = None, writer: LogWriter | None = None
    ) -> list[Problem]:
        """Problems, most severe first, then by line; with the stall check when idle time is given. One
        cause is one problem (`one_problem_per_cause`), and the allocator's "ran out of memory" warning is
        left out when a real out-of-memory error followed it (the error is the problem)."""
        found = one_problem_per_cause(list(self.problems.values()))
        if self.ran_out_of_memory():
            found = [p for p in found if p.id != OOM_PRELUDE]
        stall = self.stall_problem(idle_seconds, writer) if idle_seconds is not None else None
        if stall:
            found.append(stall)
        return sorted(found, key=lambda p: (-p.severity, p.line_number or 0))

    def ran_out_of_memory(self) -> bool:
        """Whether the log reports a real out-of-memory error (not only the allocator's warning)."""
        exception = self.problems.get(ProblemId.EXCEPTION)
        oom_exception = exception is not None and known.is_oom_exception(exception.line)
        return oom_exception or any(key in self.problems for key in OOM_PROBLEMS)

    def stop_reason(self) -> str:
        """Why the last run stopped early, in a few words for a status line (the out-of-memory detail with
        the tensor's shape when the log gives it); "" when it did not."""
        stopped = self.stopped_by()
        if stopped is None:
            return ""
        if stopped.id == ProblemId.EXCEPTION:
            oom = next((self.problems[key] for key in OOM_PROBLEMS if key in self.problems), None)
            if oom is not None and known.is_oom_exception(stopped.line):
                return lower_first(oom.message.rstrip("."))
            return known.error_name(stopped.line)
        return lower_first(stopped.message.rstrip("."))

    def stopped_by(self) -> Problem | None:
        """The problem that ended the last fit() run early (an exception, the OOM killer, NaN), if any."""
        reason = self.finish_reason()
        key = STOPPED_BY.get(reason) if reason is not None else None
        return None if key is None else self.problems.get(key)

    def latest_fit_epochs(self) -> list[EpochRecord]:
        """Epochs of the last fit() call in the file."""
        last = self.epochs[-1].fit_run if self.epochs else 0
        found = []
        for record in reversed(self.epochs):
            if record.fit_run != last:
                break
            found.append(record)
        return found[::-1]

    def runs(self) -> list[RunSummary]:
        """Every fit() run in the file, oldest first."""
        grouped: dict[int, list[EpochRecord]] = {}
        for record in self.epochs:
            grouped.setdefault(record.fit_run, []).append(record)
        infos = {info.index: info for info in self.run_infos}
        indexes = sorted(set(grouped) | set(infos))
        return [
            RunSummary(
                index,
                tuple(grouped.get(index, ())),
                infos[index].finish_reason if index in infos else None,
                infos[index].evaluation if index in infos else None,
            )
            for index in indexes
        ]

    def newest_checkpoint(self) -> AnnouncedCheckpoint | None:
        """The checkpoint the log announced last."""
        return self.checkpoints[-1] if self.checkpoints else None

    def training_eta_seconds(self) -> float | None:
        """Time left for the whole fit(): this epoch's ETA plus the remaining epochs at the mean duration."""
        cur = self.current
        if cur.finished or cur.epoch is None or not cur.total_epochs:
            return None
        if self.stopped_by() is not None or self.finish_reason() is not None:
            return None
        durations = [e.seconds for e in self.latest_fit_epochs() if e.seconds]
        if not durations:
            return cur.eta_seconds
        return (cur.eta_seconds or 0.0) + (cur.total_epochs - cur.epoch) * sum(durations) / len(durations)

    def view_lines(self) -> list[str]:
        """The clean view: the last lines as a terminal would show them, the live line last."""
        return [*self.lines, self.live] if self.live else list(self.lines)

    def as_dict(self, idle_seconds: float | None = None) -> dict[str, object]:
        """The JSON of ``tfgpu-tui log --json``: epochs (of the last run), runs, current, problems."""
        newest = self.newest_checkpoint()
        return {
            "epochs": [e.as_dict() for e in self.latest_fit_epochs()],
            "runs": [run.as_dict() for run in self.runs()],
            "current": self.current.as_dict(),
            "training_eta_seconds": self.training_eta_seconds(),
            "announced_checkpoint": None if newest is None else newest.as_dict(),
            "problems": [p.as_dict() for p in self.problem_list(idle_seconds)],
        }


@dataclass(frozen=True)
class TrainingSnapshot(RunReadout):
    """An immutable copy of a `TrainingRun` for another thread (the UI) to read."""

    epochs: tuple[EpochRecord, ...]
    current: CurrentState
    problems: Mapping[str, Problem]
    curve: tuple[tuple[int, float], ...]
    lines: tuple[str, ...]
    live: str
    fit_run: int
    run_infos: tuple[RunInfo, ...]
    checkpoints: tuple[AnnouncedCheckpoint, ...]
