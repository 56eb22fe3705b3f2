"""A value refreshed now and then off the caller's thread, so slow lookups never stall the sampler."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Periodic(Generic[T]):
    """Holds the latest result of ``compute``; ``get()`` starts a refresh when it is older than ``every``.

    With ``background`` False the refresh runs inline (tests, one-shot commands); otherwise in a daemon
    thread, and ``get()`` returns the previous value meanwhile (``initial`` until the first one arrives).
    """

    def __init__(
        self,
        compute: Callable[[], T],
        every: float,
        initial: T,
        background: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._compute = compute
        self._every = every
        self._value = initial
        self._background = background
        self._clock = clock
        self._stamp: float | None = None
        self._running = False
        self._lock = threading.Lock()

    def get(self) -> T:
        """The latest value, refreshing it first (inline) or in the background when it is stale."""
        now = self._clock()
        with self._lock:
            stale = self._stamp is None or now - self._stamp >= self._every
            if not stale or self._running:
                return self._value
            self._running = True
            self._stamp = now
        if self._background:
            threading.Thread(target=self._run, name="tfgpu-refresh", daemon=True).start()
        else:
            self._run()
        return self._value

    def _run(self) -> None:
        try:
            value = self._compute()
        except Exception:  # a failed lookup keeps the previous value; the next period retries
            value = self._value
        with self._lock:
            self._value = value
            self._running = False
