"""SVG snapshots of every tab at 80x24, 120x40 and 160x48 on the demo source (pytest-textual-snapshot).

The demo is made repeatable here: the simulated GPUs run on a fixed clock, the host line's CPU/memory and
the refresh cost are fixed, the user, home and host names are fixed, the Training tab follows a copy of a
fixed log (by a relative path), and the Batch probe sees the simulated GPUs only. Update with
``pytest tests/ui/test_snapshots.py --snapshot-update`` after a deliberate change, and look at the SVGs in
``tests/ui/__snapshots__/`` before committing them.
"""

from __future__ import annotations

import getpass
import shutil
import socket
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.helpers.paths import FIXTURES
from tests.helpers.tab_ready import READY, screen_still
from tfgpu_tui.gpu import simulated
from tfgpu_tui.gpu.feed import SnapshotFeed
from tfgpu_tui.gpu.model import HostStats
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui import batch_probe
from tfgpu_tui.ui.app import TfgpuApp

FIXED_NOW = 1_767_225_600.0  # 2026-01-01 00:00 UTC
HOST = HostStats(cpu_percent=37.0, cpu_count=16, memory_used_mib=24_576.0, memory_total_mib=128_000.0)
SIZES = [(80, 24), (120, 40), (160, 48)]
TRAINING_LOG = FIXTURES / "training" / "screenshot_demo.log"


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


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("tab", list(READY))
def test_tab_snapshot(snap_compare, frozen_demo: Path, tab: str, size: tuple[int, int]) -> None:
    async def ready_and_still(pilot: Pilot) -> None:
        await READY[tab](pilot)
        await screen_still(pilot)

    assert snap_compare(demo_app(tab), terminal_size=size, run_before=ready_and_still)
