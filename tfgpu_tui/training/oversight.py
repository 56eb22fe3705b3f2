"""Around a followed log: which process writes it (alive or gone) and the checkpoints the run leaves.

`LogOversight.update(watch)` is called from the follower's thread after each poll; it re-checks the writer
every few seconds (one `/proc` look-up) and looks for checkpoints every 15 s (a bounded directory walk), so
it stays cheap enough to run beside the follower.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfgpu_tui.alerts import Severity
from tfgpu_tui.proc.log_writers import LogWriter, StdioWalk, refresh_writer, writer_for_pid
from tfgpu_tui.training.checkpoints import (
    CHECKPOINT_FIX,
    Checkpoint,
    CheckpointPolicy,
    checkpoint_status,
    find_checkpoints,
)
from tfgpu_tui.training.problems import Problem, ProblemId
from tfgpu_tui.training.records import AnnouncedCheckpoint, format_seconds
from tfgpu_tui.training.watch import LogWatch

WRITER_REFRESH_SECONDS = 2.0
WRITER_SEARCH_SECONDS = 10.0
CHECKPOINT_SCAN_SECONDS = 15.0


@dataclass(frozen=True)
class OversightState:
    """What is known around the log: its writer and its checkpoints (with the warning, "" when none)."""

    writer: LogWriter | None
    newest_checkpoint: Checkpoint | None
    checkpoint_count: int
    checkpoint_roots: tuple[Path, ...]
    checkpoint_warning: str
    scanned: bool  # checkpoints were looked for at least once
    announced: AnnouncedCheckpoint | None = None  # the newest checkpoint the log itself announced

    def problems(self) -> list[Problem]:
        """The no-checkpoint warning as a problem (empty when none is due)."""
        if not self.checkpoint_warning:
            return []
        newest = self.newest_checkpoint
        where = f" Newest: {newest.path} ({format_seconds(newest.age_seconds())} old)." if newest else ""
        message = f"No recent checkpoint: {self.checkpoint_warning}.{where}"
        return [Problem(ProblemId.NO_CHECKPOINT, Severity.WARNING, message, CHECKPOINT_FIX)]

    def checkpoints_dict(self) -> dict[str, object]:
        """JSON-ready: newest (path, modified, age_seconds, size_bytes) or null, count, roots, warning."""
        newest = self.newest_checkpoint
        return {
            "newest": None
            if newest is None
            else {
                "path": str(newest.path),
                "modified": newest.modified,
                "age_seconds": round(newest.age_seconds(), 1),
                "size_bytes": newest.size_bytes,
            },
            "count": self.checkpoint_count,
            "roots": [str(root) for root in self.checkpoint_roots],
            "warning": self.checkpoint_warning,
            "announced": None if self.announced is None else self.announced.as_dict(),
        }


class LogOversight:
    """Keeps track of a log's writer and checkpoints.

    Args:
        path: the followed log.
        checkpoints_dir: where checkpoints are (``--checkpoints``); None to look next to the log and under the
            writer's working directory.
        policy: when a missing checkpoint deserves a warning.
        writer_pid: the writer when the caller knows it (the Monitor's selected process).
        find_writer: whether to search for the writer (False for the demo's in-process writer thread).
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        path: Path,
        checkpoints_dir: Path | None = None,
        policy: CheckpointPolicy | None = None,
        writer_pid: int | None = None,
        find_writer: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.checkpoints_dir = checkpoints_dir
        self.policy = policy or CheckpointPolicy()
        self.find_writer = find_writer
        self.clock = clock
        self.writer: LogWriter | None = writer_for_pid(writer_pid) if writer_pid is not None else None
        self.checkpoints: list[Checkpoint] = []
        self.scanned = False
        self._next_writer_check = clock() + WRITER_REFRESH_SECONDS
        self._next_writer_search = clock()
        self._next_scan = clock()

    def roots(self) -> tuple[Path, ...]:
        """Where checkpoints are looked for."""
        if self.checkpoints_dir is not None:
            return (Path(self.checkpoints_dir),)
        roots = [self.path.expanduser().absolute().parent]
        if self.writer is not None and self.writer.cwd is not None and self.writer.cwd not in roots:
            roots.append(self.writer.cwd)
        return tuple(roots)

    def update(self, watch: LogWatch, walk: StdioWalk | None = None) -> OversightState:
        """Refresh what is due (writer, checkpoints) and return the state; a writer is searched for in
        `walk` (shared by the logs of one round), else in a walk of its own."""
        now = self.clock()
        if self._should_search(watch, now):
            found = (walk or StdioWalk()).writer_of(self.path)
            self._next_writer_search = now + WRITER_SEARCH_SECONDS
            if found is not None:
                self.writer = found
                self._next_scan = now  # its working directory may be a new root
        elif self.writer is not None and self.writer.alive and now >= self._next_writer_check:
            self.writer = refresh_writer(self.writer)
            self._next_writer_check = now + WRITER_REFRESH_SECONDS
        if now >= self._next_scan:
            self.checkpoints = find_checkpoints(self.roots())
            self.scanned = True
            self._next_scan = now + CHECKPOINT_SCAN_SECONDS
        return self.state(watch)

    def _should_search(self, watch: LogWatch, now: float) -> bool:
        """Search when no writer is known, or when the known one is gone but the file still grows (a new
        run appends to the same log)."""
        if not self.find_writer or now < self._next_writer_search:
            return False
        return self.writer is None or not self.writer.alive and watch.idle_seconds() < WRITER_SEARCH_SECONDS

    def announced_checkpoint(self, watch: LogWatch, announced: AnnouncedCheckpoint) -> Checkpoint:
        """A checkpoint the log announced: the file when it can be found (relative paths are the writer's),
        else dated by the end of the epoch that announced it (or the log's last growth)."""
        path = Path(announced.path).expanduser()
        bases = [] if path.is_absolute() else [r for r in self.roots()]
        for candidate in [path] if path.is_absolute() else [base / path for base in bases]:
            try:
                stat = os.stat(candidate)
            except (OSError, ValueError):
                continue
            return Checkpoint(candidate, stat.st_mtime, stat.st_size)
        when = watch.last_growth_wall
        for record in reversed(watch.run.epochs):
            if record.fit_run == announced.fit_run and record.epoch == announced.epoch:
                when = record.ended_at or when
                break
        return Checkpoint(path, when, 0)

    def state(self, watch: LogWatch) -> OversightState:
        """The state now, without refreshing anything."""
        newest = self.checkpoints[0] if self.checkpoints else None
        announced = watch.run.newest_checkpoint()
        if announced is not None:
            told = self.announced_checkpoint(watch, announced)
            if newest is None or told.modified >= newest.modified:
                newest = told
        warning = ""
        if (self.scanned or announced is not None) and not watch.run.current.finished:
            warning = checkpoint_status(
                newest,
                watch.epoch_end_times(),
                watch.training_started(),
                watch.last_growth_wall,
                self.policy,
            ).warning
        return OversightState(
            self.writer, newest, len(self.checkpoints), self.roots(), warning, self.scanned, announced
        )
