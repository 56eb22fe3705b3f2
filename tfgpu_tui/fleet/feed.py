"""The fleet's reading thread: reads every host once per interval and hands each FleetView to a callback
(the Hosts tab posts it to itself as a message). Nothing is handed on after `close()`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from tfgpu_tui.fleet.hosts import FleetView


class FleetReader(Protocol):
    """What the feed reads with: `PrometheusReader` or `DirectReader`."""

    def read(self) -> FleetView: ...

    def close(self) -> None: ...


class FleetFeed:
    """One thread that calls `open_reader()` once, then `read()` every `interval` seconds (counted from the
    start of each read) and passes each view to `publish`. A reader that raises gives a view with the error
    and the hosts last seen, and the feed goes on."""

    def __init__(
        self,
        open_reader: Callable[[], FleetReader],
        interval: float,
        publish: Callable[[FleetView], object],
    ) -> None:
        self.interval = interval
        self._open_reader = open_reader
        self._publish = publish
        self._stop = threading.Event()
        self._publishing = threading.Lock()  # held while a view is handed on, so close() can wait it out
        self._thread = threading.Thread(target=self._run, name="fleet-feed", daemon=True)

    def start(self) -> None:
        """Start reading (the first read at once)."""
        self._thread.start()

    def close(self) -> None:
        """Stop: no view is published after this returns; a read under way ends in the background (its
        reader is closed when it does)."""
        with self._publishing:
            self._stop.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        reader = self._open_reader()
        last: FleetView | None = None
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    view = reader.read()
                except Exception as error:  # noqa: BLE001 - a reader bug must not stop the feed
                    view = FleetView(last.hosts if last else (), "", f"reading failed: {error!r}")
                last = view
                with self._publishing:
                    if self._stop.is_set():
                        break
                    self._publish(view)
                self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        finally:
            reader.close()
