"""Live diagnoses: input-pipeline starvation, memory growth off on a shared GPU, the CPU-fallback link to the
Environment tab, each firing on its scenario and quiet on its near miss (core logic, no Textual)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.helpers.gpu_alert_helpers import device, kinds, proc
from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.env.checks import REPORT_ORDER
from tfgpu_tui.gpu.alert_rules import AlertRules
from tfgpu_tui.gpu.history import RollingMeans
from tfgpu_tui.gpu.report import snapshot_dict
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.settings import Settings

STARVING_PID = 40555  # the demo's evaluation job on GPU 1


def tf_job(pid: int = 5, gpu: int | None = 0, mib: float = 20000.0, cpu: float = 95.0, **kw):
    return proc(pid, gpu=gpu, mib=mib, sm=None, cpu_percent=cpu, tensorflow_loaded=True, **kw)


def run(rules: AlertRules, seconds: int, util, row, step: int = 1, start: int = 0) -> list[Alert]:
    """Evaluate once per `step` s for `seconds` s (util: a number or a function of time); the last alerts."""
    alerts: list[Alert] = []
    for now in range(start, start + seconds + 1, step):
        value = util(now) if callable(util) else util
        alerts = rules.evaluate(now, [device(util=value, used=21000.0)], [row])
    return alerts


def starvation(alerts: list[Alert]) -> list[Alert]:
    return [a for a in alerts if a.kind == "input_starvation"]


# -- input-pipeline starvation ------------------------------------------------------------------------------
def test_starvation_fires_after_two_minutes_of_low_utilisation_and_a_busy_cpu() -> None:
    rules = AlertRules(Settings())
    assert starvation(run(rules, 119, 30.0, tf_job())) == []  # not before the window has passed
    alerts = starvation(rules.evaluate(120, [device(util=30.0, used=21000.0)], [tf_job()]))
    assert kinds(alerts) == [("input_starvation", "PID 5")]
    alert = alerts[0]
    assert alert.severity is Severity.WARNING
    assert "30 %" in alert.message and "95 % CPU" in alert.message and "2 min" in alert.message
    for snippet in ("num_parallel_calls=tf.data.AUTOTUNE", ".cache()", ".prefetch(tf.data.AUTOTUNE)"):
        assert snippet in alert.fix


@pytest.mark.parametrize(
    ("util", "cpu", "why"),
    [
        (55.0, 95.0, "the GPU is busy enough"),
        (30.0, 20.0, "the CPU is idle too: the job waits on something else (disk, network, a lock)"),
        (0.0, 95.0, "0 % throughout is the CPU-fallback rule's case"),
    ],
)
def test_starvation_near_misses_stay_quiet(util: float, cpu: float, why: str) -> None:
    rules = AlertRules(Settings())
    assert starvation(run(rules, 600, util, tf_job(cpu=cpu), step=5)) == [], why


def test_starvation_needs_tensorflow_holding_gpu_memory() -> None:
    not_tf = replace(tf_job(), tensorflow_loaded=None)
    on_cpu = tf_job(gpu=None, mib=None)
    no_cpu_reading = replace(tf_job(), cpu_percent=None)
    for row in (not_tf, on_cpu, no_cpu_reading):
        assert starvation(run(AlertRules(Settings()), 300, 30.0, row, step=10)) == [], row


def test_starvation_judges_the_mean_so_bursty_feeding_still_counts() -> None:
    rules = AlertRules(Settings())
    bursts = run(rules, 240, lambda now: 90.0 if now % 3 == 0 else 5.0, tf_job())  # mean ~33 %
    assert kinds(starvation(bursts)) == [("input_starvation", "PID 5")]
    busy = run(AlertRules(Settings()), 240, lambda now: 95.0 if now % 3 else 0.0, tf_job())  # mean ~63 %
    assert starvation(busy) == []


def test_starvation_clears_once_the_pipeline_keeps_up() -> None:
    rules = AlertRules(Settings())
    assert starvation(run(rules, 120, 30.0, tf_job()))
    assert starvation(run(rules, 60, 95.0, tf_job(), start=121)) == []  # mean back above 50 %


def test_starvation_thresholds_and_window_come_from_settings() -> None:
    settings = Settings(starvation_minutes=0.5, starvation_util_percent=60.0, starvation_cpu_percent=150.0)
    assert starvation(run(AlertRules(settings), 30, 55.0, tf_job(cpu=200.0)))
    assert starvation(run(AlertRules(settings), 29, 55.0, tf_job(cpu=200.0))) == []
    assert starvation(run(AlertRules(settings), 30, 55.0, tf_job(cpu=120.0))) == []


def test_a_new_process_on_a_recycled_pid_starts_a_new_window() -> None:
    rules = AlertRules(Settings())
    run(rules, 100, 30.0, tf_job())
    recycled = replace(tf_job(), create_time=99.0)
    assert starvation(run(rules, 60, 30.0, recycled, start=101)) == []
    assert starvation(run(rules, 60, 30.0, recycled, start=162))


# -- memory growth off on a shared GPU ----------------------------------------------------------------------
def growth(alerts: list[Alert]) -> list[Alert]:
    return [a for a in alerts if a.kind == "memory_growth_off"]


def shared_gpu(*rows) -> list[Alert]:
    used = sum(r.gpu_memory_mib or 0.0 for r in rows) + 400.0
    return growth(
        AlertRules(Settings()).evaluate(0, [device(util=60.0, used=used, total=80000.0)], list(rows))
    )


def test_tensorflow_holding_nearly_the_whole_shared_card_is_reported() -> None:
    hog = tf_job(1, mib=76000.0)  # 95 %
    waiting = proc(2, mib=300.0, sm=0.0, user="bob")
    alerts = shared_gpu(hog, waiting)
    assert kinds(alerts) == [("memory_growth_off", "PID 1")]
    assert "95 %" in alerts[0].message and "1 other process" in alerts[0].message
    assert (
        "set_memory_growth(gpu, True)" in alerts[0].fix and "TF_FORCE_GPU_ALLOW_GROWTH=true" in alerts[0].fix
    )


def test_full_shared_card_where_tensorflow_took_what_was_left_is_reported() -> None:
    first = proc(2, mib=24000.0, sm=30.0)  # 30 %, started first
    took_the_rest = tf_job(1, mib=52000.0)  # 65 %: the card is 96 % full
    assert kinds(shared_gpu(first, took_the_rest)) == [("memory_growth_off", "PID 1")]


def test_memory_growth_near_misses_stay_quiet() -> None:
    # Alone on the card, holding 95 % is simply TensorFlow's default pre-allocation and harms no one.
    assert shared_gpu(tf_job(1, mib=76000.0)) == []
    # Two processes, the TensorFlow one at 60 % and room left: sharing works.
    assert shared_gpu(tf_job(1, mib=48000.0), proc(2, mib=8000.0, sm=30.0)) == []
    # A non-TensorFlow hog is not a memory-growth problem.
    assert shared_gpu(replace(tf_job(1, mib=76000.0), tensorflow_loaded=None), proc(2, mib=300.0)) == []


def test_memory_growth_threshold_comes_from_settings() -> None:
    rows = [tf_job(1, mib=70000.0), proc(2, mib=300.0)]  # 87.5 %
    gpu = [device(util=60.0, used=70700.0, total=80000.0)]
    assert growth(AlertRules(Settings()).evaluate(0, gpu, rows)) == []
    assert growth(AlertRules(Settings(memory_growth_percent=85.0)).evaluate(0, gpu, rows))


# -- the CPU-fallback alert points at the Environment tab's finding -----------------------------------------
def test_cpu_fallback_links_to_existing_environment_findings() -> None:
    rules = AlertRules(Settings(fallback_seconds=0))
    cpu_job = tf_job(7, gpu=None, mib=None)
    idle_holder = tf_job(8)
    alerts = rules.evaluate(0, [device(util=0.0)], [cpu_job, idle_holder])
    links = {a.subject: a.link for a in alerts if a.kind == "cpu_fallback"}
    assert links == {"PID 7": "environment:gpus_visible", "GPU 0": "environment:placement"}
    for link in links.values():
        tab, finding = link.split(":")
        assert tab == "environment" and finding in REPORT_ORDER
    data = json.loads(json.dumps([a.as_dict() for a in alerts]))
    assert {d["link"] for d in data} == set(links.values())
    assert Alert("x", Severity.INFO, "m").as_dict()["link"] == ""


# -- the rolling means and the demo --------------------------------------------------------------------------
def test_rolling_means_over_a_sliding_window() -> None:
    means = RollingMeans(window_seconds=10.0, columns=2)
    assert means.means() == (0.0, 0.0) and not means.covers(0.0)
    for t in range(0, 21):
        means.add(float(t), (float(t), 100.0))
    assert means.covers(20.0)
    assert means.means() == pytest.approx((15.0, 100.0))  # only t = 10..20 are left


def test_demo_shows_the_starving_job_from_the_first_frame() -> None:
    clock = [1_000_000.0]
    sampler = Sampler(Settings(demo=True), SimulatedSource(clock=lambda: clock[0]))
    snapshot = sampler.sample()
    assert kinds(starvation(snapshot.alerts)) == [("input_starvation", f"PID {STARVING_PID}")]
    assert growth(snapshot.alerts) == []  # no demo GPU is hogged by TensorFlow
    times, _ = sampler.history.series(0, "utilization")
    assert (
        len(times) > 100 and snapshot.timestamp - times[0] < sampler.history.window_seconds
    )  # plots start full
    exported = json.loads(json.dumps(snapshot_dict(snapshot)))
    assert "input_starvation" in {a["kind"] for a in exported["alerts"]}
    assert any(a["link"] == "environment:gpus_visible" for a in exported["alerts"])


def test_benchmark_scene_has_no_replayed_past() -> None:
    sampler = Sampler(Settings(), SimulatedSource(gpus=8, processes_per_gpu=8))
    assert sampler.history.gpu_indices() == []
