"""Links between tabs: a Monitor alert jumps to its Environment finding; a process opens its log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.monitor_helpers import CPU_JOB, FAST, select_pid, shown_pids, wait_for_table
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.environment import EnvironmentTab
from tfgpu_tui.ui.training import TrainingTab

pytestmark = pytest.mark.e2e  # real child processes


async def test_e_on_a_cpu_fallback_process_jumps_to_its_finding() -> None:
    app = TfgpuApp(Settings(demo=True, interval=FAST))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        await select_pid(pilot, CPU_JOB)
        alert = next(a for a in app.query_one("MonitorTab").snapshot.alerts if a.subject == f"PID {CPU_JOB}")
        assert alert.kind == "cpu_fallback" and alert.link.startswith("environment:")
        await pilot.press("e")
        await wait_until(pilot, lambda: app.active_tab == "environment")
        env = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: env.report is not None and env.report.complete, timeout=60)
        await pilot.pause()
        selected = env.selected_finding()
        assert selected is not None and selected.id == alert.link.partition(":")[2]


@pytest.mark.tf
async def test_l_on_a_real_tensorflow_process_follows_its_log(tmp_path: Path) -> None:
    """No driver here: the Monitor lists TensorFlow processes on the CPU; `l` follows the one's train.log."""
    log = tmp_path / "train.log"
    code = "import time, tensorflow; print('imported', flush=True); time.sleep(120)"
    with log.open("w") as handle:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=handle, stderr=handle)
    try:
        app = TfgpuApp(Settings(interval=0.25))
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_until(pilot, lambda: child.pid in shown_pids(app), timeout=90)
            await select_pid(pilot, child.pid)
            await pilot.press("l")
            await wait_until(pilot, lambda: app.active_tab == "training")
            assert app.query_one(TrainingTab).path == log
    finally:
        child.kill()
        child.wait()
