"""The app's start: the feed's first snapshot is on the first frame, the GPU view fits before the first
layout, and the other tabs and the help screen are styled."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.helpers.monitor_helpers import shown_pids
from tests.helpers.waiting import wait_for, wait_until
from tfgpu_tui.gpu.feed import SnapshotFeed
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.gpu.source import GpuReading
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.header import StatusHeader
from tfgpu_tui.ui.monitor import CHROME_LINES, MonitorTab
from tfgpu_tui.ui.startup import feed_from_here

GUARD = 60.0  # only bounds a failure


class CountingSource(SimulatedSource):
    """The simulation, noting when each reading was taken (time.monotonic)."""

    def __init__(self) -> None:
        super().__init__()
        self.read_at: list[float] = []

    @property
    def reads(self) -> int:
        return len(self.read_at)

    def read(self) -> GpuReading:
        self.read_at.append(time.monotonic())
        return super().read()


class OneReadingSource(SimulatedSource):
    """The simulation, whose second reading waits until `release` is set: nothing after the first reading
    can reach the screen before it."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.reads = 0

    def read(self) -> GpuReading:
        self.reads += 1
        if self.reads > 1:
            self.release.wait(GUARD)
        return super().read()


async def test_the_first_frame_shows_the_feeds_first_snapshot_without_sampling_again() -> None:
    source = CountingSource()
    settings = Settings(demo=True, interval=1.0)
    feed = SnapshotFeed(settings, source).start()
    wait_for(lambda: feed.latest, GUARD)
    app = TfgpuApp(settings, feed=feed)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        tab = app.query_one(MonitorTab)
        assert tab.snapshot is not None and tab.snapshot.sample_ms is not None
        assert shown_pids(app) == [row.pid for row in tab.snapshot.processes]
        # shown as it was: not sampled again because the tab was shown (no second reading yet, or one a whole
        # interval later: a loaded machine may take that long to get here, the next reading is then due)
        assert source.reads == 1 or source.read_at[1] - source.read_at[0] >= settings.interval
        await wait_until(pilot, lambda: source.reads >= 2)
        # the next reading a whole refresh interval after the first (a lower bound: load only delays it), so
        # showing the tab did not take one; no wall-clock window is asserted
        assert source.read_at[1] - source.read_at[0] >= settings.interval


async def test_the_first_snapshot_is_on_the_first_frame_with_no_second_sample() -> None:
    source = OneReadingSource()
    settings = Settings(demo=True, interval=1.0)
    feed = SnapshotFeed(settings, source).start()
    wait_for(lambda: feed.latest, GUARD)
    app = TfgpuApp(settings, feed=feed)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert len(shown_pids(app)) == 4 and app.query_one(MonitorTab).has_class("-compact")
            assert app.query_one(StatusHeader).gpu_count == 2 and app.all_alerts
            assert source.reads <= 2  # the second reading, if begun, is still waiting
            source.release.set()
    finally:
        source.release.set()


async def test_a_first_snapshot_of_the_gpus_alone_is_drawn_and_the_processes_are_read_once_it_is() -> None:
    source = OneReadingSource()
    settings = Settings(demo=True, interval=3600.0)  # no second sample before the hour, unless one is taken
    feed = feed_from_here(settings, source)  # the demo's start (ui/startup.py): the GPUs alone, not started
    app = TfgpuApp(settings, feed=feed)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert app.query_one(StatusHeader).gpu_count == 2 and shown_pids(app) == []
            assert str(app.query_one("#process-caption").render()) == "Processes: reading…"
            assert "Host: CPU and memory reading…" in str(app.query_one("#host-line").render())
            await wait_until(pilot, lambda: source.reads >= 2, GUARD)  # the app started the feed
            source.release.set()
            await wait_until(pilot, lambda: len(shown_pids(app)) == 4, GUARD)
            assert str(app.query_one("#process-caption").render()).startswith("Processes (4)")
    finally:
        source.release.set()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_the_height_before_the_first_layout_is_the_laid_out_one(size: tuple[int, int]) -> None:
    app = TfgpuApp(Settings(demo=True, interval=1.0))
    async with app.run_test(size=size) as pilot:
        tab = app.query_one(MonitorTab)
        await wait_until(pilot, lambda: tab.size.height > 0)
        assert tab.size.height == size[1] - CHROME_LINES


async def test_the_help_screen_and_a_tab_built_later_are_styled() -> None:
    app = TfgpuApp(Settings(demo=False, interval=1.0, log_path=Path("/nonexistent/train.log")))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        box = app.screen.query_one("#help-box")
        assert box.styles.max_width is not None
        assert box.styles.max_width.value == 84  # styled by HelpScreen.DEFAULT_CSS
        await pilot.press("escape", "1")
        await wait_until(pilot, lambda: bool(app.query("EnvironmentTab #env-status")))
        assert app.query_one("EnvironmentTab #env-status").styles.height.is_auto


async def test_a_first_tab_other_than_the_monitor_has_its_styles_at_start() -> None:
    app = TfgpuApp(Settings(demo=True, interval=1.0), initial_tab="environment")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: bool(app.query("EnvironmentTab #env-status")))
        assert app.query_one("EnvironmentTab #env-status").styles.height.is_auto
