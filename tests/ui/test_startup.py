"""The dashboard's start (ui/startup.py): its first snapshot reads the GPUs alone, and a feed made from it
publishes that snapshot before it samples."""

from __future__ import annotations

from tests.helpers.waiting import wait_for
from tfgpu_tui.gpu.feed import FeedUpdate
from tfgpu_tui.gpu.model import NvmlUnavailable
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.gpu.source import GpuReading
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.startup import feed_from_here, gpus_alone

GUARD = 60.0  # only bounds a failure


def test_the_first_snapshot_reads_the_gpus_alone_and_says_the_processes_are_pending() -> None:
    snapshot = gpus_alone(SimulatedSource(gpus=2))
    assert len(snapshot.devices) == 2 and snapshot.error is None and snapshot.simulated
    assert snapshot.processes_pending and snapshot.processes == [] and snapshot.host is None
    assert snapshot.alerts == []  # no rule has seen a process yet


def test_a_first_snapshot_without_a_gpu_still_says_why() -> None:
    class NoGpu(SimulatedSource):
        def read(self) -> GpuReading:
            error = NvmlUnavailable("library_not_found", "No NVML here", "Install the driver")
            return GpuReading(error, None)

    snapshot = gpus_alone(NoGpu())
    assert snapshot.processes_pending and snapshot.devices == []
    assert [(alert.kind, alert.message) for alert in snapshot.alerts] == [("no_gpu", "No NVML here")]


def test_a_feed_from_here_has_published_the_first_snapshot_and_samples_its_source_once_started() -> None:
    source = SimulatedSource(gpus=3)
    feed = feed_from_here(Settings(demo=True), source)
    received: list[FeedUpdate] = []
    try:
        first = feed.latest
        assert first is not None and first.processes_pending and len(first.devices) == 3
        feed.subscribe(received.append)
        assert [update.snapshot for update in received] == [first]  # replayed at once
        assert feed.sampler is None  # nothing sampled before the start
        feed.start()
        whole = wait_for(lambda: received[1:] and received[1].snapshot, GUARD)
        assert not whole.processes_pending and whole.processes and whole.host is not None
        assert feed.sampler is not None and feed.sampler.source is source
    finally:
        feed.close()
