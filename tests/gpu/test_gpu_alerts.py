"""Alert rules, history and the simulated source (core logic, no Textual)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.helpers.gpu_alert_helpers import device, kinds, proc
from tfgpu_tui.alerts import Alert, Severity, most_urgent, needs_action, ordered
from tfgpu_tui.gpu.alert_rules import AlertRules
from tfgpu_tui.gpu.history import History
from tfgpu_tui.gpu.model import JupyterKernel
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.settings import Settings


def test_tensorflow_without_gpu_memory_is_a_cpu_fallback_only_when_gpus_exist() -> None:
    rules = AlertRules(Settings(), own_uid=1000)
    cpu_tf = proc(7, gpu=None, mib=None, sm=None, tensorflow_loaded=True, uid=1000)
    assert rules.evaluate(0, [device(util=50)], [cpu_tf]) == []  # a job importing TF before its context
    alerts = rules.evaluate(2, [device(util=50)], [cpu_tf])
    assert kinds(alerts) == [("cpu_fallback", "PID 7")] and alerts[0].severity is Severity.WARNING
    assert rules.evaluate(3, [], [cpu_tf]) == []
    assert rules.evaluate(4, [device(util=50)], [replace(cpu_tf, tensorflow_loaded=False)]) == []


def test_cpu_tensorflow_of_others_or_with_hidden_gpus_is_info_and_own_children_are_silent() -> None:
    rules = AlertRules(Settings(fallback_seconds=0), own_uid=1000)
    others = proc(7, gpu=None, mib=None, sm=None, tensorflow_loaded=True, uid=1001, user="bob")
    hidden = proc(8, gpu=None, mib=None, sm=None, tensorflow_loaded=True, uid=1000, gpus_hidden=True)
    ours = proc(9, gpu=None, mib=None, sm=None, tensorflow_loaded=True, uid=1000, own_child=True)
    stale_child = proc(10, mib=70000.0, sm=0.0, tensorflow_loaded=True, uid=1000, own_child=True)
    alerts = rules.evaluate(0, [device(util=0, used=70000)], [others, hidden, ours, stale_child])
    assert kinds(alerts) == [("cpu_fallback", "PID 7"), ("cpu_fallback", "PID 8")]
    assert all(a.severity is Severity.INFO and not needs_action(a) for a in alerts)
    assert "bob" in alerts[0].message and "CUDA_VISIBLE_DEVICES" in alerts[1].message
    assert AlertRules(Settings(stale_minutes=0)).evaluate(9, [device(util=0)], [stale_child]) == []


def test_gpu_idle_while_tensorflow_holds_memory_after_the_window() -> None:
    rules = AlertRules(Settings(fallback_seconds=15))
    holder = proc(8, sm=0.0, tensorflow_loaded=True)
    assert rules.evaluate(0, [device(util=0)], [holder]) == []
    assert rules.zero_util_seconds == {0: 0}  # the card's "0 % for N s" starts on the first sample
    assert rules.evaluate(14, [device(util=0)], [holder]) == [] and rules.zero_util_seconds == {0: 14}
    alerts = rules.evaluate(15, [device(util=0)], [holder])
    assert kinds(alerts) == [("cpu_fallback", "GPU 0")] and "0 % over 15 s" in alerts[0].message
    assert "PID 8" in alerts[0].message and "1000 MiB" in alerts[0].message
    assert rules.evaluate(16, [device(util=3)], [holder]) == [] and rules.zero_util_seconds == {}
    assert rules.evaluate(20, [device(util=0)], [holder]) == []
    # not TensorFlow: no fallback alert
    assert AlertRules(Settings(fallback_seconds=0)).evaluate(0, [device(util=0)], [proc(9)]) == []


def test_stale_vram_worst_offender_first_names_the_kill_key() -> None:
    rules = AlertRules(Settings(stale_minutes=10))
    plain = proc(10, mib=20000.0)
    kernel = proc(11, mib=8000.0, jupyter=JupyterKernel("abc", "nb.ipynb"))
    busy = proc(12, sm=40.0)
    assert rules.evaluate(0, [device(util=40)], [plain, kernel, busy]) == []
    assert rules.idle_for(plain) == 0 and rules.idle_for(busy) is None
    alerts = rules.evaluate(600, [device(util=40)], [plain, kernel, busy])
    assert kinds(alerts) == [("stale_vram", "PID 10"), ("stale_vram", "PID 11")]
    assert "19.5 GiB" in alerts[0].message and "idle for 10 min" in alerts[0].message
    assert "press k" in alerts[0].fix and "k ends it" not in alerts[0].message  # a dashboard key: in the fix
    assert "nb.ipynb" in alerts[1].message and "Shut the kernel down" in alerts[1].fix
    # SM activity restarts the clock
    assert rules.evaluate(601, [device(util=40)], [replace(plain, sm_percent=5.0)]) == []
    assert rules.evaluate(700, [device(util=40)], [plain]) == []


def test_action_outranks_advice_whatever_the_severity() -> None:
    rules = AlertRules(Settings(fallback_seconds=0, stale_minutes=0), own_uid=1000)
    hog = proc(1, mib=90500.0, sm=50.0, tensorflow_loaded=True)
    idle_kernel = proc(2, mib=300.0, sm=0.0)
    alerts = rules.evaluate(0, [device(util=60, used=91000.0, total=100000.0)], [hog, idle_kernel])
    assert [a.kind for a in alerts] == ["stale_vram", "memory_growth_off"]
    assert alerts[1].severity is Severity.INFO
    env_failure = Alert("env_tf_installed", Severity.CRITICAL, "TensorFlow is not installed")
    assert most_urgent([env_failure, *alerts]) is alerts[0]
    assert ordered([alerts[1], env_failure, alerts[0]]) == [alerts[0], env_failure, alerts[1]]
    assert most_urgent([alerts[1], env_failure]) is env_failure


def test_stale_without_per_process_sm_uses_the_gpu_utilization() -> None:
    rules = AlertRules(Settings(stale_minutes=1))
    holder = proc(14, sm=None)
    rules.evaluate(0, [device(util=0)], [holder])
    assert kinds(rules.evaluate(60, [device(util=0)], [holder])) == [("stale_vram", "PID 14")]
    assert rules.evaluate(120, [device(util=30)], [holder]) == []


def test_stale_uses_jupyter_last_activity_immediately() -> None:
    rules = AlertRules(Settings(stale_minutes=10))
    kernel = proc(
        13,
        jupyter=JupyterKernel("k", "a.ipynb", execution_state="idle", last_activity="1970-01-01T00:00:00Z"),
    )
    assert kinds(rules.evaluate(3600, [device(util=40)], [kernel])) == [("stale_vram", "PID 13")]
    busy_kernel = replace(kernel, jupyter=replace(kernel.jupyter, execution_state="busy"))
    assert AlertRules(Settings()).evaluate(3600, [device(util=40)], [busy_kernel]) == []


@pytest.mark.parametrize(("used", "expected"), [(75999.0, []), (76000.0, [("memory_full", "GPU 0")])])
def test_memory_nearly_full(used: float, expected: list) -> None:
    rules = AlertRules(Settings(memory_full_percent=95))
    alerts = rules.evaluate(0, [device(used=used, total=80000.0, util=50)], [proc(1, mib=used, sm=50.0)])
    assert kinds(alerts) == expected
    if alerts:
        assert "set_memory_growth" in alerts[0].fix


def test_memory_no_listed_process_holds_is_pointed_out() -> None:
    rules = AlertRules(Settings())
    gpu = device(util=50, used=30000.0, total=80000.0)
    assert kinds(rules.evaluate(0, [gpu], [proc(1, mib=2000.0, sm=10.0)])) == [("unattributed_vram", "GPU 0")]
    assert rules.evaluate(0, [gpu], [proc(1, mib=29000.0, sm=10.0)]) == []
    assert (
        rules.evaluate(0, [gpu], [proc(1, mib=None, sm=10.0)]) == []
    )  # WDDM/MIG: per-process memory unknown


def test_history_keeps_five_minutes_and_skips_missing_readings() -> None:
    history = History()
    for t in range(0, 400, 10):
        history.add(float(t), [device(util=None if t == 390 else float(t % 100), used=8000.0, total=80000.0)])
    times, values = history.series(0, "utilization")
    assert times[0] >= 390 - 300 and times[-1] == 380 and 390.0 not in times
    assert history.series(0, "memory_percent")[1][-1] == pytest.approx(10.0)
    assert history.series(5, "utilization") == ([], [])
    with pytest.raises(ValueError):
        history.series(0, "power")


def test_demo_scene_raises_the_documented_alerts() -> None:
    clock = [1_000_000.0]
    sampler = Sampler(Settings(demo=True), SimulatedSource(clock=lambda: clock[0]))
    assert sampler.simulated
    snapshot = sampler.sample()
    assert len(snapshot.devices) == 2 and snapshot.simulated and snapshot.error is None
    by_kind = {a.kind for a in snapshot.alerts}
    assert {"cpu_fallback", "stale_vram"} <= by_kind
    assert any(r.gpu_index is None and r.tensorflow_loaded for r in snapshot.processes)
    assert any(r.jupyter and r.jupyter.notebook_path for r in snapshot.processes)
    assert snapshot.devices[0].fan_percent is None and "fan" in snapshot.devices[0].unavailable
    first = snapshot.devices[0].utilization_percent
    points = len(sampler.history.series(0, "utilization")[1])  # the replayed past plus this sample
    clock[0] += 4
    assert sampler.sample().devices[0].utilization_percent != first  # numbers move
    assert len(sampler.history.series(0, "utilization")[1]) == points + 1


def test_scaled_simulation_for_benchmarks() -> None:
    sampler = Sampler(Settings(), SimulatedSource(gpus=8, processes_per_gpu=8))
    snapshot = sampler.sample()
    assert (
        len(snapshot.devices) == 8 and len([p for p in snapshot.processes if p.gpu_index is not None]) == 64
    )
