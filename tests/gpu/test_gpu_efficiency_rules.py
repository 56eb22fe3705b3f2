"""The efficiency diagnoses (gpu/efficiency.py) on readings over time: each fires on its case with its number,
basis and fix, and stays silent on its near miss and without evidence (core logic, no NVML)."""

from __future__ import annotations

from dataclasses import replace

from tests.helpers.gpu_alert_helpers import device, proc
from tfgpu_tui.gpu.efficiency import Efficiency, Thresholds, diagnosis_alert, is_training_job
from tfgpu_tui.gpu.model import Activity, DeviceSample, Diagnosis, MigDevice, no_activity
from tfgpu_tui.settings import Settings

WINDOW = 120.0
NO_GPM = no_activity("not measurable on this GPU (GPM needs Hopper or newer)")


def gpu(util: float | None = 97.0, sm: float | None = 8.0, tensor: float | None = 0.0, **kw) -> DeviceSample:
    """An H100 (compute capability 9.0) with GPM activity, unless `activity` is given."""
    activity = kw.pop("activity", Activity("gpm", sm_active=sm, tensor_active=tensor))
    base = replace(device(util=util, used=20000.0), compute_capability=(9, 0), activity=activity)
    return replace(base, **kw)


def job(pid: int = 7, tf: bool = True, mib: float = 20000.0, sm: float | None = 60.0, **kw):
    return proc(pid, mib=mib, sm=sm, tensorflow_loaded=tf, **kw)


def run(readings, processes=(), seconds: float = WINDOW, step: float = 5.0, **thresholds) -> list[Diagnosis]:
    """Evaluate every `step` s over `seconds` (readings: a device list or a function of time); the last."""
    efficiency = Efficiency(Thresholds(**thresholds))
    found: list[Diagnosis] = []
    now = 0.0
    while now <= seconds:
        devices = readings(now) if callable(readings) else readings
        found = efficiency.evaluate(now, devices, list(processes))
        now += step
    return found


def of(kind: str, found: list[Diagnosis]) -> list[Diagnosis]:
    return [d for d in found if d.kind == kind]


def test_thresholds_come_from_the_settings() -> None:
    settings = Settings(efficiency_minutes=3, sm_active_low_percent=40, over_provisioned_minutes=20)
    thresholds = Thresholds.from_settings(settings)
    assert (thresholds.window_seconds, thresholds.sm_active_low_percent) == (180, 40)
    assert thresholds.over_provisioned_seconds == 1200
    assert Thresholds.from_settings(Settings()) == Thresholds()


# -- busy_not_working --------------------------------------------------------------------------------------
def test_busy_not_working_fires_after_the_window_with_both_numbers() -> None:
    efficiency = Efficiency(Thresholds())
    assert efficiency.evaluate(0, [gpu()], []) == [] and "busy_not_working" in efficiency.pending
    [found] = of("busy_not_working", run([gpu()]))
    assert (found.gpu_index, found.pid, found.value) == (0, None, 8.0)
    assert "97 % utilisation" in found.summary and "only 8 % of its SMs" in found.summary
    assert "2 min" in found.basis and "GPM SM activity" in found.basis and "DCGM" in found.basis
    assert "jit_compile=True" in found.fix and "larger batch" in found.fix


def test_a_healthy_busy_h100_and_a_gpu_without_gpm_stay_silent() -> None:
    assert run([gpu(util=96.0, sm=75.0, tensor=60.0)]) == []
    assert of("busy_not_working", run([gpu(activity=NO_GPM)])) == []
    assert of("busy_not_working", run([gpu(util=40.0, sm=8.0)])) == []  # not busy: nothing misleads


def test_evidence_that_goes_missing_restarts_the_window() -> None:
    def readings(now: float) -> list[DeviceSample]:
        return [gpu(activity=NO_GPM)] if now == 60 else [gpu()]

    assert of("busy_not_working", run(readings, seconds=WINDOW + 55)) == []
    assert of("busy_not_working", run(readings, seconds=WINDOW + 65))


