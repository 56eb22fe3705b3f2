"""How a widget receives the feed (gpu/feed.py): each update arrives as a message in the event loop.

The feed calls its subscribers in its own thread; `subscribe` turns each call into a `FeedUpdated` message
posted to the widget (Textual's `post_message` is thread-safe), so widgets hold no thread and no lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.message import Message
from textual.message_pump import MessagePump

from tfgpu_tui.gpu.feed import FeedUpdate, SnapshotFeed, Subscription


@dataclass
class FeedUpdated(Message):
    """A snapshot from the feed (with the plotted histories when the receiver asked for them)."""

    bubble: ClassVar[bool] = False
    update: FeedUpdate


def subscribe(receiver: MessagePump, feed: SnapshotFeed, period: float | None = None) -> Subscription:
    """From now on, post each of the feed's updates to `receiver` as a `FeedUpdated` message; `period`:
    how often the receiver wants one (None: no wish, it takes what the others get). The newest snapshot so
    far is not replayed: read `feed.latest` to show it at once."""
    return feed.subscribe(lambda update: receiver.post_message(FeedUpdated(update)), period, replay=False)
