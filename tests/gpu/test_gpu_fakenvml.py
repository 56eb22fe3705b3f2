"""End to end: the real nvidia-ml-py bindings against fakenvml, a scripted libnvidia-ml.so.1.

GPU processes in a scenario are real PIDs here, so killing one through the Sampler frees its memory in the
next NVML reading. Skipped where ../shared/fakenvml or gcc is missing.
"""

from __future__ import annotations

import json

import pytest


def make_sampler(**settings: object):
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.settings import Settings

    return Sampler(Settings(**settings), NvmlSource(), HostInspector(background=False))


def test_devices_processes_and_na_fields(scenario, sleepers) -> None:
    a, b = sleepers(2)
    scenario(
        "driver 580.95.05\ncuda 13000\n"
        'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util=37 temp=45 power_mw=250000 '
        "power_limit_mw=700000 fan=NA sm_clock=1980 pstate=0\n"
        'device name="NVIDIA GeForce RTX 4090" total_mib=24564 base_used_mib=200 util=5 power_mw=NA fan=30\n'
        f"process gpu=0 pid={a.pid} used_mib=20480 sm=55 type=compute\n"
        f"process gpu=1 pid={b.pid} used_mib=1024 sm=0 type=both\n"
        "process gpu=1 pid=4194300 used_mib=777 ghost=1\n"
    )
    sampler = make_sampler()
    snapshot = sampler.sample()
    assert snapshot.error is None and snapshot.driver and snapshot.driver.driver_version == "580.95.05"
    assert snapshot.driver.cuda_driver_version == "13.0"
    h200, rtx = snapshot.devices
    assert (h200.name, h200.utilization_percent, h200.memory_used_mib, h200.power_w) == (
        "NVIDIA H200",
        37,
        20980,
        250,
    )
    assert h200.fan_percent is None and "fan" in h200.unavailable and h200.power_limit_w == 700
    assert rtx.power_w is None and rtx.fan_percent == 30 and rtx.memory_used_mib == 200 + 1024 + 777
    rows = {(r.pid, r.gpu_index): r for r in snapshot.processes}
    assert rows[(a.pid, 0)].gpu_memory_mib == 20480 and rows[(a.pid, 0)].sm_percent == 55
    assert rows[(a.pid, 0)].command == "sleep 60" and rows[(a.pid, 0)].host_state.name == "OK"
    assert [r.pid for r in snapshot.processes].count(b.pid) == 1  # listed as compute and graphics: one row
    assert rows[(4194300, 1)].host_state.name in ("NO_SUCH_PROCESS", "OTHER_NAMESPACE")
    sampler.close()


def test_kill_through_the_sampler_frees_the_memory(scenario, sleepers) -> None:
    (holder,) = sleepers(1)
    scenario(
        'device name="NVIDIA H200" total_mib=143771 base_used_mib=500\n'
        f"process gpu=0 pid={holder.pid} used_mib=20480\n"
    )
    sampler = make_sampler(kill_grace_seconds=2)
    row = next(r for r in sampler.sample().processes if r.pid == holder.pid)
    progress: list[str] = []
    outcome = sampler.kill(row, progress.append)
    assert outcome.result == "freed" and outcome.freed_mib == 20480 and outcome.signals_sent == ("SIGTERM",)
    assert "20480 MiB freed on GPU 0" in outcome.message and progress
    assert sampler.sample().devices[0].memory_used_mib == 500
    sampler.close()


@pytest.mark.parametrize(
    ("code", "kind"),
    [("DRIVER_NOT_LOADED", "driver_not_loaded"), ("LIB_RM_VERSION_MISMATCH", "version_mismatch")],
)
def test_init_errors(scenario, code: str, kind: str) -> None:
    scenario(f"error init={code}\n")
    snapshot = make_sampler().sample()
    assert snapshot.devices == [] and snapshot.error is not None and snapshot.error.kind == kind


def test_gpu_lost_after_some_samples(scenario) -> None:
    # fakenvml counts memory reads: one at start-up (static facts), then one per sample
    scenario("device\ndevice\nerror gpu=1 field=all code=GPU_IS_LOST after=3\n")
    sampler = make_sampler()
    lost = [[d.lost for d in sampler.sample().devices] for _ in range(4)]
    assert lost == [[False, False], [False, False], [False, True], [False, True]]
    assert any(a.kind == "gpu_lost" for a in sampler.last.alerts)


def test_gpus_json_command(scenario, sleepers, capsys: pytest.CaptureFixture) -> None:
    from tfgpu_tui.cli import main

    (holder,) = sleepers(1)
    scenario(
        'device name="NVIDIA H200" total_mib=1000 base_used_mib=10\n'
        f"process gpu=0 pid={holder.pid} used_mib=980\n"
    )
    assert main(["gpus", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["error"] is None
    device = data["devices"][0]
    assert {"index", "name", "utilization_percent", "memory_used_mib", "memory_total_mib"} <= set(device)
    process = next(p for p in data["processes"] if p["pid"] == holder.pid)
    assert process["gpu_index"] == 0 and process["gpu_memory_mib"] == 980 and process["command"] == "sleep 60"
    assert "memory_full" in {a["kind"] for a in data["alerts"]}
    # the CPU window opened before the program loaded: a CPU % on the one answer, over at least 0.2 s
    assert process["cpu_percent"] == 0.0 and data["sampled_seconds"] >= 0.2
