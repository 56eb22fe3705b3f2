"""The NVML layer against a fake pynvml module: every failure mode the dashboard must survive."""

from __future__ import annotations

import os

import pytest

from tests.helpers.gpu_fake_pynvml import CODES, FakeGpu, FakePynvml, now_us
from tfgpu_tui.gpu.model import HostState
from tfgpu_tui.gpu.nvml import NvmlSource
from tfgpu_tui.gpu.processes import HostInspector
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.settings import Settings


@pytest.mark.parametrize(
    ("code", "kind", "fix_words"),
    [
        ("LibraryNotFound", "library_not_found", "--gpus all"),
        ("DriverNotLoaded", "driver_not_loaded", "modprobe nvidia"),
        ("LibRmVersionMismatch", "version_mismatch", "Reboot"),
        ("NoPermission", "no_permission", "/dev/nvidia"),
        ("Unknown", "unknown", "nvidia-smi"),
    ],
)
def test_init_failures_become_a_reason_with_a_fix(code: str, kind: str, fix_words: str) -> None:
    source = NvmlSource(nvml=FakePynvml(init_error=CODES[code]))
    reading = source.read()
    assert reading.devices == [] and reading.error is not None
    assert reading.error.kind == kind
    assert fix_words in reading.error.fix


def test_sampler_without_driver_still_reports_host_and_an_alert() -> None:
    sampler = Sampler(Settings(), NvmlSource(nvml=FakePynvml(init_error=CODES["DriverNotLoaded"])))
    snapshot = sampler.sample()
    assert snapshot.error is not None and snapshot.error.kind == "driver_not_loaded"
    assert snapshot.host is not None and snapshot.host.cpu_count >= 1
    assert [a.kind for a in snapshot.alerts] == ["no_gpu"]


def test_init_is_retried_later_not_every_tick() -> None:
    fake = FakePynvml(init_error=CODES["DriverNotLoaded"])
    clock = [0.0]
    source = NvmlSource(nvml=fake, clock=lambda: clock[0], retry_seconds=30)
    source.read()
    source.read()
    assert fake.calls["init"] == 1
    fake.init_error = None  # the admin ran modprobe
    clock[0] = 31.0
    reading = source.read()
    assert fake.calls["init"] == 2 and reading.error is None and len(reading.devices) == 1


def test_no_gpus_is_explained() -> None:
    reading = NvmlSource(nvml=FakePynvml(gpus=[])).read()
    assert reading.error is not None and reading.error.kind == "no_devices"


def test_readings_and_static_info() -> None:
    fake = FakePynvml([FakeGpu(util=37, temp=45, power_mw=250000, limit_mw=700000, fan=30, used_mib=500)])
    source = NvmlSource(nvml=fake)
    device = source.read().devices[0]
    assert (device.utilization_percent, device.temperature_c, device.power_w, device.fan_percent) == (
        37,
        45,
        250,
        30,
    )
    assert device.power_limit_w == 700 and device.memory_used_mib == 500 and device.memory_total_mib == 81920
    assert source.device_info()[0].compute_capability == (9, 0)
    source.read()
    assert fake.calls["name"] == 1 and fake.calls["power_limit"] == 1  # static facts read once
    assert fake.calls["temp"] == 2


@pytest.mark.parametrize("field_name", ["fan", "power", "temp", "clock", "pstate", "util"])
def test_not_supported_field_is_na_and_not_queried_again(field_name: str) -> None:
    fake = FakePynvml([FakeGpu(errors={field_name: CODES["NotSupported"]})])
    source = NvmlSource(nvml=fake)
    for _ in range(3):
        device = source.read().devices[0]
    assert fake.calls[field_name] == 1
    assert device.unavailable and "not supported" in next(iter(device.unavailable.values()))
    assert device.memory_used_mib is not None  # the rest still works


def test_transient_error_is_na_for_that_tick_only() -> None:
    gpu = FakeGpu(errors={"temp": CODES["Timeout"]})
    source = NvmlSource(nvml=FakePynvml([gpu]))
    assert source.read().devices[0].temperature_c is None
    gpu.errors.clear()
    assert source.read().devices[0].temperature_c == 60


