"""End to end with a real Jupyter server and real kernels holding (scripted) GPU memory.

One jupyter_server per module (port 0, random token, a non-root base_url, a temporary runtime dir); a notebook
session is opened through its REST API and the kernel's real PID is put into a fakenvml scenario holding VRAM
at 0 % SM. Also a kernel started by its own launcher with no server, and the child-marker rule.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import psutil
import pytest

from tests.helpers.jupyter_fixture import HELD_MIB, NOTEBOOK
from tests.helpers.waiting import wait_for, wait_until
from tfgpu_tui.alerts import ACTION_KINDS, Severity
from tfgpu_tui.gpu.jupyter import NO_SERVER
from tfgpu_tui.proc.marks import CHILD_ENV_VALUE, CHILD_ENV_VAR

pytestmark = pytest.mark.e2e  # real child processes


def kernel_pids(jupyter: dict) -> list[int]:
    """The live processes the server runs for its kernel."""
    return jupyter["server"].kernel_pids(jupyter["kernel_id"])


def kernel_scenario(pid: int) -> str:
    return (
        'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util=0\n'
        'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util=0\n'
        f"process gpu=0 pid={pid} used_mib={HELD_MIB} sm=0\n"
    )


def low_stale_config(tmp_path: Path) -> Path:
    config = tmp_path / "config.toml"
    config.write_text("stale_minutes = 0.005\n")  # 0.3 s: the kernel has been idle for longer
    return config


def test_one_shot_gpus_json_names_the_notebook_and_flags_it_stale(
    jupyter: dict, fakenvml_lib_dir: Path, tmp_path: Path
) -> None:
    scenario = tmp_path / "scenario.txt"
    scenario.write_text(kernel_scenario(jupyter["pid"]))
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": str(fakenvml_lib_dir),
        "FAKE_NVML_SCENARIO": str(scenario),
        "JUPYTER_RUNTIME_DIR": str(jupyter["runtime"]),
        "TFGPU_TUI_CONFIG": str(low_stale_config(tmp_path)),
    }
    done = subprocess.run(  # a confirmation window far longer than any sampling, however loaded the machine
        [sys.executable, "-m", "tfgpu_tui", "gpus", "--json", "--window", "30"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    row = next(p for p in data["processes"] if p["pid"] == jupyter["pid"])
    assert row["jupyter"]["kernel_id"] == jupyter["kernel_id"]
    assert row["jupyter"]["notebook_path"] == NOTEBOOK and row["jupyter"]["execution_state"] == "idle"
    stale = [a for a in data["alerts"] if a["kind"] == "stale_vram"]
    assert stale and NOTEBOOK in stale[0]["message"] and "18.0 GiB" in stale[0]["message"]
    assert "press k" in stale[0]["fix"]
    # most urgent first (actions before advice, then by severity), whatever else runs on the machine: the
    # stale alert is an action, so only actions come before it
    urgency = [
        (a["kind"] in ACTION_KINDS and a["severity"] != "info", Severity[a["severity"].upper()])
        for a in data["alerts"]
    ]
    assert urgency == sorted(urgency, reverse=True)
    # nothing needed the confirmation window: answered before it would have closed (an order of two events,
    # not under 1.5 s of wall clock, which a loaded machine overran)
    assert data["sampled_seconds"] < 30


async def test_first_frame_names_the_notebook_and_the_stale_alert(
    jupyter: dict, scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfgpu_tui.gpu.feed import SnapshotFeed
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.proc.facts import PsutilFacts
    from tfgpu_tui.settings import Settings
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.header import StatusHeader
    from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel
    from tfgpu_tui.ui.widgets.process_table import ProcessTable

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(jupyter["runtime"]))
    scenario(kernel_scenario(jupyter["pid"]))
    settings = Settings(stale_minutes=0.005, interval=5.0)
    # the real host, its scan for TensorFlow on the CPU kept to the kernel: another TensorFlow job on the
    # machine would raise an alert of its own
    host = HostInspector(facts=PsutilFacts([jupyter["pid"]]))
    app = TfgpuApp(settings, feed=SnapshotFeed(settings, sampler=Sampler(settings, NvmlSource(), host)))
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.query_one(ProcessTable)
        await wait_until(pilot, lambda: table.rows_shown, timeout=60)
        first = table.rows_shown[0].process  # the first sample's rows (the next one is 5 s away)
        assert first.pid == jupyter["pid"] and first.jupyter is not None
        assert first.jupyter.notebook_path == NOTEBOOK
        header = app.query_one(StatusHeader)
        panel = app.query_one(AlertsPanel)
        await wait_until(pilot, lambda: header.alert is not None and panel.alerts, timeout=60)
        ours = [a for a in panel.alerts if a.subject == f"PID {jupyter['pid']}"]
        assert [a.kind for a in ours] == ["stale_vram"] and NOTEBOOK in ours[0].message
        assert (header.alert.kind, header.alert.subject) == ("stale_vram", f"PID {jupyter['pid']}")


def test_kill_from_the_sampler_frees_the_memory_and_the_server_loses_the_kernel(
    jupyter: dict, scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.settings import Settings

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(jupyter["runtime"]))
    scenario(kernel_scenario(jupyter["pid"]))
    sampler = Sampler(Settings(kill_grace_seconds=5), NvmlSource(), HostInspector(background=False))
    try:
        row = next(r for r in sampler.sample().processes if r.pid == jupyter["pid"])
        assert row.jupyter is not None and row.jupyter.notebook_path == NOTEBOOK
        outcome = sampler.kill(row)
        assert outcome.result == "freed" and outcome.freed_mib == HELD_MIB
        assert sampler.sample().devices[0].memory_used_mib == 500
    finally:
        sampler.close()

    old_pid = jupyter["pid"]
    wait_for(lambda: not psutil.pid_exists(old_pid) or psutil.Process(old_pid).status() == "zombie", 60)

    def server_lost_it() -> bool:
        """Dead or gone, or (Jupyter's default autorestart) running again as a fresh process."""
        try:
            state = jupyter["server"].api("GET", f"api/kernels/{jupyter['kernel_id']}")["execution_state"]
        except urllib.error.HTTPError as error:
            return error.code == 404
        return state == "dead" or kernel_pids(jupyter) not in ([], [old_pid])

    wait_for(server_lost_it, timeout=60)
    assert old_pid not in kernel_pids(jupyter)


@pytest.fixture
def lonely_kernel(tmp_path: Path):
    """A kernel started by its own launcher, with a connection file and no server anywhere."""
    runtime = tmp_path / "no-server"
    runtime.mkdir()
    connection = runtime / f"kernel-{uuid.uuid4()}.json"
    kernel = subprocess.Popen(
        [sys.executable, "-m", "ipykernel_launcher", "-f", str(connection)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)},
    )
    wait_for(connection.exists, timeout=60)
    yield kernel, runtime, connection
    kernel.kill()
    kernel.wait()


