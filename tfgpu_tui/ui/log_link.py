"""How a widget receives a followed log from the LogFeed (training/feed.py): each state arrives as a message.

The feed calls its subscribers in its own thread; `follow_log` turns each call into a `LogUpdated` message
posted to the widget (Textual's `post_message` is thread-safe), so widgets hold no thread and no lock, as
with the GPU feed (ui/feed_link.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.message import Message
from textual.message_pump import MessagePump

from tfgpu_tui.training.feed import LogFeed, LogSpec, LogSubscription, LogUpdate


@dataclass
class LogUpdated(Message):
    """A followed log's new state, or why it cannot be followed."""

    bubble: ClassVar[bool] = False
    update: LogUpdate


def follow_log(receiver: MessagePump, feed: LogFeed, spec: LogSpec) -> LogSubscription:
    """From now on, post each state of the log `spec` names to `receiver` as a `LogUpdated` message."""
    return feed.follow(spec, lambda update: receiver.post_message(LogUpdated(update)))
