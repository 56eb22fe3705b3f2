"""The LogFeed: one thread that follows a process's training logs, each once, as gpu/feed.py samples GPUs.

A subscriber asks for a log (`follow` with a `LogSpec`: the path, where its checkpoints are, the warning
policy, the writer when known); subscribers asking for the same spec share one `LogWatch` (tail -F,
tail first, history scanned in the background) and one `LogOversight` (writer, checkpoints). Each round
the thread reads what is new in every log, spends one backfill budget across them, and hands each
changed log's frozen `LogState` (training/log_state.py: the run, the writer, the checkpoints and the one
problem list) to that log's subscribers: at most every `POST_EVERY_SECONDS` while it changes, every
second while it does not (the stall check counts seconds). A log nobody follows any more is closed.

`refresh` runs one round in the caller's thread instead (a one-off `log`, notify's own loop, the
exporter's one-off sample). Subscribers are called in the thread that runs the round and must return
quickly: a UI posts a message (ui/training.py), a headless one queues or stores the state.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tfgpu_tui.proc.log_writers import StdioWalk
from tfgpu_tui.training.checkpoints import CheckpointPolicy
from tfgpu_tui.training.follow import FileEvent
from tfgpu_tui.training.log_state import LogState, state_of
from tfgpu_tui.training.oversight import LogOversight
from tfgpu_tui.training.watch import LogWatch

POLL_SECONDS = 0.25
POST_EVERY_SECONDS = 0.2  # at most this often while a log changes
QUIET_POST_SECONDS = 1.0  # while it does not (its idle time and the stall check still move)
#: 1 MB history chunks scanned per round, across all logs (time: docs/training-logs.md).
BACKFILL_CHUNKS_PER_ROUND = 32
MAX_LOGS = 32  # logs followed at once by one feed; a further one is refused (`FollowFailed`)
MAX_PENDING_EVENTS = 64  # file events kept for a log between two of its states


@dataclass(frozen=True)
class LogSpec:
    """Which log to follow, and how: equal specs share one follower."""

    path: Path
    checkpoints_dir: Path | None = None
    policy: CheckpointPolicy = field(default_factory=CheckpointPolicy)
    writer_pid: int | None = None
    find_writer: bool = True  # False for the demo's in-process writer thread
    read_whole: bool = False  # read the whole file before the first state (notify judges its end state)


@dataclass(frozen=True)
class FollowFailed:
    """The log could not be followed (unreadable, or too many logs)."""

    path: Path
    reason: str


LogUpdate = LogState | FollowFailed
Callback = Callable[[LogUpdate], object]


class LogSubscription:
    """One subscriber of one log."""

    def __init__(self, feed: LogFeed, spec: LogSpec, callback: Callback) -> None:
        self._feed = feed
        self.spec = spec
        self.callback = callback
        self.active = True

    def cancel(self) -> None:
        """Receive nothing more (the log is closed when no one else follows it)."""
        self._feed.unsubscribe(self)


class _Followed:
    """One followed log inside the feed (used only under the round lock)."""

    def __init__(self, spec: LogSpec) -> None:
        self.spec = spec
        self.watch: LogWatch | None = None
        self.oversight: LogOversight | None = None
        self.failed = False
        self.events: list[FileEvent] = []
        self.posted_at = -float("inf")
        self.changed = True

    def open(self) -> None:
        spec = self.spec
        self.watch = LogWatch(spec.path)
        if spec.read_whole:
            self.watch.read_all()
            self.watch.events.clear()  # the whole file is the first state: nothing happened since
        self.oversight = LogOversight(
            spec.path, spec.checkpoints_dir, spec.policy, spec.writer_pid, spec.find_writer
        )

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()


class LogFeed:
    """Follows the requested logs, each once, and publishes their states; thread-safe."""

    def __init__(
        self,
        poll_seconds: float = POLL_SECONDS,
        backfill_chunks: int = BACKFILL_CHUNKS_PER_ROUND,
        max_logs: int = MAX_LOGS,
    ) -> None:
        self.poll_seconds = poll_seconds
        self.backfill_chunks = backfill_chunks
        self.max_logs = max_logs
        self._lock = threading.Lock()  # subscriptions, followed logs, latest states
        self._round = threading.Lock()  # one round at a time (the thread's, or a caller's `refresh`)
        self._wake = threading.Event()
        self._subscriptions: list[LogSubscription] = []
        self._followed: dict[LogSpec, _Followed] = {}
        self._latest: dict[LogSpec, LogState] = {}
        self._closing: list[_Followed] = []  # replaced by `reload`, closed by the next round
        self._stopped = False
        self._thread: threading.Thread | None = None

    # -- life -----------------------------------------------------------------------------------------------
    def start(self) -> LogFeed:
        """Start the following thread; returns the feed."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="tfgpu-logs", daemon=True)
            self._thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Stop following and close every log; waits up to `timeout` for the thread."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._subscriptions.clear()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        with self._round, self._lock:
            followed = list(self._followed.values()) + self._closing
            self._followed.clear()
            self._closing = []
        for log in followed:
            log.close()

    # -- subscribers ----------------------------------------------------------------------------------------
    def follow(self, spec: LogSpec, callback: Callback = lambda update: None) -> LogSubscription:
        """Call `callback` with each new state of the log `spec` names, from the next round on."""
        subscription = LogSubscription(self, spec, callback)
        with self._lock:
            self._subscriptions.append(subscription)
            self._followed.setdefault(spec, _Followed(spec))
        self._wake.set()
        return subscription

    def unsubscribe(self, subscription: LogSubscription) -> None:
        with self._lock:
            subscription.active = False
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
        self._wake.set()

    def reload(self, spec: LogSpec) -> None:
        """Read that log again from its start (a new follower) for all its subscribers."""
        with self._lock:
            old = self._followed.pop(spec, None)
            if old is None:
                return
            self._closing.append(old)
            self._followed[spec] = _Followed(spec)
            self._latest.pop(spec, None)
        self._wake.set()

    def latest(self, spec: LogSpec) -> LogState | None:
        """The newest state of that log, None before the first."""
        with self._lock:
            return self._latest.get(spec)

    def followed(self) -> list[LogSpec]:
        """The logs followed now."""
        with self._lock:
            return list(self._followed)

    # -- rounds ---------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Run one round now in the caller's thread; every followed log's state is published."""
        self._round_once(force=True)

    def _run(self) -> None:
        while not self._stopped:
            self._round_once(force=False)
            with self._lock:
                backfilling = any(
                    log.watch is not None and not log.watch.backfill_done for log in self._followed.values()
                )
            if not backfilling and self._wake.wait(self.poll_seconds):
                self._wake.clear()

    def _round_once(self, force: bool) -> None:
        with self._round:
            followed = self._prune()
            budget = self.backfill_chunks
            walk = StdioWalk()  # one /proc walk for the logs that look for their writers this round
            for index, log in enumerate(followed):
                if index >= self.max_logs:
                    self._fail(log, f"following at most {self.max_logs} logs at once")
                    continue
                budget = self._step(log, budget, force, walk)

    def _prune(self) -> list[_Followed]:
        """Close the logs nobody follows any more; the others, oldest first."""
        with self._lock:
            wanted = {s.spec for s in self._subscriptions}
            gone = [spec for spec in self._followed if spec not in wanted]
            closed = [self._followed.pop(spec) for spec in gone] + self._closing
            self._closing = []
            for spec in gone:
                self._latest.pop(spec, None)
            followed = list(self._followed.values())
        for log in closed:
            log.close()
        return followed

    def _step(self, log: _Followed, budget: int, force: bool, walk: StdioWalk) -> int:
        """Read what is new in one log, scan up to `budget` history chunks, publish when due; returns the
        budget left."""
        if log.failed:
            return budget
        try:
            if log.watch is None:
                log.open()
            watch, oversight = log.watch, log.oversight
            assert watch is not None and oversight is not None
            log.changed = watch.poll() or log.changed
            while budget > 0 and not watch.backfill_done:
                budget -= 1
                log.changed = watch.backfill_step() or log.changed
        except OSError as error:
            self._fail(log, error.strerror or str(error))
            return budget
        log.events += watch.events
        del log.events[:-MAX_PENDING_EVENTS]
        watch.events.clear()
        now = time.monotonic()
        since = now - log.posted_at
        if force or (log.changed and since >= POST_EVERY_SECONDS) or since >= QUIET_POST_SECONDS:
            state = state_of(watch, oversight, tuple(log.events), walk)
            log.events.clear()
            log.changed = False
            log.posted_at = now
            self._publish(log.spec, state)
        return budget

    def _fail(self, log: _Followed, reason: str) -> None:
        if not log.failed:
            log.failed = True
            log.close()
            self._publish(log.spec, FollowFailed(log.spec.path, reason))

    def _publish(self, spec: LogSpec, update: LogUpdate) -> None:
        with self._lock:
            if isinstance(update, LogState):
                self._latest[spec] = update
            subscriptions = [s for s in self._subscriptions if s.spec == spec]
        for subscription in subscriptions:
            if subscription.active:
                with contextlib.suppress(Exception):  # a subscriber that fails does not stop the others
                    subscription.callback(update)
