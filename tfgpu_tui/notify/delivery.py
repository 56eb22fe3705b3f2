"""Sending messages in a thread of its own: each event to each destination, retried with backoff; a
destination that fails is reported once on stderr (and once more when it works again). Nothing here
blocks the caller: `send` queues and returns."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tfgpu_tui.notify.destinations import Destination, quiet_apprise
from tfgpu_tui.notify.events import Event
from tfgpu_tui.notify.failure import UNKNOWN, apprise_messages

BACKOFF_SECONDS = (5.0, 15.0, 60.0, 300.0, 900.0)  # waits before each retry; then the message is dropped
MAX_PENDING = 500  # messages waiting; beyond that the oldest are dropped (and said so once)


def apprise_sender(destination: Destination) -> Callable[[str, str], bool]:
    """A function sending (title, body) to `destination` through Apprise; True when it was accepted."""
    import apprise

    quiet_apprise()
    client = apprise.Apprise()
    client.add(destination.url)

    def send(title: str, body: str) -> bool:
        try:
            return bool(client.notify(title=title, body=body))
        except Exception:  # noqa: BLE001 - a plugin's bug must not end the watch
            return False

    return send


@dataclass
class Pending:
    """One message to one destination, and when to try it next."""

    destination: int
    title: str
    body: str
    attempt: int = 0
    due: float = 0.0


class Delivery:
    """The delivery thread.

    Args:
        destinations: where to send.
        report: prints one line on stderr.
        backoff: waits before each retry, in seconds.
    """

    def __init__(
        self,
        destinations: list[Destination],
        report: Callable[[str], None],
        backoff: tuple[float, ...] = BACKOFF_SECONDS,
    ) -> None:
        self.destinations = destinations
        self.report = report
        self.backoff = backoff
        self._senders = [apprise_sender(destination) for destination in destinations]
        self._failing = [False] * len(destinations)
        self._pending: list[Pending] = []
        self._dropped_said = False
        self._condition = threading.Condition()
        self._stopped = False
        self.delivered = 0  # messages accepted by a service (for tests and the last line)
        self._thread = threading.Thread(target=self._run, name="tfgpu-notify-delivery", daemon=True)

    def start(self) -> Delivery:
        self._thread.start()
        return self

    def send(self, event: Event) -> None:
        """Queue the event for every destination; returns at once."""
        with self._condition:
            for index in range(len(self.destinations)):
                self._pending.append(Pending(index, event.title, event.body()))
            if len(self._pending) > MAX_PENDING:
                del self._pending[: len(self._pending) - MAX_PENDING]
                if not self._dropped_said:
                    self._dropped_said = True
                    self.report(f"more than {MAX_PENDING} messages waiting; the oldest are dropped")
            self._condition.notify()

    def stop(self, timeout: float = 10.0) -> None:
        """Try what is due now once more, then stop (waits up to `timeout`)."""
        with self._condition:
            self._stopped = True
            self._condition.notify()
        self._thread.join(timeout)

    def idle(self) -> bool:
        """Nothing waits to be sent."""
        with self._condition:
            return not self._pending

    def _next(self) -> Pending | None:
        """The next message due, waiting for one; None once stopped."""
        with self._condition:
            while True:
                now = time.monotonic()
                due = [p for p in self._pending if p.due <= now]
                if due:
                    item = min(due, key=lambda p: p.due)
                    self._pending.remove(item)
                    return item
                if self._stopped:
                    return None
                wait = min((p.due for p in self._pending), default=now + 3600.0) - now
                self._condition.wait(max(wait, 0.0))

    def _run(self) -> None:
        while (item := self._next()) is not None:
            with apprise_messages() as why:
                ok = self._senders[item.destination](item.title, item.body)
                self._after(item, ok, "" if ok else why())

    def _after(self, item: Pending, ok: bool, why: str = UNKNOWN) -> None:
        shown = self.destinations[item.destination].shown
        if ok:
            self.delivered += 1
            if self._failing[item.destination]:
                self._failing[item.destination] = False
                self.report(f"delivery to {shown} works again")
            return
        if not self._failing[item.destination]:
            self._failing[item.destination] = True
            self.report(f"delivery to {shown} failed ({why}); retrying with backoff, the watch goes on")
        if item.attempt < len(self.backoff):
            item.due = time.monotonic() + self.backoff[item.attempt]
            item.attempt += 1
            with self._condition:
                if not self._stopped:
                    self._pending.append(item)
