"""A followed log's state at one moment, and its one problem list.

`problems_of` is the only place that decides which problems a log has: the run's own (tracebacks, NaN,
the OOM killer, ...), the stall or dead-writer check while the file is open, and the no-checkpoint warning.
`log --json`, the Training tab, the exporter's series and notify's events all read `LogState.problems`, so
they name the same problems for the same log.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfgpu_tui.proc.log_writers import LogWriter, StdioWalk
from tfgpu_tui.training.follow import FileEvent, FileState
from tfgpu_tui.training.oversight import LogOversight, OversightState
from tfgpu_tui.training.problems import Problem
from tfgpu_tui.training.readout import RunReadout, TrainingSnapshot
from tfgpu_tui.training.watch import LogWatch


def problems_of(
    run: RunReadout, file_state: FileState, idle_seconds: float, around: OversightState
) -> tuple[Problem, ...]:
    """The log's problems, most severe first: the run's own, the stall check (only while the file is open:
    a deleted or missing file says so itself) with the writer when known, and the no-checkpoint warning."""
    idle = idle_seconds if file_state is FileState.OPEN else None
    return (*run.problem_list(idle, around.writer), *around.problems())


@dataclass(frozen=True)
class LogState:
    """One followed log at one moment (immutable: safe to hand to another thread).

    Attributes:
        path: the log.
        run: an independent copy of its parsed run.
        file_state: waiting for the file, open, deleted ...
        idle_seconds: seconds since the file last grew.
        backfill: (offset, end) while its earlier part is still scanned, else None.
        around: its writer and checkpoints.
        problems: `problems_of` for this moment.
        events: the file events (rotated, truncated, deleted ...) since the previous state of this log.
    """

    path: Path
    run: TrainingSnapshot
    file_state: FileState
    idle_seconds: float
    backfill: tuple[int, int] | None
    around: OversightState
    problems: tuple[Problem, ...]
    events: tuple[FileEvent, ...] = ()

    @classmethod
    def judged(
        cls,
        path: Path,
        run: TrainingSnapshot,
        file_state: FileState,
        idle_seconds: float,
        around: OversightState,
        backfill: tuple[int, int] | None = None,
        events: tuple[FileEvent, ...] = (),
    ) -> LogState:
        """The state with its problems from `problems_of`."""
        problems = problems_of(run, file_state, idle_seconds, around)
        return cls(path, run, file_state, idle_seconds, backfill, around, problems, events)

    @property
    def writer(self) -> LogWriter | None:
        """The process writing the log, when known."""
        return self.around.writer

    def problem(self, *ids: str) -> Problem | None:
        """The first of its problems with one of these ids, None when none."""
        return next((p for p in self.problems if p.id in ids), None)

    def as_dict(self) -> dict[str, object]:
        """The JSON of ``tfgpu-tui log --json``: the run's keys with these problems, ``writer``,
        ``checkpoints``."""
        data = self.run.as_dict()
        data["problems"] = [problem.as_dict() for problem in self.problems]
        data["writer"] = self.around.writer.as_dict() if self.around.writer else None
        data["checkpoints"] = self.around.checkpoints_dict()
        return data


def state_of(
    watch: LogWatch,
    oversight: LogOversight,
    events: tuple[FileEvent, ...] = (),
    walk: StdioWalk | None = None,
) -> LogState:
    """The state of a followed log now (its oversight refreshed where due; `walk`: see `LogOversight`)."""
    around = oversight.update(watch, walk)
    run = watch.run.snapshot()
    idle = watch.idle_seconds()
    backfill = None if watch.backfill_done else (watch.backfill_offset, watch.backfill_end)
    return LogState.judged(watch.path, run, watch.state, idle, around, backfill, events)
