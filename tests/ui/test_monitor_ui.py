"""The Monitor tab through the pilot on the simulated source: cards, table, sorting, kill, no driver."""

from __future__ import annotations

import itertools

from textual.pilot import Pilot
from textual.widgets import OptionList

from tests.helpers.gpu_sources import ScriptedSource
from tests.helpers.monitor_helpers import (
    CPU_JOB,
    FAST,
    KERNEL,
    OTHER_USER,
    TRAINING,
    MonitorOnly,
    record_notifications,
    select_pid,
    shown_pids,
    wait_for_table,
)
from tests.helpers.waiting import wait_until
from tfgpu_tui.gpu.feed import FeedUpdate, SnapshotFeed
from tfgpu_tui.gpu.history import GpuHistory, relative_series
from tfgpu_tui.gpu.model import NvmlUnavailable, Snapshot
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.gpu.source import GpuReading
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.feed_link import FeedUpdated
from tfgpu_tui.ui.header import StatusHeader
from tfgpu_tui.ui.monitor import MonitorTab
from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel
from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill
from tfgpu_tui.ui.widgets.gpu_card import GpuCard
from tfgpu_tui.ui.widgets.history_plot import HistoryPlot
from tfgpu_tui.ui.widgets.process_table import ProcessTable


async def test_cards_plots_table_and_header_show_the_simulation() -> None:
    app = TfgpuApp(Settings(demo=True, interval=FAST))
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(MonitorTab)
        await wait_until(pilot, lambda: len(shown_pids(app)) == 4 and len(app.query(GpuCard)) == 2)
        cards = [str(card.render()) for card in app.query(GpuCard)]
        assert "GPU 0 NVIDIA A100-SXM4-80GB" in cards[0] and "GPU 1" in cards[1] and "Fan N/A" in cards[0]
        assert len(app.query(HistoryPlot)) == 2
        assert shown_pids(app) == [TRAINING, KERNEL, OTHER_USER, CPU_JOB]  # GPU memory, largest first
        table = app.query_one(ProcessTable)
        commands = [str(row.cells[-1]) for row in table.rows_shown]
        assert "notebook experiments/resnet_finetune.ipynb" in commands[1]
        assert table.rows_shown[-1].cells[2] == "CPU"
        host_line = str(app.query_one("#host-line").render())
        assert "cores" in host_line and "refresh" in host_line and "ms" in host_line
        header = app.query_one(StatusHeader)
        await wait_until(pilot, lambda: header.gpu_count == 2 and header.alert is not None)
        assert header.simulated
        alerts = app.query_one(AlertsPanel)
        assert alerts.display and alerts.alerts == tab.snapshot.alerts
        assert all(alert.fix for alert in alerts.alerts)


async def test_history_grows_with_samples() -> None:
    app = MonitorOnly(Settings(demo=True, interval=FAST), SimulatedSource(), plot_seconds=0.0)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: len(app.query(HistoryPlot)) == 2)
        plot = app.query(HistoryPlot).first()
        await wait_until(pilot, lambda: plot.history is not None and len(plot.history.utilization[0]) >= 2)
        xs = plot.history.utilization[0]
        assert all(-300 <= x <= 0 for x in xs) and xs == sorted(xs)


async def wait_for_samples(pilot: Pilot, tab: MonitorTab, count: int) -> None:
    """Let `count` more snapshots reach the tab."""
    seen = [tab.snapshot]

    def arrived() -> bool:
        if tab.snapshot is not seen[-1]:
            seen.append(tab.snapshot)
        return len(seen) > count

    await wait_until(pilot, arrived)


def demo_snapshot(sampler: Sampler) -> FeedUpdate:
    """A snapshot of the demo scene with each GPU's history, as the feed sends it."""
    snapshot = sampler.sample()
    histories = tuple(
        GpuHistory(
            device.index,
            relative_series(sampler.series(device.index, "utilization"), snapshot.timestamp),
            relative_series(sampler.series(device.index, "memory_percent"), snapshot.timestamp),
        )
        for device in snapshot.devices
    )
    return FeedUpdate(snapshot, histories)


