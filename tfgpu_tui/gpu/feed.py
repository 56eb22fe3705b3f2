"""The SnapshotFeed: the one sampling thread of a process.

A feed owns the process's Sampler. Once started, its thread creates the Sampler, takes a snapshot at once, and
then samples as often as its most demanding subscriber asks (a hidden view asks for no rate: then every
`idle_seconds`), handing each frozen Snapshot to every subscriber. A snapshot taken elsewhere can be published
before it starts (the dashboard's first: ui/startup.py). The dashboard, `export` and `notify` each own one
feed; the Monitor, the header, the alerts, the exporter and the notifier subscribe. The kill path beside it is
gpu/kill_requests.py.

Subscribers are called in the feed's thread and must return quickly: a UI posts a message, a headless
subscriber does its own short work (formatting the state for a scrape, queueing a notification).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tfgpu_tui.gpu.history import GpuHistory, relative_series
from tfgpu_tui.gpu.model import NvmlUnavailable, Snapshot
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.source import GpuSource
from tfgpu_tui.settings import Settings

# While no subscriber asks for a rate (a dashboard showing another tab), the feed still samples this often:
# the header's GPU count and alerts stay current at almost no cost.
IDLE_SECONDS = 10.0


@dataclass(frozen=True)
class FeedUpdate:
    """What a subscriber receives: the snapshot, and each GPU's plotted history when it asked for it."""

    snapshot: Snapshot
    histories: tuple[GpuHistory, ...] | None = None


Callback = Callable[[FeedUpdate], object]


class Subscription:
    """One subscriber of a feed: how often it wants a snapshot and whether it wants the histories."""

    def __init__(self, feed: SnapshotFeed, callback: Callback, period: float | None) -> None:
        self._feed = feed
        self.callback = callback
        self.period = period  # seconds between snapshots it wants; None: whatever the feed takes
        self.histories_every: float | None = None  # collect histories this often for it; None: never
        self.histories_at = -math.inf  # snapshot timestamp of the last histories it received
        self.active = True

    def set_period(self, seconds: float | None) -> None:
        """Want a snapshot every `seconds` (None: no wish). A shorter period takes effect at once."""
        if seconds != self.period:
            self.period = seconds
            self._feed.replan()

    def set_histories(self, every: float | None) -> None:
        """Receive the histories with a snapshot at most every `every` seconds (None: never)."""
        self.histories_every = every

    def want_histories(self) -> None:
        """Receive the histories with the next snapshot."""
        self.histories_at = -math.inf

    def cancel(self) -> None:
        """Receive nothing more."""
        self._feed.unsubscribe(self)


