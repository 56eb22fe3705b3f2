"""MIG slices (issue 25), end to end against fakenvml: every MIG device a row of its own in the core, `gpus`,
`gpus --json`, the exporter (parsed by prometheus-client and scraped by a real Prometheus) and the Monitor in
tmux at 80x24; alerts per slice; a kill frees a slice's memory; a lost MIG device leaves the others."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.fleet_helpers import prometheus_version, query, start_exporter, start_prometheus, stop
from tests.helpers.paths import FIXTURES
from tests.helpers.tmux_terminal import Terminal
from tfgpu_tui.alerts import Severity
from tfgpu_tui.env.checks_mig import check_mig
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.recorded import facts_from_dict, load_recording
from tfgpu_tui.gpu.alert_rules import AlertRules
from tfgpu_tui.gpu.cuda_devices import mig_cuda_devices
from tfgpu_tui.gpu.model import DeviceSample, HostState, JupyterKernel, MigDevice, ProcessRow
from tfgpu_tui.gpu.nvml import MIG_PARENT_MEMORY, MIG_UTILIZATION, NvmlSource, mig_profile
from tfgpu_tui.gpu.processes import HostInspector
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.probe import budget
from tfgpu_tui.settings import Settings

pytestmark = pytest.mark.e2e  # real child processes

A100 = 'device name="NVIDIA A100-SXM4-80GB" total_mib=81920 base_used_mib=7 arch=ampere cc=8.0 mig_mode=1'


def scenario_text(pids: list[int], parent: str = "user", lost: str = "") -> str:
    """An A100 with a 3g.40gb, a 2g.20gb GPU instance split in two compute instances, and a 1g.10gb at 97 %;
    one process on each MIG device, and an H100 not in MIG mode beside it."""
    return "\n".join([
        "driver 550.127.08",
        f"{A100} mig_parent={parent}",
        'device name="NVIDIA H100 80GB HBM3" total_mib=81559 util=40',
        'mig gpu=0 gi=2 profile="3g.40gb" total_mib=40192 base_used_mib=13',
        'mig gpu=0 gi=3 ci=0 profile="1c.2g.20gb" total_mib=19968 base_used_mib=11',
        'mig gpu=0 gi=3 ci=1 profile="1c.2g.20gb"',
        'mig gpu=0 gi=9 profile="1g.10gb" total_mib=9856 base_used_mib=10',
        f"process gpu=0 pid={pids[0]} used_mib=20480 mig=0",
        f"process gpu=0 pid={pids[1]} used_mib=4096 mig=1",
        f"process gpu=0 pid={pids[2]} used_mib=1024 mig=2",
        f"process gpu=0 pid={pids[3]} used_mib=9550 mig=3",
        f"process gpu=1 pid={pids[4]} used_mib=2048 sm=40",
        lost,
    ]) + "\n"  # fmt: skip


@pytest.fixture
def sleepers():
    children = [subprocess.Popen(["sleep", "120"]) for _ in range(5)]
    yield children
    for child in children:
        child.kill()
        child.wait()


def sampler_for(scenario, sleepers, **kwargs) -> Sampler:
    scenario(scenario_text([c.pid for c in sleepers], **kwargs))
    return Sampler(Settings(), NvmlSource(), HostInspector(background=False, own_namespace=False))


def test_every_mig_device_is_a_device_of_its_own(scenario, sleepers) -> None:
    snapshot = sampler_for(scenario, sleepers).sample()
    parent, h100 = snapshot.devices
    assert parent.mig_mode and not h100.mig_mode and h100.utilization_percent == 40
    # the parent shows what a user can read, and says why not the rest: never a false 0
    assert parent.memory_used_mib is None and parent.utilization_percent is None
    assert parent.unavailable["memory"] == MIG_PARENT_MEMORY
    assert parent.unavailable["utilization"] == MIG_UTILIZATION
    assert parent.temperature_c is not None and parent.power_w is not None
    migs = parent.mig_devices
    assert [(m.label, m.profile, m.gpu_instance_id, m.compute_instance_id) for m in migs] == [
        ("0:0", "3g.40gb", 2, 0), ("0:1", "1c.2g.20gb", 3, 0), ("0:2", "1c.2g.20gb", 3, 1),
        ("0:3", "1g.10gb", 9, 0),
    ]  # fmt: skip
    assert all(m.uuid and m.uuid.startswith("MIG-") for m in migs)
    assert (migs[0].memory_used_mib, migs[0].memory_total_mib) == (20480 + 13, 40192)
    assert migs[1].memory_used_mib == migs[2].memory_used_mib == 4096 + 1024 + 11  # one GI: shared memory
    rows = {(r.gpu_index, r.mig_index): r for r in snapshot.processes if r.gpu_index is not None}
    assert set(rows) == {(0, 0), (0, 1), (0, 2), (0, 3), (1, None)}
    assert rows[0, 3].gpu_memory_mib == 9550 and rows[0, 3].sm_percent is None  # not reported in MIG mode
    assert rows[0, 3].device_label == "0:3" and rows[0, 3].host_state is HostState.OK


def test_alerts_name_the_slice_and_never_read_no_utilisation_as_zero(scenario, sleepers) -> None:
    alerts = sampler_for(scenario, sleepers).sample().alerts
    full = [a for a in alerts if a.kind == "memory_full"]
    assert len(full) == 1 and full[0].subject == "GPU 0:3" and "MIG 1g.10gb (GPU 0:3)" in full[0].message
    assert full[0].severity is Severity.WARNING  # 97 %
    assert not [a for a in alerts if a.subject.startswith("GPU 0") and a.kind != "memory_full"]


def slice_row(pid: int, mig: int, **fields) -> ProcessRow:
    return ProcessRow(pid, 0, 8000.0, None, HostState.OK, uid=0, command="python train.py", create_time=1.0,
                      running_seconds=600.0, mig_index=mig, **fields)  # fmt: skip


def mig_device(used: float = 8000.0) -> DeviceSample:
    mig = MigDevice(0, 0, "NVIDIA A100 MIG 3g.40gb", "3g.40gb", "MIG-x", 2, 0, used, 40192.0)
    return DeviceSample(0, "NVIDIA A100", None, None, None, 40.0, 120.0, 400.0, None, 1410.0, 0,
                        mig_mode=True, mig_devices=(mig,))  # fmt: skip


def test_on_a_slice_tensorflow_is_not_on_the_cpu_and_a_busy_job_is_not_stale() -> None:
    rules = AlertRules(Settings(fallback_seconds=0, stale_minutes=1), own_uid=0)
    job = slice_row(10, 0, tensorflow_loaded=True)
    for now in (0, 30, 600):
        alerts = rules.evaluate(now, [mig_device()], [job])
    assert [a.kind for a in alerts] == []  # no utilisation in MIG mode is not 0 %, and not the CPU


def test_an_idle_kernel_on_a_slice_is_stale_from_jupyters_last_activity() -> None:
    rules = AlertRules(Settings(stale_minutes=10), own_uid=0)
    kernel = slice_row(11, 0, jupyter=JupyterKernel("abc", "eda.ipynb", execution_state="idle",
                                                    last_activity="2020-01-01T00:00:00Z"))  # fmt: skip
    alerts = rules.evaluate(1_700_000_000, [mig_device()], [kernel])
    assert [a.kind for a in alerts] == ["stale_vram"] and "eda.ipynb" in alerts[0].message


def test_the_parent_with_privileges_shows_its_aggregate_and_no_process_twice(scenario, sleepers) -> None:
    snapshot = sampler_for(scenario, sleepers, parent="root").sample()
    parent = snapshot.devices[0]
    assert parent.memory_used_mib == 7 + 13 + 11 + 10 + 20480 + 4096 + 1024 + 9550
    pids = [r.pid for r in snapshot.processes if r.gpu_index == 0]
    assert len(pids) == len(set(pids)) == 4


def test_a_kill_frees_the_slices_memory(scenario, sleepers) -> None:
    sampler = sampler_for(scenario, sleepers)
    row = next(r for r in sampler.sample().processes if r.mig_index == 3)
    outcome = sampler.kill(row)
    assert outcome.result == "freed" and "9550 MiB freed on GPU 0:3" in outcome.message
    after = sampler.sample()
    assert after.devices[0].mig_devices[3].memory_used_mib == 10
    assert not [a for a in after.alerts if a.kind == "memory_full"]
    assert sleepers[0].poll() is None  # the other slices' processes are untouched


def test_a_lost_mig_device_leaves_the_others(scenario, sleepers) -> None:
    sampler = sampler_for(scenario, sleepers, lost="error gpu=0 mig=1 field=memory code=GPU_IS_LOST")
    migs = sampler.sample().devices[0].mig_devices
    assert [m.lost for m in migs] == [False, True, False, False]
    assert migs[2].memory_used_mib is not None  # the GI's other compute instance still answers


def test_gpus_prints_a_line_per_slice_and_json_has_them(scenario, sleepers, fakenvml_lib_dir: Path) -> None:
    path = scenario(scenario_text([c.pid for c in sleepers]))
    env = dict(os.environ, LD_LIBRARY_PATH=str(fakenvml_lib_dir), FAKE_NVML_SCENARIO=str(path))
    text = subprocess.run([sys.executable, "-m", "tfgpu_tui", "gpus", "--window", "0"], env=env,
                          capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    assert "MIG mode: NVML reports no utilisation in MIG mode" in text
    assert "[0:3] MIG 1g.10gb" in text and "GI 9 CI 0" in text and "MIG-" in text
    assert f" 0:3 {sleepers[3].pid:>8} " in text
    data = json.loads(subprocess.run([sys.executable, "-m", "tfgpu_tui", "gpus", "--json", "--window", "0"],
                                     env=env, capture_output=True, text=True, timeout=60).stdout)  # fmt: skip
    parent = data["devices"][0]
    assert parent["mig_mode"] and parent["memory_used_mib"] is None and "memory" in parent["unavailable"]
    slice_3 = parent["mig_devices"][3]
    assert slice_3["label"] == "0:3" and slice_3["profile"] == "1g.10gb" and slice_3["memory_percent"] > 95
    assert {(p["gpu_index"], p["mig_index"]) for p in data["processes"] if p["gpu_index"] == 0} == {
        (0, 0), (0, 1), (0, 2), (0, 3)
    }  # fmt: skip


def test_the_exporter_labels_slices_as_dcgm_exporter_does(scenario, sleepers, fakenvml_lib_dir: Path,
                                                          tmp_path: Path) -> None:  # fmt: skip
    path = scenario(scenario_text([c.pid for c in sleepers]))
    started: list[subprocess.Popen] = []
    try:
        url = start_exporter(fakenvml_lib_dir, path, ["--interval", "0.5"], started)
        with urllib.request.urlopen(url, timeout=5) as reply:
            text = reply.read().decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        used = [s for s in families["DCGM_FI_DEV_FB_USED"].samples if s.labels["gpu"] == "0"]
        assert sorted((s.labels["GPU_I_PROFILE"], s.labels["GPU_I_ID"], s.value) for s in used) == [
            ("1c.2g.20gb", "3", 5131.0), ("1g.10gb", "9", 9560.0), ("3g.40gb", "2", 20493.0)
        ]  # fmt: skip
        assert all(s.labels["UUID"].startswith("GPU-") for s in used)  # the parent's, as dcgm-exporter has
        assert not [s for s in families["DCGM_FI_DEV_GPU_UTIL"].samples if s.labels["gpu"] == "0"]
        process = {s.labels["gpu"] for s in families["tfgpu_process_gpu_memory_mib"].samples}
        assert {"0:0", "0:1", "0:2", "0:3", "1"} <= process
        if prometheus_version() is None:
            pytest.skip("no Prometheus on this machine (Debian's `prometheus` package)")
        target = url.removeprefix("http://").split("/", 1)[0]
        prometheus = start_prometheus(tmp_path, [target], started)
        from tests.helpers.waiting import wait_for

        wait_for(lambda: query(prometheus, 'DCGM_FI_DEV_FB_USED{GPU_I_PROFILE="1g.10gb"}'), timeout=60)
        result = query(prometheus, 'DCGM_FI_DEV_FB_USED{GPU_I_PROFILE="1g.10gb"}')
        assert [(r["metric"]["GPU_I_ID"], float(r["value"][1])) for r in result] == [("9", 9560.0)]
    finally:
        for child in started:
            stop(child)


def test_the_monitor_at_80x24_has_a_line_per_slice(scenario, sleepers, fakenvml_lib_dir: Path,
                                                   tmp_path: Path) -> None:  # fmt: skip
    path = scenario(scenario_text([c.pid for c in sleepers]))
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"),
               TERM="xterm-256color", LD_LIBRARY_PATH=str(fakenvml_lib_dir),
               FAKE_NVML_SCENARIO=str(path))  # fmt: skip
    terminal = Terminal([sys.executable, "-m", "tfgpu_tui"], env)
    try:
        screen = terminal.wait_for("0:3 MIG 1g.10gb", "Memory full: GPU 0:3", "Processes (")
        lines = screen.splitlines()
        assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
        assert "MIG mode: no utilisation reported" in screen
        for label in ("0:0 MIG 3g.40gb", "0:1 MIG 1c.2g.20gb", "0:2 MIG 1c.2g.20gb"):
            assert label in screen
        assert any(line.split()[:3] == [str(sleepers[3].pid), "root", "0:3"] for line in lines), screen
    finally:
        terminal.close()


def test_mig_profiles_come_from_the_name() -> None:
    assert mig_profile("NVIDIA A100-SXM4-80GB MIG 1g.10gb") == "1g.10gb"
    assert mig_profile("NVIDIA H100 MIG 1c.2g.20gb") == "1c.2g.20gb"
    assert mig_profile("NVIDIA A100-SXM4-80GB") is None


# -- which slice TensorFlow's GPU:0 is: the Environment check and the batch probe's budget (pure) ------------

SLICES = (
    MigDevice(0, 0, "NVIDIA A100 MIG 3g.40gb", "3g.40gb", "MIG-aaa", 2, 0, 20493.0, 40192.0),
    MigDevice(0, 1, "NVIDIA A100 MIG 1g.10gb", "1g.10gb", "MIG-bbb", 9, 0, 9560.0, 9856.0),
)


def a100(slices: tuple[MigDevice, ...] = SLICES) -> DeviceSample:
    return DeviceSample(0, "NVIDIA A100", None, None, None, 40.0, 120.0, 400.0, None, 1410.0, 0,
                        mig_mode=True, mig_devices=slices)  # fmt: skip


def test_tensorflow_gpu0_is_the_slice_cuda_visible_devices_names() -> None:
    found, problem = mig_cuda_devices([a100()], "MIG-bbb")  # type: ignore[misc]
    assert problem == "" and [(c.ordinal, c.memory_total_mib) for c in found] == [(0, 9856.0)]
    assert "1g.10gb" in found[0].name and "GPU 0:1" in found[0].name
    assert "MIG-zzz, which is no MIG device" in mig_cuda_devices([a100()], "MIG-zzz")[1]  # type: ignore[index]
    assert "depends on the CUDA version" in mig_cuda_devices([a100()], None)[1]  # type: ignore[index]
    assert mig_cuda_devices([a100(SLICES[:1])], None)[1] == ""  # type: ignore[index]  # the only one
    h100 = DeviceSample(1, "H100", 0.0, 0.0, 80.0, 40.0, 100.0, 700.0, None, None, 0)
    assert mig_cuda_devices([h100], None) is None  # not in MIG mode: GPU:N is NVML's GPU N


def test_the_probe_budgets_by_the_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "read_gpus", lambda: ([a100()], ""))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-bbb")
    found = budget.default_budget("GPU:0")
    assert found.mb == 9856.0 - 9560.0 and "1g.10gb" in found.source
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    ambiguous = budget.default_budget("GPU:0")
    assert ambiguous.mb is None and "CUDA_VISIBLE_DEVICES=MIG-" in ambiguous.source


def facts_with(readings: list[DeviceSample], visible: str | None) -> EnvFacts:
    facts, _ = load_recording(FIXTURES / "env" / "all_good.json")
    env = {k: v for k, v in facts.env_vars.items() if k != "CUDA_VISIBLE_DEVICES"}
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    return dataclasses.replace(facts, nvml=dataclasses.replace(facts.nvml, readings=readings), env_vars=env)


def test_the_environment_check_says_which_slice_and_its_memory() -> None:
    named = check_mig(facts_with([a100()], "MIG-bbb"), None)
    assert named.status is Status.OK and "GPU:0 = MIG 1g.10gb" in named.detail and "9.6 GiB" in named.detail
    unnamed = check_mig(facts_with([a100()], None), None)
    assert unnamed.status is Status.WARNING and "export CUDA_VISIBLE_DEVICES=MIG-aaa" in unnamed.fix
    assert "0:1 1g.10gb (0.3 GiB free of 9.6 GiB, MIG-bbb)" in unnamed.detail
    empty = check_mig(facts_with([a100(())], None), None)
    assert empty.status is Status.FAILURE and "nvidia-smi mig" in empty.fix
    plain = check_mig(facts_with([], None), None)
    assert plain.status is Status.OK and plain.informational


def test_a_recording_keeps_the_slices() -> None:
    facts = facts_with([a100()], "MIG-bbb")
    again = facts_from_dict(json.loads(json.dumps(dataclasses.asdict(facts))))
    assert again.nvml.mig_devices == list(SLICES) and again.nvml.readings[0].mig_mode
