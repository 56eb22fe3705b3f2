"""The dashboard's Sampler, created and its first snapshot taken before the UI loads.

Loading NVML, psutil and the host details of every GPU process is mostly Python work. Done in a thread beside
Textual's start-up, it competes with it for the interpreter (imports even take turns on one lock), and both
finish late. Done first, it takes a tenth of a second and the first frame already shows the GPUs. The wait is
bounded: a driver that is slow to initialise (no persistence mode) lets the UI start, and its first snapshot
follows when it comes.
"""

from __future__ import annotations

import os
import threading

from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.source import GpuSource
from tfgpu_tui.settings import Settings

WAIT_SECONDS = 0.5  # the longest the dashboard waits for the first snapshot before it loads the UI
# File descriptors the first snapshot may hold: NVML's device files and one /proc/PID/stat per GPU process.
DESCRIPTOR_TABLE = 256


def grow_descriptor_table(size: int) -> None:
    """Grow this process's file descriptor table to `size` slots while it has one thread. Linux grows the
    table of a multi-threaded process (64, 128, 256 slots...) only after an RCU grace period: at 8 GPUs x 64
    processes on fakenvml the first snapshot waited twice, 10-27 ms each time (its pidfds, then our stat
    descriptors). Single-threaded, the table grows at once. Nothing happens where that fails."""
    try:
        import fcntl

        spare = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.close(fcntl.fcntl(spare, fcntl.F_DUPFD_CLOEXEC, size - 1))  # the lowest free one >= size - 1
        finally:
            os.close(spare)
    except (ImportError, OSError):  # no fcntl, or a descriptor limit under `size`
        pass


class SamplerStart:
    """Creates a Sampler and takes its first snapshot in a thread started at once."""

    def __init__(self, settings: Settings, source: GpuSource | None = None) -> None:
        self._settings = settings
        self._source = source
        self._sampler: Sampler | None = None
        self._snapshot: Snapshot | None = None
        self._error: Exception | None = None
        self._handover = threading.Lock()  # the first snapshot is handed out once
        grow_descriptor_table(DESCRIPTOR_TABLE)  # before the thread starts
        self._thread = threading.Thread(target=self._run, name="sampler-start", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._sampler = Sampler(self._settings, self._source)
            self._snapshot = self._sampler.sample()
        except Exception as error:  # noqa: BLE001 - handed to whoever takes the result
            self._error = error

    def wait(self, timeout: float | None = WAIT_SECONDS) -> bool:
        """Wait up to `timeout` seconds for the first snapshot; whether it is there."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def take_snapshot(self) -> Snapshot | None:
        """The first snapshot if it is taken already (never waits); it is handed out only once."""
        with self._handover:
            snapshot, self._snapshot = self._snapshot, None
        return snapshot

    def result(self) -> tuple[Sampler, Snapshot | None]:
        """The Sampler and its first snapshot unless `take_snapshot` took it (waits for them); raises what
        creating the Sampler raised."""
        self._thread.join()
        if self._sampler is None:
            raise self._error or RuntimeError("the sampler was not created")
        with self._handover:
            snapshot, self._snapshot = self._snapshot, None
        return self._sampler, snapshot
