"""SVG snapshots of every tab at 80x24, 120x40 and 160x48 on the demo source (pytest-textual-snapshot).

The demo is made repeatable here: the simulated GPUs run on a fixed clock, the host line's CPU/memory and
the refresh cost are fixed, the user, home and host names are fixed, the Training tab follows a copy of a
fixed log (by a relative path), and the Batch probe sees the simulated GPUs only. Update with
``pytest tests/test_snapshots.py --snapshot-update`` after a deliberate change, and look at the SVGs in
``tests/__snapshots__/`` before committing them.
"""

from __future__ import annotations

import getpass
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable
from waiting import wait_until

from tfgpu_tui.gpu import simulated
from tfgpu_tui.gpu.feed import SnapshotFeed
from tfgpu_tui.gpu.model import HostStats
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui import batch_probe
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.environment import EnvironmentTab
from tfgpu_tui.ui.monitor import MonitorTab
from tfgpu_tui.ui.widgets.epoch_table import EpochTable
from tfgpu_tui.ui.widgets.probe_form import ProbeForm, columns_that_fit

FIXED_NOW = 1_767_225_600.0  # 2026-01-01 00:00 UTC
HOST = HostStats(cpu_percent=37.0, cpu_count=16, memory_used_mib=24_576.0, memory_total_mib=128_000.0)
SIZES = [(80, 24), (120, 40), (160, 48)]
TRAINING_LOG = Path(__file__).parent / "fixtures" / "training" / "screenshot_demo.log"


class FrozenSource(simulated.SimulatedSource):
    """The demo's simulated GPUs at one fixed instant, on a fixed host."""

    def stats(self) -> HostStats:
        return HOST


@pytest.fixture
def frozen_demo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Fix what the demo takes from the machine; the working directory holds train.log."""
    monkeypatch.setattr(getpass, "getuser", lambda: "ana")
    monkeypatch.setenv("HOME", "/home/ana")  # the simulated machine's Python lives in ~/venvs/tf
    monkeypatch.setattr(socket, "gethostname", lambda: "gpu-box")
    monkeypatch.setattr(batch_probe, "gpu_devices", lambda: [])
    shutil.copy(TRAINING_LOG, tmp_path / "train.log")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def demo_app(tab: str) -> TfgpuApp:
    """The demo on a fixed clock: the simulated GPUs, the snapshots' stamps (a kernel's idle time counts
    from its last activity on that clock) and a refresh that costs 0.0 ms."""
    settings = Settings(
        demo=True,
        python="python3",
        log_path=Path("train.log"),
        log_path_given=True,
        checkpoints_dir=Path("ckpt"),
    )
    source = FrozenSource(gpus=settings.demo_gpus, clock=lambda: FIXED_NOW)
    sampler = Sampler(settings, source, clock=lambda: FIXED_NOW, timer=lambda: 0.0)
    return TfgpuApp(settings, initial_tab=tab, feed=SnapshotFeed(settings, sampler=sampler))


async def monitor_ready(pilot: Pilot) -> None:
    tab = pilot.app.query_one(MonitorTab)
    await wait_until(pilot, lambda: tab.snapshot is not None and pilot.app.all_alerts, timeout=20)
    await pilot.pause(1.0)


async def environment_ready(pilot: Pilot) -> None:
    tab = pilot.app.query_one(EnvironmentTab)
    await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=20)
    tab.reveal("cuda_libraries")  # a finding with a fix
    table = tab.query_one("#env-findings", DataTable)

    def revealed() -> bool:  # selected, and scrolled into view (the picture was taken before, under load)
        finding = tab.selected_finding()
        top, rows = int(table.scroll_y), table.size.height - table.header_height
        return finding is not None and finding.id == "cuda_libraries" and top <= table.cursor_row < top + rows

    await wait_until(pilot, revealed, timeout=20)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.5)


async def training_ready(pilot: Pilot) -> None:
    table = pilot.app.query_one(EpochTable)
    await wait_until(pilot, lambda: table.row_count >= 1, timeout=20)
    await pilot.pause(2.5)  # the plots are drawn at most every 2 s


async def probe_ready(pilot: Pilot) -> None:
    form = pilot.app.query_one(ProbeForm)

    def settled() -> bool:  # as many groups a row as fit
        widths = [group.outer_size.width for group in form.query(".form-group")]
        wanted = columns_that_fit(widths, form.content_region.width) if all(widths) else 0
        return form.styles.grid_size_columns == wanted

    await wait_until(pilot, settled, timeout=10)
    await pilot.pause(0.5)


READY: dict[str, Callable[[Pilot], object]] = {
    "monitor": monitor_ready,
    "environment": environment_ready,
    "training": training_ready,
    "probe": probe_ready,
}


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("tab", list(READY))
def test_tab_snapshot(snap_compare, frozen_demo: Path, tab: str, size: tuple[int, int]) -> None:
    assert snap_compare(demo_app(tab), terminal_size=size, run_before=READY[tab])