async def test_the_plots_show_the_histories_they_receive_and_keep_them_without() -> None:
    sampler = Sampler(Settings(demo=True), SimulatedSource())
    app = MonitorOnly(Settings(demo=True))  # no feed: the test posts what the feed would
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(MonitorTab)
        first = demo_snapshot(sampler)
        tab.post_message(FeedUpdated(first))
        await wait_until(
            pilot, lambda: [plot.history is None for plot in app.query(HistoryPlot)] == [False] * 2
        )
        plot = app.query(HistoryPlot).first()
        assert plot.history == first.histories[0]
        tab.post_message(FeedUpdated(FeedUpdate(sampler.sample())))  # no histories: the plots stay
        await wait_until(pilot, lambda: tab.snapshot is not first.snapshot)
        assert plot.history == first.histories[0] and len(shown_pids(app)) == 4
        second = demo_snapshot(sampler)
        tab.post_message(FeedUpdated(second))
        await wait_until(pilot, lambda: plot.history == second.histories[0])


async def test_a_hidden_monitor_is_not_built_while_the_header_is_fed_at_the_idle_rate() -> None:
    settings = Settings(demo=True, interval=FAST)
    feed = SnapshotFeed(settings, idle_seconds=1.0)  # nothing shown wants a rate: every 1 s, not 0.25 s
    app = TfgpuApp(settings, initial_tab="probe", feed=feed)
    seen: list[Snapshot] = []
    async with app.run_test(size=(160, 50)) as pilot:
        feed.subscribe(lambda update: seen.append(update.snapshot))
        await wait_until(pilot, lambda: app.query_one(StatusHeader).gpu_count == 2)
        await wait_until(pilot, lambda: len(seen) >= 3, timeout=60)
        # hidden: a sample each 1 s, not each 0.25 s. Each gap between the samples' own timestamps is bounded
        # below (load only stretches it), not the number of samples in a wall-clock window: a gap is the
        # period less at most what taking the earlier sample cost (its sample_ms); 2 * FAST is twice the
        # shown rate and leaves half the idle period for the sampling thread being scheduled late
        gaps = [b.timestamp - a.timestamp + (a.sample_ms or 0) / 1000 for a, b in itertools.pairwise(seen)]
        assert min(gaps) >= 2 * FAST, gaps
        assert app.query_one(StatusHeader).alert is not None  # the demo's alerts reach the header
        assert not app.query(MonitorTab)  # the header does not need the Monitor
        await pilot.press("2")
        await wait_until(pilot, lambda: len(shown_pids(app)) == 4 and len(app.query(GpuCard)) == 2)
        await wait_until(pilot, lambda: all(plot.history is not None for plot in app.query(HistoryPlot)))


async def test_sort_keys_and_header_click_change_the_order() -> None:
    app = TfgpuApp(Settings(demo=True, interval=FAST))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        tab = app.query_one(MonitorTab)
        await pilot.press("s")  # SM %
        assert tab.sort_by == "sm" and shown_pids(app)[0] == TRAINING
        await pilot.press("s")  # PID, smallest first
        assert shown_pids(app) == [KERNEL, OTHER_USER, TRAINING, CPU_JOB]
        await pilot.press("r")
        assert shown_pids(app) == [CPU_JOB, TRAINING, OTHER_USER, KERNEL]
        await pilot.press("s")  # running time, longest first
        assert shown_pids(app) == [KERNEL, TRAINING, OTHER_USER, CPU_JOB]
        assert "sorted by running time, longest first" in str(app.query_one("#process-caption").render())
        await pilot.click(ProcessTable, offset=(1, 0))  # the PID column's header
        await pilot.pause()
        assert tab.sort_by == "pid" and shown_pids(app)[0] == KERNEL


async def test_selection_follows_the_process_not_the_row() -> None:
    app = TfgpuApp(Settings(demo=True, interval=FAST))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        await select_pid(pilot, OTHER_USER)
        table = app.query_one(ProcessTable)
        await pilot.press("s", "s")  # PID order moves OTHER_USER from row 2 to row 1
        assert table.cursor_row == 1 and table.selected.process.pid == OTHER_USER
        await wait_for_samples(pilot, app.query_one(MonitorTab), 2)  # refreshes keep it there (no sleep)
        assert table.selected.process.pid == OTHER_USER


