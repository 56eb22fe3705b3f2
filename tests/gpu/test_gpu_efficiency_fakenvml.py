"""End to end against fakenvml (a scripted libnvidia-ml.so.1, real nvidia-ml-py): GPM activity, clock event
reasons and the PCIe link read through NVML, and the diagnoses they lead to, with their near misses: a healthy
busy H100, an A100 without GPM, an idle GPU with a downshifted link; on MIG per GPU instance; a real
tensorflow-cpu child as the training job where a rule needs TensorFlow loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.waiting import wait_for

H100 = 'name="NVIDIA H100 80GB HBM3" total_mib=81559'
NO_GPM = "not measurable on this GPU (GPM needs Hopper or newer)"
HANG_GUARD_SECONDS = 60.0
TF_CHILD = "import sys, tensorflow\nprint('ready', flush=True)\nsys.stdin.read()\n"


def host_scenario(pids: list[int]) -> str:
    """GPU 0 busy but idle, throttled and on a degraded link; GPU 1 a healthy busy H100; GPU 2 an A100 without
    GPM at 97 %; GPU 3 an idle H100 at its power cap whose link trained down."""
    return (
        f"device {H100} util=97 gpm_sm=8 gpm_occupancy=6 gpm_tensor=0 gpm_hmma=0 gpm_dram=12 gpm_fp32=5 "
        "gpm_fp16=0 gpm_pcie_tx_mib=300 gpm_pcie_rx_mib=900 throttle=0x4 pcie_gen=3 pcie_width=8 "
        "max_pcie_gen=5 max_pcie_width=16\n"
        f"device {H100} util=96 gpm_sm=78 gpm_occupancy=40 gpm_tensor=61 gpm_hmma=55 gpm_dram=45 gpm_fp32=20 "
        "gpm_fp16=10\n"
        'device name="NVIDIA A100-SXM4-80GB" total_mib=81920 arch=ampere cc=8.0 util=97\n'
        f"device {H100} util=0 gpm=1 throttle=0x5 pcie_gen=1 pcie_width=16 max_pcie_gen=5 max_pcie_width=16\n"
        + "".join(f"process gpu={gpu} pid={pid} used_mib=20480 sm=90\n" for gpu, pid in enumerate(pids))
    )


def gpus_json(lib: Path, scenario: Path, *args: str) -> dict:
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib), "FAKE_NVML_SCENARIO": str(scenario)}
    done = subprocess.run(
        [sys.executable, "-m", "tfgpu_tui", "gpus", "--json", *args],
        capture_output=True, text=True, env=env, timeout=HANG_GUARD_SECONDS,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def kinds(data: dict) -> set[tuple[str, int, int | None]]:
    return {(d["kind"], d["gpu_index"], d["pid"]) for d in data["diagnoses"]}


def test_gpus_json_reports_activity_clock_events_the_link_and_diagnoses(
    fakenvml_lib_dir: Path, tmp_path: Path, sleepers
) -> None:
    jobs = sleepers(4)
    path = tmp_path / "scenario.txt"
    path.write_text(host_scenario([p.pid for p in jobs]))
    data = gpus_json(fakenvml_lib_dir, path, "--window", "2")
    busy, healthy, a100, idle = data["devices"]
    assert busy["activity"] == {
        "basis": "gpm", "why_none": "", "sm_active": 8.0, "sm_occupancy": 6.0, "tensor_active": 0.0,
        "hmma_active": 0.0, "dram_active": 12.0, "fp32_active": 5.0, "fp16_active": 0.0,
        "pcie_tx_mib_s": 300.0, "pcie_rx_mib_s": 900.0, "window_seconds": busy["activity"]["window_seconds"],
        "unavailable": {},
    }  # fmt: skip
    assert busy["activity"]["window_seconds"] >= 0.1
    assert busy["clock_events"] == ["sw_power_cap"] and idle["clock_events"] == ["gpu_idle", "sw_power_cap"]
    assert busy["pcie"] == {"gen": 3, "width": 8, "max_gen": 5, "max_width": 16}
    # the share of the busy readings throttled so far; an idle GPU at its power cap was never busy
    assert (busy["throttled_percent"], healthy["throttled_percent"], idle["throttled_percent"]) == (
        100,
        0,
        None,
    )
    assert healthy["activity"]["sm_active"] == 78.0 and healthy["activity"]["tensor_active"] == 61.0
    assert a100["activity"]["basis"] == "none" and a100["activity"]["why_none"] == NO_GPM
    assert all(a100["activity"][k] is None for k in ("sm_active", "tensor_active", "dram_active"))
    assert a100["utilization_percent"] == 97  # utilisation is still shown; SM activity is never made from it
    # only GPU 0's problems, after the whole window; the healthy H100, the A100 and the idle GPU stay silent
    assert kinds(data) == {
        ("busy_not_working", 0, None),
        ("throttled", 0, None),
        ("pcie_link_degraded", 0, None),
    }
    assert data["sampled_seconds"] >= 2
    by_kind = {d["kind"]: d for d in data["diagnoses"]}
    assert "97 % utilisation, but only 8 % of its SMs" in by_kind["busy_not_working"]["summary"]
    assert "means over 2 s" in by_kind["busy_not_working"]["basis"]
    assert (
        "Gen3 x8" in by_kind["pcie_link_degraded"]["summary"]
        and "power cap" in by_kind["throttled"]["summary"]
    )
    assert {a["kind"] for a in data["alerts"]} >= {"busy_not_working", "throttled", "pcie_link_degraded"}


def test_a_per_metric_refusal_is_null_with_its_reason(fakenvml_lib_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "scenario.txt"
    path.write_text(f"device {H100} util=90 gpm_sm=55 gpm_tensor=NA\n")
    [device] = gpus_json(fakenvml_lib_dir, path, "--window", "0")["devices"]
    assert device["activity"]["basis"] == "gpm" and device["activity"]["sm_active"] == 55.0
    assert device["activity"]["tensor_active"] is None
    assert device["activity"]["unavailable"] == {"tensor_active": "not supported by this GPU"}


def test_gpm_refused_or_failing_says_why_and_the_rest_carries_on(
    fakenvml_lib_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "scenario.txt"
    path.write_text(
        f"device {H100} util=90 gpm_sm=55\n"
        f"device {H100} util=90 gpm_sm=55\n"
        f"device {H100} util=90 gpm_sm=55\n"
        "error gpu=1 field=gpm code=NO_PERMISSION\n"
        "error gpu=2 field=gpm code=FUNCTION_NOT_FOUND\n"
    )
    ok, refused, old = (d["activity"] for d in gpus_json(fakenvml_lib_dir, path, "--window", "0")["devices"])
    assert ok["sm_active"] == 55.0
    assert refused["basis"] == "none" and refused["why_none"] == "not measurable: GPM needs more privileges"
    assert (
        old["why_none"] == "not measurable with this driver or nvidia-ml-py (GPM needs driver 520 or newer)"
    )


# -- real TensorFlow as the training job ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def tf_job():
    """A real process with tensorflow-cpu imported (what makes it a training job once it holds GPU memory)."""
    child = subprocess.Popen([sys.executable, "-c", TF_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        yield child
    finally:
        child.kill()
        child.wait()


def make_sampler(**settings: object):
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.settings import Settings

    return Sampler(Settings(**settings), NvmlSource(), HostInspector(background=False))


def sample_until(sampler, found) -> object:
    """Sample (as the dashboard does, at its own pace) until `found(snapshot)`; that snapshot."""
    seen: list = []

    def check() -> bool:
        seen.append(sampler.sample())
        return bool(found(seen[-1]))

    wait_for(check, HANG_GUARD_SECONDS)
    return seen[-1]


@pytest.mark.tf
def test_tensor_cores_idle_names_the_tensorflow_job_and_spares_the_others(scenario, tf_job, sleepers) -> None:
    (plain,) = sleepers(1)
    scenario(
        f"device {H100} util=95 gpm_sm=70 gpm_tensor=0.4\n"  # fp32 training
        f"device {H100} util=95 gpm_sm=70 gpm_tensor=0\n"  # the same load, but no TensorFlow in it
        f"device {H100} util=95 gpm_sm=70 gpm_tensor=48 gpm_hmma=48\n"  # mixed precision
        'device name="NVIDIA A100-SXM4-80GB" arch=ampere cc=8.0 util=95\n'  # no GPM
        f"process gpu=0 pid={tf_job.pid} used_mib=30000 sm=95\n"
        f"process gpu=1 pid={plain.pid} used_mib=30000 sm=95\n"
        f"process gpu=2 pid={tf_job.pid} used_mib=30000 sm=95\n"
        f"process gpu=3 pid={tf_job.pid} used_mib=30000 sm=95\n"
    )
    sampler = make_sampler(efficiency_minutes=0.02)
    try:
        snapshot = sample_until(sampler, lambda s: s.diagnoses)
        snapshot = sample_until(sampler, lambda s: sampler.efficiency.pending == set())
        found = [(d.kind, d.gpu_index, d.pid) for d in snapshot.diagnoses]
        assert found == [("tensor_cores_idle", 0, tf_job.pid)]
        [diagnosis] = snapshot.diagnoses
        assert "0.4 %" in diagnosis.summary and "mixed_bfloat16" in diagnosis.fix
        alert = next(a for a in snapshot.alerts if a.kind == "tensor_cores_idle")
        assert alert.subject == f"PID {tf_job.pid}" and alert.fix == diagnosis.fix
    finally:
        sampler.close()


@pytest.mark.tf
def test_a_small_training_job_over_its_watched_life_is_over_provisioned(scenario, tf_job) -> None:
    scenario(
        f"device {H100} util=30 gpm_sm=9 gpm_tensor=5\n"
        f"device {H100} util=30 gpm_sm=9 gpm_tensor=5\n"
        f"process gpu=0 pid={tf_job.pid} used_mib=2048 sm=30\n"
        f"process gpu=1 pid={tf_job.pid} used_mib=40000 sm=30\n"  # the same job's other GPU: half its memory
    )
    sampler = make_sampler(over_provisioned_minutes=0.02)
    try:
        snapshot = sample_until(sampler, lambda s: s.diagnoses)
        [diagnosis] = snapshot.diagnoses
        assert (diagnosis.kind, diagnosis.gpu_index, diagnosis.pid) == ("over_provisioned", 0, tf_job.pid)
        assert "peaked at 2.0 GiB of GPU 0's 80 GiB (3 %) and 9 % of its SMs" in diagnosis.summary
        assert "GPM SM activity" in diagnosis.basis
    finally:
        sampler.close()


@pytest.mark.tf
def test_on_mig_each_gpu_instance_is_measured_and_judged_alone(scenario, tf_job) -> None:
    scenario(
        f"device {H100} mig_mode=1 gpm=1\n"
        'mig gpu=0 gi=1 profile="3g.40gb" total_mib=40192 gpm_sm=70 gpm_tensor=0\n'
        'mig gpu=0 gi=2 profile="3g.40gb" total_mib=40192 gpm_sm=70 gpm_tensor=45\n'
        'device name="NVIDIA A100-SXM4-80GB" total_mib=81920 arch=ampere cc=8.0 mig_mode=1\n'
        'mig gpu=1 gi=3 profile="3g.40gb" total_mib=40192\n'
        f"process gpu=0 pid={tf_job.pid} used_mib=20000 mig=0\n"
        f"process gpu=0 pid={tf_job.pid} used_mib=20000 mig=1\n"
        f"process gpu=1 pid={tf_job.pid} used_mib=20000 mig=0\n"
    )
    sampler = make_sampler(efficiency_minutes=0.02)
    try:
        snapshot = sample_until(sampler, lambda s: s.diagnoses)
        snapshot = sample_until(sampler, lambda s: sampler.efficiency.pending == set())
        assert [(d.kind, d.gpu_index, d.mig_index, d.pid) for d in snapshot.diagnoses] == [
            ("tensor_cores_idle", 0, 0, tf_job.pid)
        ]
        h100, a100 = snapshot.devices
        assert h100.activity is not None and h100.activity.basis == "none"  # the GPU instances have it
        assert [m.activity.sm_active for m in h100.mig_devices if m.activity] == [70.0, 70.0]
        assert [m.activity.tensor_active for m in h100.mig_devices if m.activity] == [0.0, 45.0]
        assert a100.mig_devices[0].activity is not None and a100.mig_devices[0].activity.why_none == NO_GPM
    finally:
        sampler.close()