# -- tensor_cores_idle -------------------------------------------------------------------------------------
def test_tensor_cores_idle_names_the_training_job_and_mixed_precision() -> None:
    [found] = of("tensor_cores_idle", run([gpu(util=95.0, sm=70.0, tensor=0.5)], [job(7)]))
    assert (found.gpu_index, found.pid, found.value) == (0, 7, 0.5)
    assert "PID 7 keeps 70 % of the SMs busy" in found.summary and "0.5 %" in found.summary
    assert "compute capability 9.0" in found.basis and "tensor activity" in found.basis
    assert 'set_global_policy("mixed_float16")' in found.fix and "mixed_bfloat16" in found.fix
    assert "--compare-precision" in found.fix


def test_tensor_cores_idle_needs_a_training_job_a_tensor_core_gpu_gpm_and_busy_sms() -> None:
    busy_fp32 = gpu(util=95.0, sm=70.0, tensor=0.0)
    assert of("tensor_cores_idle", run([busy_fp32], [job(7, tf=False)])) == []  # not TensorFlow
    assert of("tensor_cores_idle", run([replace(busy_fp32, compute_capability=(6, 1))], [job(7)])) == []
    assert of("tensor_cores_idle", run([gpu(util=95.0, activity=NO_GPM)], [job(7)])) == []
    assert of("tensor_cores_idle", run([gpu(util=95.0, sm=70.0, tensor=45.0)], [job(7)])) == []
    assert of("tensor_cores_idle", run([gpu(util=95.0, sm=20.0, tensor=0.0)], [job(7)])) == []
    [volta] = of("tensor_cores_idle", run([replace(busy_fp32, compute_capability=(7, 0))], [job(7)]))
    assert "mixed_bfloat16" not in volta.fix  # Volta has no bfloat16


def test_is_training_job_is_tensorflow_holding_gpu_memory() -> None:
    assert is_training_job(job(1))
    assert not is_training_job(job(1, tf=False)) and not is_training_job(job(1, mib=0.0))
    assert not is_training_job(proc(1, gpu=None, tensorflow_loaded=True))


def test_on_mig_the_gpu_instance_activity_is_judged_for_the_job_on_that_mig_device() -> None:
    def mig(index: int, gi: int, sm: float, tensor: float) -> MigDevice:
        activity = Activity("gpm", sm_active=sm, tensor_active=tensor)
        return MigDevice(
            0, index, "H100 MIG 3g.40gb", "3g.40gb", None, gi, 0, 1000.0, 40000.0, activity=activity
        )

    parent = gpu(util=None, activity=no_activity("in MIG mode"), mig_mode=True,
                 mig_devices=(mig(0, 1, 70.0, 0.0), mig(1, 2, 70.0, 40.0)))  # fmt: skip
    found = run([parent], [job(7, mig_index=0), job(8, mig_index=1)])
    assert [(d.kind, d.pid, d.mig_index, d.subject) for d in found] == [("tensor_cores_idle", 7, 0, "PID 7")]
    assert found[0].summary.startswith("GPU 0:0: PID 7")


# -- throttled ---------------------------------------------------------------------------------------------
def test_throttled_reports_the_share_of_busy_time_and_the_reason() -> None:
    def readings(now: float) -> list[DeviceSample]:
        return [gpu(util=95.0, sm=80.0, clock_events=0x4 if int(now) % 10 == 0 else 0)]

    [found] = of("throttled", run(readings))
    assert "power cap" in found.summary and "52 % of the time it was busy" in found.summary
    assert "sw_power_cap" in found.basis and "nvidia-smi -pl" in found.fix
    assert found.value == 52.0


