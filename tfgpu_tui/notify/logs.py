"""Which training logs notify follows, and reading them: each --log PATH, or by default the logs of the
running TensorFlow jobs (found as the Training tab finds them, re-looked for every few seconds and kept
after their writer ends, so that its end is seen)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from tfgpu_tui.notify.training_events import LogReading
from tfgpu_tui.proc.log_writers import LogCandidate, tensorflow_logs
from tfgpu_tui.training.checkpoints import CheckpointPolicy
from tfgpu_tui.training.follow import FileEvent
from tfgpu_tui.training.oversight import LogOversight
from tfgpu_tui.training.watch import LogWatch

DISCOVER_SECONDS = 10.0
MAX_LOGS = 32  # logs followed at once; the oldest found is dropped beyond that
FILE_NOTICES = {
    FileEvent.ROTATED: "was rotated (replaced by a new file); following the new one",
    FileEvent.TRUNCATED: "was truncated; reading it from its start",
    FileEvent.DELETED: "was deleted; waiting for it to come back",
}


class FollowedLog:
    """One log: its follower and what is known around it (writer, checkpoints)."""

    def __init__(self, path: Path, policy: CheckpointPolicy, writer_pid: int | None = None) -> None:
        self.path = path
        self.watch = LogWatch(path)
        self.watch.read_all()  # the whole file first: its end state is known before any event is judged
        self.oversight = LogOversight(path, policy=policy, writer_pid=writer_pid)
        self.watch.events.clear()

    def read(self) -> tuple[LogReading, list[str]]:
        """Read what is new; returns the reading and one notice per rotation, truncation or deletion."""
        with contextlib.suppress(OSError):
            self.watch.poll()
            self.watch.backfill_step()
        state = self.oversight.update(self.watch)
        fresh = list(self.watch.events)
        self.watch.events.clear()  # read once here; nothing else reads this watch's events
        notices = [f"{self.path} {FILE_NOTICES[event]}" for event in fresh if event in FILE_NOTICES]
        reading = LogReading(
            self.path,
            self.watch.run.snapshot(),
            self.watch.idle_seconds(),
            state.writer,
            state.checkpoint_warning,
        )
        return reading, notices

    @property
    def last_growth_wall(self) -> float:
        return self.watch.last_growth_wall

    def close(self) -> None:
        self.watch.close()


class LogSet:
    """The logs notify follows.

    Args:
        paths: the --log paths; empty: discover the running TensorFlow jobs' logs.
        policy: when a missing checkpoint deserves an event.
        discover: lists the running TensorFlow jobs' logs (tests pass their own).
        clock: monotonic seconds.
    """

    def __init__(
        self,
        paths: list[Path],
        policy: CheckpointPolicy,
        discover: Callable[[], list[LogCandidate]] = tensorflow_logs,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy
        self.discovering = not paths
        self._discover = discover
        self._clock = clock
        self._next_discovery = clock()
        self.logs: dict[Path, FollowedLog] = {}
        for path in paths:
            self._add(path)

    def _add(self, path: Path, writer_pid: int | None = None) -> list[str]:
        key = path.expanduser().absolute()
        if key in self.logs:
            return []
        notices = []
        if len(self.logs) >= MAX_LOGS:
            oldest = next(iter(self.logs))
            self.logs.pop(oldest).close()
            notices.append(f"following at most {MAX_LOGS} logs: no longer following {oldest}")
        self.logs[key] = FollowedLog(key, self.policy, writer_pid)
        return notices

    def read(self) -> tuple[list[LogReading], list[str]]:
        """Every followed log read now (new jobs looked for when due), and the notices for stderr."""
        notices: list[str] = []
        if self.discovering and self._clock() >= self._next_discovery:
            self._next_discovery = self._clock() + DISCOVER_SECONDS
            for candidate in self._discover():
                if candidate.path.absolute() not in self.logs:
                    notices.append(f"following {candidate.path} (PID {candidate.pid}'s {candidate.stream})")
                    notices += self._add(candidate.path, candidate.pid)
        readings = []
        for log in self.logs.values():
            reading, said = log.read()
            readings.append(reading)
            notices += said
        return readings, notices

    def last_growth(self) -> float | None:
        """When any followed log last grew (wall clock); None when none is followed."""
        return max((log.last_growth_wall for log in self.logs.values()), default=None)

    def close(self) -> None:
        for log in self.logs.values():
            log.close()
