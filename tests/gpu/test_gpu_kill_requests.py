"""Kill requests (gpu/kill_requests.py): the safe kill run in a thread beside the feed, one at a time.

Driven by the simulated source: no Textual, no /proc. Timeouts only bound a failure.
"""

from __future__ import annotations

import queue
import signal

from tests.helpers.waiting import wait_for
from tfgpu_tui.gpu.feed import FeedUpdate, SnapshotFeed
from tfgpu_tui.gpu.kill import KillOutcome, KillResult
from tfgpu_tui.gpu.kill_requests import STARTING, KillRequests
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.settings import Settings

GUARD = 60.0  # only bounds a failure


def make_feed(**settings: object) -> SnapshotFeed:
    """A feed over the demo scene that, left alone, samples once and then waits an hour."""
    return SnapshotFeed(Settings(**settings), SimulatedSource(gpus=2), idle_seconds=3600.0)  # type: ignore[arg-type]


def test_the_kill_runs_in_its_own_thread_and_a_fresh_snapshot_follows() -> None:
    feed = make_feed()
    kills = KillRequests(feed)
    seen: queue.Queue[FeedUpdate] = queue.Queue()
    feed.subscribe(seen.put)
    assert kills.refusal(object()) == STARTING  # type: ignore[arg-type]
    feed.start()
    snapshot = seen.get(timeout=GUARD).snapshot
    kernel = next(row for row in snapshot.processes if row.jupyter is not None)
    steps: list[str] = []
    done: queue.Queue[KillOutcome] = queue.Queue()
    assert kills.start(kernel, signal.SIGTERM, steps.append, done.put) is None
    outcome = done.get(timeout=GUARD)
    assert outcome.result is KillResult.FREED and outcome.pid == kernel.pid
    assert steps  # progress was reported
    after = seen.get(timeout=GUARD).snapshot
    while kernel.pid in {row.pid for row in after.processes}:  # the kill's own confirming samples come first
        after = seen.get(timeout=GUARD).snapshot
    wait_for(lambda: not kills.running, GUARD)
    feed.close(timeout=GUARD)


def test_a_refused_kill_starts_nothing() -> None:
    feed = make_feed(readonly=True)
    kills = KillRequests(feed)
    feed.start()
    snapshot = wait_for(lambda: feed.latest, GUARD)
    row = snapshot.processes[0]
    called: list[object] = []
    refusal = kills.start(row, signal.SIGTERM, called.append, called.append)
    assert refusal is not None and "Read-only" in refusal
    assert called == [] and not kills.running
    feed.close(timeout=GUARD)
