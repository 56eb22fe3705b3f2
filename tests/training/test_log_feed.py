"""The LogFeed (training/feed.py): each log followed once however many subscribe, new lines and file events
published as states, a log nobody follows closed, and a bound on how many it follows."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.waiting import wait_for
from tfgpu_tui.training.feed import FollowFailed, LogFeed, LogSpec, LogUpdate
from tfgpu_tui.training.follow import FileEvent

BAR = "10/10 [==============================] - 1s 100ms/step"


class Received:
    """What one subscriber was handed (in the feed's thread)."""

    def __init__(self) -> None:
        self.updates: list[LogUpdate] = []
        self._lock = threading.Lock()

    def __call__(self, update: LogUpdate) -> None:
        with self._lock:
            self.updates.append(update)

    def epochs(self) -> int:
        """Epochs in the newest state (-1 before any)."""
        with self._lock:
            states = [u for u in self.updates if not isinstance(u, FollowFailed)]
        return len(states[-1].run.epochs) if states else -1

    def events(self) -> list[FileEvent]:
        with self._lock:
            return [e for u in self.updates if not isinstance(u, FollowFailed) for e in u.events]


@pytest.fixture
def feed() -> Iterator[LogFeed]:
    started = LogFeed(poll_seconds=0.05).start()
    yield started
    started.close()


def test_two_subscribers_of_one_log_share_its_follower_and_both_see_it_grow(feed: LogFeed, tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text(f"Epoch 1/3\n{BAR} - loss: 0.5000\n")
    spec = LogSpec(log)
    first, second = Received(), Received()
    subscriptions = [feed.follow(spec, first), feed.follow(LogSpec(log), second)]
    assert feed.followed() == [spec]  # equal specs: one follower
    wait_for(lambda: first.epochs() == 1 and second.epochs() == 1)
    with log.open("a") as handle:
        handle.write(f"Epoch 2/3\n{BAR} - loss: 0.4000\n")
    wait_for(lambda: first.epochs() == 2 and second.epochs() == 2)
    latest = feed.latest(spec)
    assert latest is not None and latest.run.epochs[-1].metrics["loss"] == 0.4
    for subscription in subscriptions:
        subscription.cancel()
    wait_for(lambda: feed.followed() == [] and feed.latest(spec) is None)


def test_a_rotation_reaches_the_subscriber_as_an_event_of_the_next_state(feed: LogFeed, tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text(f"Epoch 1/3\n{BAR} - loss: 0.5000\n")
    received = Received()
    feed.follow(LogSpec(log), received)
    wait_for(lambda: received.epochs() == 1)
    log.rename(tmp_path / "train.log.1")
    log.write_text(f"Epoch 1/1\n{BAR} - loss: 0.3000\n")
    wait_for(lambda: FileEvent.ROTATED in received.events())


def test_a_log_beyond_the_bound_is_refused_and_the_others_followed(tmp_path: Path):
    feed = LogFeed(max_logs=2)
    got = [Received() for _ in range(3)]
    for index, received in enumerate(got):
        log = tmp_path / f"run{index}.log"
        log.write_text(f"Epoch 1/1\n{BAR} - loss: 0.5000\n")
        feed.follow(LogSpec(log), received)
    feed.refresh()
    assert [received.epochs() for received in got[:2]] == [1, 1]
    [refused] = got[2].updates
    assert isinstance(refused, FollowFailed) and "at most 2 logs" in refused.reason
    feed.close()


def test_reload_reads_a_rewritten_log_again_from_its_start(feed: LogFeed, tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text("Epoch 1/2\n")
    spec = LogSpec(log)
    feed.follow(spec)
    wait_for(lambda: (state := feed.latest(spec)) is not None and state.run.current.total_epochs == 2)
    log.write_text("Epoch 1/3\n")  # the same size: following alone cannot tell it changed
    feed.reload(spec)
    wait_for(lambda: (state := feed.latest(spec)) is not None and state.run.current.total_epochs == 3)
