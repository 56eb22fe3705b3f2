"""The fleet feed (core, no Textual): each read is handed on in order, a failing read becomes a view with the
error and the hosts last seen, and nothing is handed on after close()."""

from __future__ import annotations

import queue
import threading

from tfgpu_tui.fleet.feed import FleetFeed
from tfgpu_tui.fleet.hosts import FleetView, HostSnapshot


class ScriptedReader:
    """A reader whose every read returns (or raises) the next reply the test gives it."""

    def __init__(self) -> None:
        self.replies: queue.Queue[FleetView | Exception] = queue.Queue()
        self.closed = threading.Event()

    def read(self) -> FleetView:
        reply = self.replies.get(timeout=30)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def close(self) -> None:
        self.closed.set()


def test_feed_hands_on_each_read_and_goes_on_after_a_failure() -> None:
    reader = ScriptedReader()
    published: queue.Queue[FleetView] = queue.Queue()
    feed = FleetFeed(lambda: reader, 0.0, published.put)
    feed.start()
    first = FleetView((HostSnapshot("gpu-a:9400", "gpu-a", True),), "1 exporters scraped directly")
    reader.replies.put(first)
    assert published.get(timeout=30) is first
    reader.replies.put(RuntimeError("reader bug"))
    failed = published.get(timeout=30)
    assert failed.hosts == first.hosts and failed.error == "reading failed: RuntimeError('reader bug')"
    second = FleetView((), "1 exporters scraped directly")
    reader.replies.put(second)
    assert published.get(timeout=30) is second
    # closed while a read is under way: that read ends, is not handed on, and the reader is closed
    feed.close()
    reader.replies.put(first)
    assert feed.join(timeout=30)
    assert reader.closed.is_set() and published.empty()