def test_function_not_found_falls_back_or_becomes_na() -> None:
    fake = FakePynvml([FakeGpu(compute=[(4242, 2048)])])
    fake.missing = {"compute_v3", "fan"}  # an old driver: no _v3 process list, no fan query
    source = NvmlSource(nvml=fake)
    reading = source.read()
    reading = source.read()
    assert [(p.pid, p.memory_mib) for p in reading.processes] == [(4242, 2048)]
    assert fake.calls["compute_v2"] == 2 and fake.calls["compute_v3"] == 1
    assert reading.devices[0].fan_percent is None and "driver" in reading.devices[0].unavailable["fan"]
    assert fake.calls["fan"] == 1


def test_gpu_lost_mid_session_marks_only_that_gpu() -> None:
    gpus = [FakeGpu(name="A"), FakeGpu(name="B")]
    fake = FakePynvml(gpus)
    source = NvmlSource(nvml=fake)
    assert not any(d.lost for d in source.read().devices)
    gpus[1].errors["all"] = CODES["GpuIsLost"]
    first = source.read()
    lost_calls = fake.per_gpu[1]
    second = source.read()
    assert [d.lost for d in first.devices] == [False, True] == [d.lost for d in second.devices]
    assert second.devices[1].name == "B" and second.devices[1].memory_total_mib == 81920
    assert fake.per_gpu[1] == lost_calls  # a lost GPU is not queried again
    snapshot = Sampler(Settings(), source).sample()
    assert any(a.kind == "gpu_lost" and a.subject == "GPU 1" for a in snapshot.alerts)


def test_gpu_lost_or_forbidden_at_start() -> None:
    fake = FakePynvml(
        [FakeGpu(errors={"handle": CODES["GpuIsLost"]}), FakeGpu(errors={"handle": CODES["NoPermission"]})]
    )
    lost, forbidden = NvmlSource(nvml=fake).read().devices
    assert lost.lost and not forbidden.lost
    assert forbidden.utilization_percent is None and "no handle" in forbidden.unavailable["all"]


def test_process_lists_are_deduplicated_across_compute_and_graphics() -> None:
    gpu = FakeGpu(compute=[(100, 4096), (101, 1024), (100, 4096)], graphics=[(100, 4096), (102, None)])
    reading = NvmlSource(nvml=FakePynvml([gpu])).read()
    assert sorted((p.pid, p.memory_mib) for p in reading.processes) == [(100, 4096), (101, 1024), (102, None)]


def test_process_utilization_sanity_filter() -> None:
    ts = now_us()
    gpu = FakeGpu(
        compute=[(100, 4096), (101, 1024), (102, 512)],
        samples=[(100, 55, ts), (101, 250, ts), (999, 40, ts), (102, 30, ts - 10_000_000)],
    )
    source = NvmlSource(nvml=FakePynvml([gpu]))
    sm = {p.pid: p.sm_percent for p in source.read().processes}
    # 101 reports garbage (>100), 999 is not listed, 102's sample is older than the window: all count 0
    assert sm == {100: 55, 101: 0, 102: 0}
    sm = {p.pid: p.sm_percent for p in source.read().processes}
    assert sm[100] == 0  # the same sample is not counted twice


def test_idle_gpu_not_found_means_zero_and_not_supported_means_na() -> None:
    idle = NvmlSource(nvml=FakePynvml([FakeGpu(compute=[(100, 1)])])).read()
    assert idle.processes[0].sm_percent == 0
    fake = FakePynvml([FakeGpu(compute=[(100, 1)], errors={"proc_util": CODES["NotSupported"]})])
    source = NvmlSource(nvml=fake)
    source.read()
    assert source.read().processes[0].sm_percent is None and fake.calls["proc_util"] == 1


def test_pids_not_on_the_host_stay_visible_with_a_marker() -> None:
    ghost = 4_194_301  # above the default pid_max: cannot exist here
    gpu = FakeGpu(compute=[(os.getpid(), 100), (ghost, 2048)])
    host = HostInspector(background=False, own_namespace=False)
    sampler = Sampler(Settings(), NvmlSource(nvml=FakePynvml([gpu])), host)
    rows = {r.pid: r for r in sampler.sample().processes}
    assert rows[ghost].host_state is HostState.NO_SUCH_PROCESS and rows[ghost].gpu_memory_mib == 2048
    assert rows[os.getpid()].host_state is HostState.OK and rows[os.getpid()].command
    assert rows[ghost].attribution is None and "does not exist" in (sampler.kill_refusal(rows[ghost]) or "")