async def test_kill_confirmed_ends_the_process_and_frees_memory() -> None:
    app = TfgpuApp(Settings(demo=True, interval=FAST, kill_grace_seconds=0.5))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        tab = app.query_one(MonitorTab)
        used_before = next(d for d in tab.snapshot.devices if d.index == 1).memory_used_mib
        await select_pid(pilot, KERNEL)
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        dialog = app.screen
        choices = dialog.query_one(OptionList)
        assert app.focused is choices and choices.highlighted_option.id == "cancel"
        body = str(dialog.query_one("#confirm-kill-body").render())
        assert f"PID {KERNEL}" in body and "ipykernel_launcher" in body and "18.0 GiB on GPU 1" in body
        notifications = record_notifications(app)
        await pilot.press("t")  # SIGTERM, by its key
        await wait_until(
            pilot, lambda: not tab.kill_running and "freed" in tab.kill_status.lower(), timeout=10
        )
        assert any("freed" in message.lower() for _title, message in notifications)
        await wait_until(pilot, lambda: KERNEL not in shown_pids(app))
        used_after = next(d for d in tab.snapshot.devices if d.index == 1).memory_used_mib
        assert used_after < used_before - 18000


async def test_kill_cancelled_sends_nothing() -> None:
    source = SimulatedSource()
    sent: list[int] = []
    terminate = source.terminate
    source.terminate = lambda row, *args, **kwargs: sent.append(row.pid) or terminate(row, *args, **kwargs)
    app = MonitorOnly(Settings(demo=True, interval=FAST), source)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        await select_pid(pilot, TRAINING)
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        await pilot.press("escape")
        assert not isinstance(app.screen, ConfirmKill)
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        await pilot.press("enter")  # focus starts on Cancel, so Enter cancels too
        assert not isinstance(app.screen, ConfirmKill)
        await wait_for_samples(pilot, app.query_one(MonitorTab), 3)  # three refreshes later (no fixed sleep)
        assert sent == [] and TRAINING in shown_pids(app)
        assert app.query_one(MonitorTab).kill_status == ""


async def test_readonly_refuses_with_a_message_and_no_dialog() -> None:
    app = TfgpuApp(Settings(demo=True, interval=FAST, readonly=True))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        await select_pid(pilot, TRAINING)
        notifications = record_notifications(app)
        await pilot.press("k")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmKill)
        tab = app.query_one(MonitorTab)
        assert "read-only" in tab.kill_status.lower() or "readonly" in tab.kill_status.lower()
        assert any(f"PID {TRAINING}" in title for title, _message in notifications)
        assert TRAINING in shown_pids(app)


class NoDriverSource(ScriptedSource):
    """A GPU source that finds no NVIDIA driver, as on a machine without one."""

    def read(self) -> GpuReading:
        return GpuReading(
            NvmlUnavailable(
                "library_not_found", "libnvidia-ml.so.1 was not found", "install the NVIDIA driver"
            ),
            None,
        )


async def test_no_driver_says_why_and_still_shows_the_host() -> None:
    app = MonitorOnly(Settings(interval=FAST), NoDriverSource())
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(MonitorTab)
        await wait_until(pilot, lambda: tab.snapshot is not None)
        panel = app.query_one("#no-gpu")
        text = str(panel.render())
        assert panel.display and "Nothing to monitor" in text and "libnvidia-ml.so.1 was not found" in text
        assert "Fix: install the NVIDIA driver" in text
        assert "cores" in str(app.query_one("#host-line").render())
        assert not app.query(GpuCard)
        assert all(alert.kind != "no_gpu" for alert in app.query_one(AlertsPanel).alerts)  # said once, above
        assert "To try the dashboard on simulated GPUs: tfgpu-tui --demo" in text
        caption = str(app.query_one("#process-caption").render())
        assert "TensorFlow processes on the CPU" in caption and "GPU memory" not in caption


async def test_real_settings_without_driver_do_not_crash() -> None:
    """On this machine (and in CI) there is no NVIDIA driver: the real NVML path must explain that."""
    app = TfgpuApp(Settings(interval=FAST))
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(MonitorTab)
        await wait_until(pilot, lambda: tab.snapshot is not None, timeout=60)
        if tab.snapshot.error is None:  # a machine with a working driver shows its GPUs instead
            assert len(app.query(GpuCard)) == len(tab.snapshot.devices)
            return
        assert "Nothing to monitor" in str(app.query_one("#no-gpu").render())
        await wait_until(pilot, lambda: app.query_one(StatusHeader).no_gpu_reason != "")
        header = str(app.query_one(StatusHeader).render())
        assert "no GPU to monitor" in header and "No GPU" not in header  # said once
