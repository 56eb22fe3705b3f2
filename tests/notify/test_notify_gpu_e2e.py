"""notify's GPU events on the scripted NVML (fakenvml): a stale kernel of a real Jupyter server holding VRAM,
GPUs idle with nothing training, then a GPU falling off the bus, then a GPU whose memory fills up; each event
once, through the same feed and alert rules as the Monitor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.jupyter_fixture import HELD_MIB, NOTEBOOK
from tests.helpers.notify_receiver import receiving
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e  # real child processes

TOKEN = "gpu-S3CRET"
DEVICES = 'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util=0\n' * 2
# GPU 0 full: 120000 MiB + the holder's 18 GiB of 143771 = 96 %
FULL = 'device name="NVIDIA H200" total_mib=143771 base_used_mib=120000 util=0\n'
LOST = "error gpu=1 field=all code=GPU_IS_LOST\n"


def step(scenario: Path, text: str) -> None:
    """A scenario step, written atomically as fakenvml asks (a half-written file may be read for one call)."""
    temporary = scenario.with_name(scenario.name + ".tmp")
    temporary.write_text(text)
    temporary.replace(scenario)


def test_stale_kernel_idle_gpus_a_lost_gpu_then_a_full_one_each_once(
    jupyter: dict,
    fakenvml_lib_dir: Path,
    tmp_path: Path,
) -> None:
    scenario = tmp_path / "scenario.txt"
    holder = f"process gpu=0 pid={jupyter['pid']} used_mib={HELD_MIB} sm=0\n"
    scenario.write_text(DEVICES + holder)
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": str(fakenvml_lib_dir),
        "FAKE_NVML_SCENARIO": str(scenario),
        "JUPYTER_RUNTIME_DIR": str(jupyter["runtime"]),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    out = tmp_path / "notify.out"
    err = tmp_path / "notify.err"
    with receiving(TOKEN) as receiver:
        args = ["--json", "--to", receiver.url, "--state", str(tmp_path / "state.json"), "--interval", "0.5"]
        args += ["--events", "stale_kernel,gpu_idle,gpu_lost,memory_full", "--idle-minutes", "0.02"]
        args += ["--stale-minutes", "0.005", "--hostname", "gpubox"]
        with out.open("w") as stdout, err.open("w") as stderr:
            child = subprocess.Popen(
                [sys.executable, "-m", "tfgpu_tui", "notify", *args], stdout=stdout, stderr=stderr, env=env
            )
        try:
            wait_for(lambda: len(receiver.messages) >= 3, timeout=120)
            step(scenario, DEVICES + holder + LOST)
            wait_for(lambda: len(receiver.messages) >= 4, timeout=120)
            step(scenario, FULL + DEVICES[len(DEVICES) // 2 :] + holder + LOST)  # GPU 0 fills up
            wait_for(lambda: len(receiver.messages) >= 5, timeout=120)
            child.send_signal(signal.SIGTERM)
            assert child.wait(timeout=60) == 0
        finally:
            child.kill()
            child.wait()
        messages = receiver.messages
    events = [json.loads(line) for line in out.read_text().splitlines()]
    first = sorted(e["key"] for e in events[:3])
    assert first == ["gpu_idle:GPU 0", "gpu_idle:GPU 1", f"stale_kernel:PID {jupyter['pid']}"]
    assert [e["key"] for e in events[3:]] == ["gpu_lost:GPU 1", "memory_full:GPU 0"]
    assert "96 % full" in events[4]["message"] and events[4]["fix"]
    assert sorted(m["title"] for m in messages) == sorted(e["title"] for e in events)
    stale = next(e for e in events if e["event"] == "stale_kernel")
    assert (
        NOTEBOOK in stale["message"]
        and "18.0 GiB" in stale["message"]
        and "Shut the kernel down" in stale["fix"]
    )
    assert "billed for nothing" in next(e for e in events if e["event"] == "gpu_idle")["message"]
    assert TOKEN not in out.read_text() + err.read_text() + (tmp_path / "state.json").read_text()
