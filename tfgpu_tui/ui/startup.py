"""The dashboard's start, all of its policy in one place: how the first snapshot is taken, what the feed
starts from, and when the processes are first read.

The first frame shows the GPUs. Its snapshot reads the GPUs alone (no process, no host): pynvml's import,
NVML's start and the read of 8 GPUs cost 50-60 ms, all Python under one interpreter lock, so a forked child
(`proc.spawn.fork_call`) takes it on another core while this process imports Textual and the UI, and sends it
back through a pipe. Where there is no child (the demo, whose simulation lives in this process; no fork; a
process that already runs threads), this process takes it itself, before it imports Textual, and hands its
source on to the feed. A child later than FIRST_SNAPSHOT_SECONDS (a driver slow to start) is ended, and the
first frame shows no GPU until the feed's first sample.

The feed publishes that snapshot before it samples; the app starts the feed's sampling once its first frame
is drawn, and the feed's first sample reads the processes too.

This module loads neither Textual nor pynvml until `dashboard_feed` needs them.
"""

from __future__ import annotations

import time
from functools import partial

from tfgpu_tui.gpu.feed import SnapshotFeed
from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.gpu.sampler import error_alerts, read_gpus, source_for
from tfgpu_tui.gpu.source import GpuSource
from tfgpu_tui.settings import Settings

# The longest the dashboard waits for the forked child's snapshot once the UI is imported: a driver slow to
# initialise (no persistence mode) lets the UI start, and the feed's first sample follows when it comes.
FIRST_SNAPSHOT_SECONDS = 0.5


def gpus_alone(source: GpuSource) -> Snapshot:
    """A snapshot of the GPUs alone: it lists no process and says so (`processes_pending`), and its only
    alert is a missing GPU's."""
    started = time.perf_counter()
    reading = read_gpus(source)
    return Snapshot(
        timestamp=time.time(),
        simulated=source.simulated,
        error=reading.error,
        driver=reading.driver,
        devices=reading.devices,
        processes=[],
        host=None,
        alerts=error_alerts(reading),
        sample_ms=(time.perf_counter() - started) * 1000,
        processes_pending=True,
    )


def _read_and_close(settings: Settings) -> Snapshot:
    """The forked child's work: the GPUs alone, then NVML shut down."""
    source = source_for(settings)
    try:
        return gpus_alone(source)
    finally:
        source.close()


def feed_from_here(settings: Settings, source: GpuSource | None = None) -> SnapshotFeed:
    """A feed, not started, that has published the first snapshot, taken in this process from `source` (by
    default the one the settings ask for); it samples that source on (the demo's simulation goes on where
    the snapshot left it; NVML is not started twice)."""
    source = source or source_for(settings)
    feed = SnapshotFeed(settings, source)
    feed.publish(gpus_alone(source))
    return feed


def dashboard_feed(settings: Settings) -> SnapshotFeed:
    """The dashboard's feed, not started, with its first snapshot published where one came in time; the UI
    (the app module) is imported meanwhile."""
    from tfgpu_tui.proc.spawn import fork_call

    child = None if settings.demo else fork_call(partial(_read_and_close, settings))
    feed = feed_from_here(settings) if child is None else SnapshotFeed(settings)
    import tfgpu_tui.ui.app  # noqa: F401 - while the child, if any, reads the GPUs on another core

    if child is not None and (first := child.result(FIRST_SNAPSHOT_SECONDS)) is not None:
        feed.publish(first)
    return feed


def run_dashboard(settings: Settings) -> None:
    """Run the interactive dashboard until it ends (the app closes the feed as it ends)."""
    feed = dashboard_feed(settings)
    from tfgpu_tui.ui.app import TfgpuApp

    TfgpuApp(settings, feed=feed).run()
