"""Which training logs notify follows: each --log PATH, or by default the logs of the running TensorFlow
jobs (found as the Training tab finds them, re-looked for every few seconds and kept after their writer
ends, so that its end is seen). They are followed by a LogFeed (training/feed.py) whose rounds run in
notify's own loop (`read`), each log read whole before its first state is judged."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tfgpu_tui.proc.log_writers import LogCandidate, tensorflow_logs
from tfgpu_tui.training.checkpoints import CheckpointPolicy
from tfgpu_tui.training.feed import FollowFailed, LogFeed, LogSpec, LogSubscription, LogUpdate
from tfgpu_tui.training.follow import FileEvent
from tfgpu_tui.training.log_state import LogState

DISCOVER_SECONDS = 10.0
MAX_LOGS = 32  # logs followed at once; the oldest found is dropped beyond that
MAX_NOTICES = 256  # notices kept between two reads
FILE_NOTICES = {
    FileEvent.ROTATED: "was rotated (replaced by a new file); following the new one",
    FileEvent.TRUNCATED: "was truncated; reading it from its start",
    FileEvent.DELETED: "was deleted; waiting for it to come back",
}


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
        self.feed = LogFeed(max_logs=MAX_LOGS)
        self.logs: dict[Path, LogSubscription] = {}
        self._notices: list[str] = []
        for path in paths:
            self._add(path)

    def _add(self, path: Path, writer_pid: int | None = None) -> list[str]:
        key = path.expanduser().absolute()
        if key in self.logs:
            return []
        notices = []
        if len(self.logs) >= MAX_LOGS:
            oldest = next(iter(self.logs))
            self.logs.pop(oldest).cancel()
            notices.append(f"following at most {MAX_LOGS} logs: no longer following {oldest}")
        spec = LogSpec(key, policy=self.policy, writer_pid=writer_pid, read_whole=True)
        self.logs[key] = self.feed.follow(spec, self._heard)
        return notices

    def _heard(self, update: LogUpdate) -> None:
        """A log's new state (in `read`'s round): its rotations, truncations and deletions as notices."""
        if isinstance(update, FollowFailed):
            said = [f"cannot follow {update.path}: {update.reason}"]
        else:
            said = [
                f"{update.path} {FILE_NOTICES[event]}" for event in update.events if event in FILE_NOTICES
            ]
        self._notices = (self._notices + said)[-MAX_NOTICES:]

    def read(self) -> tuple[list[LogState], list[str]]:
        """Every followed log read now (new jobs looked for when due), and the notices for stderr."""
        notices: list[str] = []
        if self.discovering and self._clock() >= self._next_discovery:
            self._next_discovery = self._clock() + DISCOVER_SECONDS
            for candidate in self._discover():
                if candidate.path.absolute() not in self.logs:
                    notices.append(f"following {candidate.path} (PID {candidate.pid}'s {candidate.stream})")
                    notices += self._add(candidate.path, candidate.pid)
        self.feed.refresh()
        states = [self.feed.latest(subscription.spec) for subscription in self.logs.values()]
        notices += self._notices
        self._notices = []
        return [state for state in states if state is not None], notices

    def last_growth(self) -> float | None:
        """When any followed log last grew (wall clock); None when none is followed."""
        now = time.time()
        states = [self.feed.latest(subscription.spec) for subscription in self.logs.values()]
        return max((now - state.idle_seconds for state in states if state is not None), default=None)

    def close(self) -> None:
        self.feed.close()
