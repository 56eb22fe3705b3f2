"""Kill requests: ending a process (the safe kill of gpu/kill.py through the Sampler, or a Jupyter kernel
action of gpu/kernel_actions.py) run off the caller's thread, one at a time.

A view asks `refusal` before it shows a confirmation, then `start`s the kill; the steps and the outcome come
back through the callbacks, called in the kill's own thread (a UI turns them into messages). The feed takes
a fresh sample as soon as the kill ends, so every view sees the process gone.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from tfgpu_tui.gpu.feed import SnapshotFeed
from tfgpu_tui.gpu.kill import KillOutcome, KillResult
from tfgpu_tui.gpu.model import ProcessRow

if TYPE_CHECKING:
    from tfgpu_tui.gpu.kernel_actions import KillChoice

STARTING = "The monitor is still starting."
BUSY = "A kill is already in progress; wait for its outcome."


class KillRequests:
    """The kill path beside a feed's Sampler; thread-safe."""

    def __init__(self, feed: SnapshotFeed) -> None:
        self._feed = feed
        self._lock = threading.Lock()  # one kill at a time
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def refusal(self, row: ProcessRow) -> str | None:
        """Why this process may not be signalled now, or None when it may."""
        sampler = self._feed.sampler
        if sampler is None:
            return STARTING
        if self.running:
            return BUSY
        return sampler.kill_refusal(row)

    def start(
        self,
        row: ProcessRow,
        choice: KillChoice,
        on_progress: Callable[[str], None],
        on_done: Callable[[KillOutcome], object],
    ) -> str | None:
        """End `row` in a thread of its own: a kernel action, or a signal (identity re-check, the signal,
        grace period, SIGKILL, the freed-memory check); `on_progress` with each step, `on_done` with the
        outcome. Returns why it did not start (and calls nothing), or None."""
        from tfgpu_tui.gpu.kernel_actions import end_process  # the kill path loads when first used

        with self._lock:
            refusal = self.refusal(row)
            sampler = self._feed.sampler
            if refusal is not None or sampler is None:
                return refusal or STARTING

            def run() -> None:
                try:
                    outcome = end_process(sampler, row, choice, on_progress)
                except Exception as error:  # noqa: BLE001 - report it rather than lose it in a dead thread
                    failed = f"Killing PID {row.pid} failed: {error!r}"
                    outcome = KillOutcome(row.pid, KillResult.ERROR, failed)
                with contextlib.suppress(Exception):
                    on_done(outcome)
                self._feed.sample_soon()

            self._thread = threading.Thread(target=run, name="tfgpu-kill", daemon=True)
            self._thread.start()
        return None
