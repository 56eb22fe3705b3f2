"""--demo describes one simulated machine in every tab: the GPU simulation, the Environment tab's demo and the
simulated batch probe all read gpu/simulated.py's DEMO_MACHINE, and the probe's trials run out of memory
where the simulated GPU does."""

from __future__ import annotations

import json
import signal
from dataclasses import asdict

import pytest
from textual.widgets import DataTable, Static

from tests.helpers.waiting import wait_until
from tfgpu_tui.env.check_run import full_report
from tfgpu_tui.env.simulated import simulated_environment
from tfgpu_tui.gpu.simulated import DEMO_MACHINE, SimulatedSource
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.simulated import SimulatedGpus, SimulatedTrialRunner
from tfgpu_tui.probe.trial import OOM
from tfgpu_tui.probe.trial_runner import run_probe
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp


def test_the_environment_demo_is_the_simulated_machine() -> None:
    source = SimulatedSource(gpus=3)
    reading = source.read()
    facts, probe = simulated_environment(3, source=source)
    assert reading.driver.driver_version.startswith(DEMO_MACHINE.driver_version)
    assert facts.nvml.driver.driver_version == DEMO_MACHINE.driver_version
    names = [DEMO_MACHINE.gpu_name] * 3
    assert [d.name for d in facts.nvml.devices] == [d.name for d in reading.devices] == names
    assert {(p.pid, p.gpu_index, p.memory_mib) for p in facts.nvml.processes} == {
        (p.pid, p.gpu_index, p.memory_mib) for p in reading.processes
    }
    assert facts.interpreter.python == facts.interpreter.executable == DEMO_MACHINE.python
    assert [gpu["device_name"] for gpu in probe.outcome.data["physical_gpus"]] == names
    everything = json.dumps([asdict(facts), probe.outcome.data, probe.outcome.stderr], default=str)
    for other_machine in ("RTX 4090", "/home/ana/", "compute capability: 8.9"):
        assert other_machine not in everything
    findings = {finding.id: finding for finding in full_report(facts, probe).findings}
    assert DEMO_MACHINE.driver_version in findings["driver"].detail
    assert "PID 39012 on GPU 1 (18432 MiB)" in findings["gpu_processes"].detail  # the Monitor's stale kernel


def test_simulated_trials_run_out_of_memory_where_the_simulated_gpu_does() -> None:
    source = SimulatedSource()
    gpus = SimulatedGpus(source)
    free = gpus.free()["GPU:0"]
    reading = source.read()
    device = reading.devices[0]
    assert free == device.memory_total_mib - device.memory_used_mib
    budget = gpus.budget("GPU:0")
    assert budget.mb == free and "simulated" in budget.source
    request = ProbeRequest(model="builtin:resnet50", device="GPU:0", budget_mb=free).resolved()
    result = run_probe(request, SimulatedTrialRunner(request, gpus, trial_seconds=0))
    assert not result.error and result.max_batch is not None
    fitting = [t for t in result.trials if t.fits]
    assert all(t.peak_mb <= free and t.peak_source == "simulated" for t in fitting)
    assert any(t.result == OOM and t.batch_size > result.max_batch for t in result.trials)
    # A process ended in the simulation (the Monitor's k) frees its memory for the probe too.
    kernel = next(row for row in source.describe(reading.processes) if row.pid == 41873)
    source.terminate(kernel, 0.0, first_signal=signal.SIGTERM)
    assert gpus.free()["GPU:0"] > free
    assert gpus.budget("GPU:7").mb is None


@pytest.mark.usefixtures("quick_simulated_trials")
async def test_every_tab_of_the_demo_is_usable_and_says_simulated() -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab="probe")
    async with app.run_test(size=(120, 40)) as pilot:
        from tfgpu_tui.ui.batch_probe import BatchProbeTab

        tab = app.query_one(BatchProbeTab)
        status = app.query_one("#probe-status", Static)
        assert "SIMULATED" in str(status.render())
        await wait_until(pilot, lambda: app.focused is not None and app.focused.id == "probe-start")
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: tab.result is not None and not tab.running, timeout=60)
        assert not tab.result.error, tab.result.error
        assert tab.result.max_batch and app.query_one("#probe-trials", DataTable).row_count > 0
        assert "SIMULATED" in str(status.render()) and "simulated" in tab.result.request.budget_source
        assert app.query_one("#probe-summary", Static).border_title == "SIMULATED"
        # The Environment tab checks the simulated machine's Python and GPUs, not this machine's.
        await pilot.press("1")
        await wait_until(pilot, lambda: app.active_tab == "environment")
        from tfgpu_tui.ui.environment import EnvironmentTab

        env = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: env.report is not None and env.report.complete, timeout=60)
        env_status = str(app.query_one("#env-status", Static).render())
        from tfgpu_tui.ui.interpreter import home_short

        assert "SIMULATED" in env_status and home_short(DEMO_MACHINE.python) in env_status
        driver = next(f for f in env.report.findings if f.id == "driver")
        assert DEMO_MACHINE.gpu_name in driver.detail and DEMO_MACHINE.driver_version in driver.detail
        # Once the app's feed samples, every tab reads its simulation (a process ended there is gone in all).
        await wait_until(pilot, lambda: app.feed.sampler is not None, timeout=60)
        assert env.simulated_gpus() is app.feed.sampler.source
