"""The SnapshotFeed (gpu/feed.py): one sampling thread, its subscribers, its pacing.

Driven by the simulated source: no Textual, no /proc. Waits are for events the feed causes; their timeouts
only bound a failure, they are no time window the feed must meet.
"""

from __future__ import annotations

import queue
import threading

import pytest

from tests.helpers.waiting import wait_for
from tfgpu_tui.gpu.feed import FeedUpdate, SnapshotFeed
from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.gpu.source import GpuReading
from tfgpu_tui.settings import Settings

GUARD = 60.0  # only bounds a failure


class Recorder:
    """A subscriber that keeps what it receives, in order, and lets a test wait for the next one."""

    def __init__(self) -> None:
        self.updates: queue.Queue[FeedUpdate] = queue.Queue()
        self.threads: list[str] = []

    def __call__(self, update: FeedUpdate) -> None:
        self.threads.append(threading.current_thread().name)
        self.updates.put(update)

    def next(self) -> FeedUpdate:
        return self.updates.get(timeout=GUARD)


def make_feed(idle_seconds: float = 3600.0, **settings: object) -> SnapshotFeed:
    """A feed over the demo scene that, left alone, samples once and then waits an hour."""
    return SnapshotFeed(Settings(**settings), SimulatedSource(gpus=2), idle_seconds=idle_seconds)  # type: ignore[arg-type]


@pytest.fixture
def feed():
    made = make_feed()
    yield made
    made.close()


def test_the_first_snapshot_reaches_every_subscriber(feed: SnapshotFeed) -> None:
    first, second = Recorder(), Recorder()
    feed.subscribe(first)
    feed.subscribe(second)
    feed.start()
    snapshot = wait_for(lambda: feed.latest, GUARD)
    assert isinstance(snapshot, Snapshot) and snapshot.simulated and len(snapshot.devices) == 2
    assert first.next().snapshot is snapshot
    assert second.next().snapshot is snapshot
    assert first.threads == ["tfgpu-feed"]  # called in the feed's thread


def test_a_late_subscriber_gets_the_newest_snapshot_at_once_in_its_own_thread(feed: SnapshotFeed) -> None:
    feed.start()
    snapshot = wait_for(lambda: feed.latest, GUARD)
    late = Recorder()
    feed.subscribe(late)
    assert late.updates.get_nowait().snapshot is snapshot
    assert late.threads == [threading.current_thread().name]
    quiet = Recorder()
    feed.subscribe(quiet, replay=False)
    assert quiet.updates.empty()


def test_the_period_is_the_shortest_any_subscriber_wants_else_idle(feed: SnapshotFeed) -> None:
    assert feed.period() == 3600.0
    header = feed.subscribe(Recorder())  # no wish: the idle rate
    assert feed.period() == 3600.0
    monitor = feed.subscribe(Recorder(), period=1.0)
    exporter = feed.subscribe(Recorder(), period=5.0)
    assert feed.period() == 1.0
    monitor.set_period(None)  # the Monitor hidden
    assert feed.period() == 5.0
    exporter.cancel()
    assert feed.period() == 3600.0
    header.cancel()
    monitor.cancel()


def test_a_shorter_period_takes_effect_at_once(feed: SnapshotFeed) -> None:
    """Left alone the feed would wait an hour after its first sample; a subscriber wanting one every 0.25 s
    gets its next snapshots without that wait."""
    seen = Recorder()
    subscription = feed.subscribe(seen)
    feed.start()
    first = seen.next().snapshot
    subscription.set_period(0.25)
    assert seen.next().snapshot.timestamp > first.timestamp
    assert seen.next().snapshot.timestamp > first.timestamp


def test_sample_soon_takes_the_next_sample_now(feed: SnapshotFeed) -> None:
    seen = Recorder()
    feed.subscribe(seen)
    feed.start()
    first = seen.next().snapshot
    feed.sample_soon()
    assert seen.next().snapshot.timestamp > first.timestamp


def test_a_failing_subscriber_does_not_stop_the_others(feed: SnapshotFeed) -> None:
    def broken(update: FeedUpdate) -> None:
        raise RuntimeError("a subscriber's bug")

    seen = Recorder()
    feed.subscribe(broken)
    feed.subscribe(seen)
    feed.start()
    seen.next()
    feed.sample_soon()
    seen.next()


