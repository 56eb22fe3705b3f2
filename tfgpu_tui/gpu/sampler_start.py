"""The dashboard's Sampler, created and its first snapshot taken before the UI loads.

Loading NVML, psutil and the host details of every GPU process is mostly Python work. Done in a thread beside
Textual's start-up, it competes with it for the interpreter (imports even take turns on one lock), and both
finish late. Done first, it takes a tenth of a second and the first frame already shows the GPUs. The wait is
bounded: a driver that is slow to initialise (no persistence mode) lets the UI start, and its first snapshot
follows when it comes.
"""

from __future__ import annotations

import threading

from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.source import GpuSource
from tfgpu_tui.settings import Settings

WAIT_SECONDS = 0.5  # the longest the dashboard waits for the first snapshot before it loads the UI


class SamplerStart:
    """Creates a Sampler and takes its first snapshot in a thread started at once."""

    def __init__(self, settings: Settings, source: GpuSource | None = None) -> None:
        self._settings = settings
        self._source = source
        self._sampler: Sampler | None = None
        self._snapshot: Snapshot | None = None
        self._error: Exception | None = None
        self._handover = threading.Lock()  # the first snapshot is handed out once
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