class SnapshotFeed:
    """Runs the one Sampler in one thread and publishes its snapshots; thread-safe."""

    def __init__(
        self,
        settings: Settings,
        source: GpuSource | None = None,
        sampler: Sampler | None = None,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        self.settings = settings
        self.idle_seconds = idle_seconds
        self._source = source
        self._sampler = sampler
        self._subscriptions: list[Subscription] = []
        self._lock = threading.Lock()  # the subscription list, the latest snapshot and the wake flags
        self._publishing = threading.Lock()  # one delivery at a time, so each subscriber sees them in order
        self._wake = threading.Event()
        self._sample_now = False
        self._stopped = False
        self._latest: Snapshot | None = None
        self._thread: threading.Thread | None = None

    # -- life -----------------------------------------------------------------------------------------------
    def start(self) -> SnapshotFeed:
        """Start the sampling thread (it takes a snapshot at once); returns the feed. Starting twice does
        nothing more, and so does starting a closed feed."""
        if self._thread is None and not self._stopped:
            self._thread = threading.Thread(target=self._run, name="tfgpu-feed", daemon=True)
            self._thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Stop sampling and release the Sampler (NVML, caches); waits up to `timeout` for the thread. Closing
        twice does nothing more."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._subscriptions.clear()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._thread is None:  # never started; else the thread closes it as it ends
            self._close_sampler()

    @property
    def closed(self) -> bool:
        return self._stopped

    @property
    def latest(self) -> Snapshot | None:
        """The newest snapshot, or None before the first."""
        with self._lock:
            return self._latest

    @property
    def sampler(self) -> Sampler | None:
        """The Sampler, once the thread has created it."""
        return self._sampler

    def timer(self) -> float:
        """The sampler's timer (time.perf_counter unless a test handed in another), for costs shown beside
        the sampling's own."""
        return self._sampler.timer() if self._sampler is not None else time.perf_counter()

    # -- subscribers ----------------------------------------------------------------------------------------
    def subscribe(self, callback: Callback, period: float | None = None, replay: bool = True) -> Subscription:
        """Call `callback` with every snapshot from now on (in the feed's thread); with `replay`, also with
        the newest one now, in the caller's thread. `period`: how often this subscriber wants a snapshot."""
        subscription = Subscription(self, callback, period)
        with self._publishing:
            with self._lock:
                self._subscriptions.append(subscription)
                latest = self._latest
            if replay and latest is not None:
                self._deliver(subscription, latest, with_histories=False)
        self.replan()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            subscription.active = False
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
        self.replan()

    def period(self) -> float:
        """Seconds between samples: the shortest any subscriber wants, else `idle_seconds`."""
        with self._lock:
            wanted = [s.period for s in self._subscriptions if s.period is not None]
        return max(min(wanted), 0.0) if wanted else self.idle_seconds

    def replan(self) -> None:
        """Re-plan the wait for the next sample (a subscriber's period changed)."""
        self._wake.set()

    def sample_soon(self) -> None:
        """Take the next sample now (after a kill, say) instead of at the end of the period."""
        with self._lock:
            self._sample_now = True
        self._wake.set()

    # -- the thread -----------------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            if self._sampler is None:
                self._sampler = Sampler(self.settings, self._source)
        except Exception as error:  # noqa: BLE001 - the contract says it never raises; say so if it does
            self.publish(self._failure(f"The GPU sampler could not start: {error!r}"))
            return
        while not self._stopped:
            started = time.monotonic()
            try:
                snapshot = self._sampler.sample()
            except Exception as error:  # noqa: BLE001 - keep the feed (and its process) alive
                snapshot = self._failure(f"Sampling failed: {error!r}")
            if self._stopped:
                break
            self.publish(snapshot)
            self._wait_after(started)
        self._close_sampler()

    def _wait_after(self, started: float) -> None:
        """Sleep until the next sample is due; a period change re-plans, `sample_soon` or `close` ends it."""
        while (remaining := self.period() - (time.monotonic() - started)) > 0:
            if not self._wake.wait(remaining):
                return
            with self._lock:
                self._wake.clear()
                now, self._sample_now = self._sample_now or self._stopped, False
            if now:
                return

    def publish(self, snapshot: Snapshot) -> None:
        """Make `snapshot` the newest and hand it to every subscriber: the thread's own, or one taken
        elsewhere before the thread starts."""
        with self._publishing:
            with self._lock:
                self._latest = snapshot
                subscriptions = list(self._subscriptions)
            for subscription in subscriptions:
                self._deliver(subscription, snapshot, with_histories=True)

    def _deliver(self, subscription: Subscription, snapshot: Snapshot, with_histories: bool) -> None:
        """Hand one snapshot to one subscriber; a subscriber that fails does not stop the others."""
        if not subscription.active:
            return
        histories = None
        every = subscription.histories_every
        if with_histories and every is not None and snapshot.timestamp - subscription.histories_at >= every:
            subscription.histories_at = snapshot.timestamp
            histories = self.histories(snapshot)
        with contextlib.suppress(Exception):
            subscription.callback(FeedUpdate(snapshot, histories))

    def histories(self, snapshot: Snapshot) -> tuple[GpuHistory, ...]:
        """Each GPU's utilisation and memory series, relative to the snapshot's time."""
        sampler = self._sampler
        if sampler is None:
            return ()
        now = snapshot.timestamp
        return tuple(
            GpuHistory(
                device.index,
                relative_series(sampler.series(device.index, "utilization"), now),
                relative_series(sampler.series(device.index, "memory_percent"), now),
            )
            for device in snapshot.devices
        )

    def _failure(self, message: str) -> Snapshot:
        error = NvmlUnavailable("internal", message, "This is a bug in tfgpu-tui; restarting it may help")
        now = self._sampler.clock() if self._sampler is not None else time.time()
        return Snapshot(now, self.settings.demo, error, None, [], [], None, [])

    def _close_sampler(self) -> None:
        sampler = self._sampler
        if sampler is not None:
            with contextlib.suppress(Exception):
                sampler.close()