def test_an_idle_gpu_at_its_power_cap_or_idle_clocks_is_not_throttled() -> None:
    assert of("throttled", run([gpu(util=0.0, clock_events=0x1 | 0x4)])) == []
    assert of("throttled", run([gpu(util=95.0, clock_events=0x1 | 0x2)])) == []
    assert of("throttled", run([gpu(util=95.0, clock_events=None)])) == []  # not readable: no evidence
    [thermal] = of("throttled", run([gpu(util=95.0, clock_events=0x40)]))
    assert "thermal" in thermal.summary and "100 %" in thermal.summary and "airflow" in thermal.fix


# -- pcie_link_degraded ------------------------------------------------------------------------------------
def link(util: float, gen: int, width: int) -> DeviceSample:
    return gpu(util=util, sm=80.0, pcie_gen=gen, pcie_width=width, pcie_max_gen=5, pcie_max_width=16)


def test_a_busy_link_below_the_cards_maximum_is_degraded() -> None:
    [found] = of("pcie_link_degraded", run([link(95.0, 3, 8)]))
    assert "Gen3 x8 while busy" in found.summary and "Gen5 x16" in found.summary
    assert "judged only under load" in found.basis and "nvidia-smi -q -d PCI" in found.fix


def test_an_idle_gpu_with_a_downshifted_link_and_a_busy_full_link_stay_silent() -> None:
    assert of("pcie_link_degraded", run([link(0.0, 1, 16)])) == []
    assert of("pcie_link_degraded", run([link(95.0, 5, 16)])) == []
    # busy in bursts: the link trains up whenever it works (here at Gen5 x16), and down in between
    assert (
        of("pcie_link_degraded", run(lambda now: [link(95.0, 5, 16) if now % 10 else link(0.0, 1, 16)])) == []
    )


# -- over_provisioned --------------------------------------------------------------------------------------
def test_over_provisioned_after_its_whole_watched_life_with_its_peaks() -> None:
    small = job(7, mib=2048.0, sm=10.0)
    card = gpu(util=30.0, sm=12.0, memory_total_mib=81920.0)
    assert of("over_provisioned", run([card], [small], seconds=590)) == []
    [found] = of("over_provisioned", run([card], [small], seconds=600))
    assert found.pid == 7 and "peaked at 2.0 GiB of GPU 0's 80 GiB (2 %) and 12 % of its SMs" in found.summary
    assert "GPM SM activity" in found.basis and "10 min" in found.basis and "MIG slice" in found.fix
    assert "unwatched" not in found.basis
    [older] = of("over_provisioned", run([card], [replace(small, running_seconds=3 * 3600)], seconds=600))
    assert "(it had run 170 min before that, unwatched)" in older.basis


def test_a_job_that_once_used_the_card_is_not_over_provisioned() -> None:
    card = gpu(util=30.0, sm=12.0, memory_total_mib=81920.0)
    spike = lambda now: [replace(card, activity=Activity("gpm", sm_active=90.0))] if now == 300 else [card]  # noqa: E731
    assert of("over_provisioned", run(spike, [job(7, mib=2048.0)], seconds=900)) == []
    assert of("over_provisioned", run([card], [job(7, mib=40000.0)], seconds=900)) == []


def test_over_provisioned_without_gpm_rests_on_the_process_sm_percent_or_stays_silent() -> None:
    card = gpu(util=30.0, activity=NO_GPM, memory_total_mib=81920.0)
    [found] = of("over_provisioned", run([card], [job(7, mib=2048.0, sm=9.0)], seconds=600))
    assert "per-process SM %" in found.basis and "9 % of its SMs" in found.summary
    assert of("over_provisioned", run([card], [job(7, mib=2048.0, sm=None)], seconds=600)) == []


def test_a_diagnosis_is_an_alert_of_its_kind_with_its_basis_and_fix() -> None:
    [found] = of("busy_not_working", run([gpu()]))
    alert = diagnosis_alert(found)
    assert (alert.kind, alert.subject, alert.fix) == ("busy_not_working", "GPU 0", found.fix)
    assert alert.message.startswith(found.summary) and found.basis in alert.message
    assert alert.short == "SMs mostly idle: GPU 0"
