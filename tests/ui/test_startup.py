"""The dashboard's start (ui/startup.py): its first snapshot reads the GPUs alone, in a forked child where
it can, and a feed made from it publishes that snapshot before it samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.e2e
def test_the_dashboards_first_snapshot_comes_from_a_forked_child_and_this_process_loads_no_nvml(
    fakenvml_lib_dir: Path, tmp_path: Path
) -> None:
    """A fresh interpreter (one thread, so it may fork) on the scripted NVML: the feed's first snapshot
    shows the GPUs alone, the UI is imported, and pynvml was loaded by the child only."""
    scenario = tmp_path / "scenario.txt"
    scenario.write_text('device name="NVIDIA H200"\ndevice name="NVIDIA H200"\n')
    env = {**os.environ, "LD_LIBRARY_PATH": str(fakenvml_lib_dir), "FAKE_NVML_SCENARIO": str(scenario)}
    code = (
        "import json, sys\n"
        "from tfgpu_tui.settings import Settings\n"
        "from tfgpu_tui.ui.startup import dashboard_feed\n"
        "feed = dashboard_feed(Settings())\n"
        "first = feed.latest\n"
        "print(json.dumps([[d.name for d in first.devices], first.processes_pending, feed.sampler is None,\n"
        "    'pynvml' in sys.modules, 'tfgpu_tui.ui.app' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=GUARD
    )
    assert done.returncode == 0, done.stderr
    names, pending, not_sampled, nvml_here, ui_imported = json.loads(done.stdout.splitlines()[-1])
    assert names == ["NVIDIA H200", "NVIDIA H200"] and pending and not_sampled
    assert not nvml_here and ui_imported