def test_histories_come_only_to_who_asked_and_only_when_due(feed: SnapshotFeed) -> None:
    plots, header = Recorder(), Recorder()
    wanting = feed.subscribe(plots)
    wanting.set_histories(3600.0)  # at most once an hour
    feed.subscribe(header)
    feed.start()
    update = plots.next()
    assert update.histories is not None
    assert [h.index for h in update.histories] == [0, 1]
    times, values = update.histories[0].utilization
    assert times and all(t <= 0 for t in times) and all(0 <= v <= 100 for v in values)
    assert header.next().histories is None
    feed.sample_soon()
    assert plots.next().histories is None  # not due again for an hour
    wanting.want_histories()
    feed.sample_soon()
    assert plots.next().histories is not None


def test_a_cancelled_subscription_receives_nothing_more(feed: SnapshotFeed) -> None:
    gone, staying = Recorder(), Recorder()
    subscription = feed.subscribe(gone)
    feed.subscribe(staying)
    feed.start()
    gone.next()
    staying.next()
    subscription.cancel()
    feed.sample_soon()
    staying.next()
    assert gone.updates.empty()


def test_close_stops_the_thread_and_releases_the_source() -> None:
    closed = threading.Event()

    class Source(SimulatedSource):
        def close(self) -> None:
            closed.set()

    feed = SnapshotFeed(Settings(), Source(gpus=2), idle_seconds=3600.0)
    feed.start()
    wait_for(lambda: feed.latest, GUARD)
    feed.close(timeout=GUARD)
    assert closed.is_set()
    assert not any(thread.name == "tfgpu-feed" and thread.is_alive() for thread in threading.enumerate())


def test_a_sampler_that_cannot_start_is_said_as_the_snapshot_error() -> None:
    class Broken:
        """A source whose host cannot be reached: the Sampler cannot be made."""

        @property
        def host(self) -> None:
            raise RuntimeError("no host")

    feed = SnapshotFeed(Settings(), Broken())  # type: ignore[arg-type]
    seen = Recorder()
    feed.subscribe(seen)
    feed.start()
    snapshot = seen.next().snapshot
    assert snapshot.error is not None and "could not start" in snapshot.error.message
    assert "no host" in snapshot.error.message
    feed.close(timeout=GUARD)


def test_a_sample_that_raises_is_said_and_the_feed_goes_on() -> None:
    class Flaky(Sampler):
        calls = 0

        def sample(self) -> Snapshot:
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise RuntimeError("one bad reading")
            return super().sample()

    settings = Settings()
    feed = SnapshotFeed(settings, sampler=Flaky(settings, SimulatedSource(gpus=2)), idle_seconds=3600.0)
    seen = Recorder()
    feed.subscribe(seen)
    feed.start()
    failed = seen.next().snapshot
    assert failed.error is not None and "one bad reading" in failed.error.message
    feed.sample_soon()
    assert seen.next().snapshot.error is None
    feed.close(timeout=GUARD)


class SlowReadSource(SimulatedSource):
    """The demo's GPUs, whose every read takes 250 ms on the timer handed in."""

    def __init__(self, timer: list[float]) -> None:
        super().__init__(gpus=1, clock=lambda: 1_000.0)
        self.timer = timer

    def read(self) -> GpuReading:
        self.timer[0] += 0.25
        return super().read()


def test_snapshots_are_stamped_and_timed_by_the_clocks_handed_in() -> None:
    """A test (the snapshots') fixes what the user sees of time: the stamps, and the refresh cost shown."""
    settings = Settings(demo=True)
    timer = [10.0]
    sampler = Sampler(settings, SlowReadSource(timer), clock=lambda: 5_000.0, timer=lambda: timer[0])
    snapshot = sampler.sample()
    assert snapshot.timestamp == 5_000.0  # the sampler's clock, not the source's
    assert snapshot.sample_ms == 250.0  # the time the read took, on the timer handed in
    timer[0] = 42.0
    assert SnapshotFeed(settings, sampler=sampler).timer() == 42.0  # the Monitor times its own work by it


def test_a_snapshot_published_before_the_start_is_the_first_and_the_thread_samples_once_started() -> None:
    given = Sampler(Settings(), SimulatedSource(gpus=2)).sample()
    feed = SnapshotFeed(Settings(), SimulatedSource(gpus=3), idle_seconds=3600.0)
    recorder = Recorder()
    feed.subscribe(recorder)
    feed.publish(given)
    try:
        assert feed.latest is given and recorder.next().snapshot is given
        assert feed.sampler is None  # nothing sampled before the start
        feed.start()
        assert len(recorder.next().snapshot.devices) == 3  # at once, not at the end of the hour
    finally:
        feed.close()


def test_a_closed_feed_does_not_start() -> None:
    feed = make_feed()
    feed.close()
    feed.start()
    assert feed.sampler is None
    assert not any(thread.name == "tfgpu-feed" for thread in threading.enumerate())