def test_in_a_pid_namespace_of_its_own_no_pid_is_taken_for_a_local_process_without_its_device_file() -> None:
    """Inside a container, a PID NVML lists is a local process only if that process holds the GPU's device
    file: neither this process (holding none) nor an impossible PID is looked up; both are another
    namespace's, shown with their memory and never signalled."""
    ghost = 4_194_301
    gpu = FakeGpu(compute=[(os.getpid(), 100), (ghost, 2048)])
    inspector = HostInspector(background=False, own_namespace=True)
    sampler = Sampler(Settings(), NvmlSource(nvml=FakePynvml([gpu])), inspector)
    rows = {r.host_pid: r for r in sampler.sample().processes if r.gpu_index is not None}
    assert set(rows) == {os.getpid(), ghost}
    for row in rows.values():
        assert row.host_state is HostState.OTHER_NAMESPACE and row.local_pid is None and row.command is None
        assert "not yours to end" in (sampler.kill_refusal(row) or "")
    assert rows[ghost].gpu_memory_mib == 2048


def test_persistence_mode_off_is_an_info_alert() -> None:
    fake = FakePynvml([FakeGpu()])
    fake.nvmlDeviceGetPersistenceMode = lambda handle: 0
    alerts = Sampler(Settings(), NvmlSource(nvml=fake)).sample().alerts
    # only this GPU's alerts: a TensorFlow process elsewhere on the machine may add a CPU-fallback one
    alerts = [a for a in alerts if a.kind != "cpu_fallback"]
    assert [(a.kind, a.severity.name) for a in alerts] == [("persistence_off", "INFO")]
    assert "nvidia-smi -pm 1" in alerts[0].fix


def mig_a100(**parent_errors: int) -> FakeGpu:
    """An A100 in MIG mode as an unprivileged user reads it: two MIG devices, one process each."""
    slices = [
        FakeGpu("NVIDIA A100-SXM4-80GB MIG 3g.40gb", 40192, 13, compute=[(821, 20480)], gi=2),
        FakeGpu("NVIDIA A100-SXM4-80GB MIG 1g.10gb", 9856, 10, compute=[(824, 9500)], gi=9),
    ]
    refused, unsupported = CODES["NoPermission"], CODES["NotSupported"]
    errors = {"memory": refused, "util": unsupported, "compute_v3": refused}
    return FakeGpu("NVIDIA A100-SXM4-80GB", mig=slices, errors={**errors, **parent_errors})


def test_mig_devices_are_read_through_their_own_handles() -> None:
    fake = FakePynvml([mig_a100(), FakeGpu(compute=[(900, 1000)])])
    reading = NvmlSource(nvml=fake).read()
    parent, plain = reading.devices
    assert parent.mig_mode and not plain.mig_mode
    assert [(m.profile, m.gpu_instance_id, m.memory_used_mib) for m in parent.mig_devices] == [
        ("3g.40gb", 2, 20480 + 13), ("1g.10gb", 9, 9500 + 10)
    ]  # fmt: skip
    assert parent.memory_used_mib is None and "privileges" in parent.unavailable["memory"]
    assert "MIG mode" in parent.unavailable["utilization"]
    # the parent's refused process list is never asked (it would have switched listing off for every GPU)
    assert {(p.pid, p.gpu_index, p.mig_index) for p in reading.processes} == {
        (821, 0, 0), (824, 0, 1), (900, 1, None)
    }  # fmt: skip
    assert all(p.sm_percent is None for p in reading.processes if p.mig_index is not None)


def test_a_lost_mig_device_is_lost_alone() -> None:
    gpu = mig_a100()
    assert gpu.mig is not None
    gpu.mig[1].errors["memory"] = CODES["GpuIsLost"]
    source = NvmlSource(nvml=FakePynvml([gpu]))
    parent = source.read().devices[0]
    assert [m.lost for m in parent.mig_devices] == [False, True] and not parent.lost
    assert [m.lost for m in source.read().devices[0].mig_devices] == [False, True]