def test_kernel_without_a_server_is_named_and_flagged_after_the_threshold(
    lonely_kernel, scenario, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.settings import Settings

    kernel, runtime, connection = lonely_kernel
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    scenario(kernel_scenario(kernel.pid))
    sampler = Sampler(Settings(stale_minutes=0.02), NvmlSource(), HostInspector(background=False))
    try:
        first = sampler.sample()
        row = next(r for r in first.processes if r.pid == kernel.pid)
        kernel_id = connection.name[len("kernel-") : -len(".json")]
        assert row.jupyter is not None and row.jupyter.kernel_id == kernel_id
        assert row.jupyter.why_unknown == NO_SERVER and row.idle_seconds == 0
        assert not [a for a in first.alerts if a.kind == "stale_vram"]  # counted from when we began watching
        time.sleep(1.3)
        later = sampler.sample()
        stale = [a for a in later.alerts if a.kind == "stale_vram"]
        assert stale and kernel_id in stale[0].message
        first_action = next(a for a in later.alerts if a.kind in ("stale_vram", "memory_full", "gpu_lost"))
        assert first_action is stale[0]
        assert next(r for r in later.processes if r.pid == kernel.pid).idle_seconds >= 1.2
    finally:
        sampler.close()


def test_a_marked_tfgpu_tui_child_raises_no_alert(scenario, sleepers) -> None:
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.settings import Settings

    probe_child = subprocess.Popen(["sleep", "60"], env={**os.environ, CHILD_ENV_VAR: CHILD_ENV_VALUE})
    (stranger,) = sleepers(1)
    try:
        scenario(
            'device name="NVIDIA H200" total_mib=143771 util=0\n'
            f"process gpu=0 pid={probe_child.pid} used_mib=4096 sm=0\n"
            f"process gpu=0 pid={stranger.pid} used_mib=4096 sm=0\n"
        )
        sampler = Sampler(Settings(stale_minutes=0.001), NvmlSource(), HostInspector(background=False))
        sampler.sample()
        time.sleep(0.1)
        snapshot = sampler.sample()
        sampler.close()
        rows = {r.pid: r for r in snapshot.processes}
        assert rows[probe_child.pid].own_child and not rows[stranger.pid].own_child
        subjects = {a.subject for a in snapshot.alerts}
        assert f"PID {stranger.pid}" in subjects and f"PID {probe_child.pid}" not in subjects
    finally:
        probe_child.kill()
        probe_child.wait()
