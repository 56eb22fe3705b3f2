"""CPU fallback end to end: a real process with TensorFlow loaded and no GPU memory while fakenvml shows a GPU
(its CUDA_VISIBLE_DEVICES hides nothing) is the Monitor's cpu_fallback alert, and notify sends it once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.notify_receiver import receiving
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.tf]

TOKEN = "cpu-S3CRET"
CHILD = "import sys, time, tensorflow\nopen(sys.argv[1], 'w').close()\ntime.sleep(600)\n"


def test_tensorflow_without_gpu_memory_is_a_cpu_fallback_sent_once(
    fakenvml_lib_dir: Path, tmp_path: Path
) -> None:
    scenario = tmp_path / "scenario.txt"
    scenario.write_text('device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util=30\n')
    env = {**os.environ, "LD_LIBRARY_PATH": str(fakenvml_lib_dir), "FAKE_NVML_SCENARIO": str(scenario)}
    env.pop("CUDA_VISIBLE_DEVICES", None)  # hiding the GPUs would make it deliberate (an info, not an event)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    ready = tmp_path / "ready"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(ready)], env=env, stderr=subprocess.DEVNULL)
    out, err = tmp_path / "notify.out", tmp_path / "notify.err"
    key = f"cpu_fallback:PID {child.pid}"

    def ours() -> list[dict]:
        return [e for e in map(json.loads, out.read_text().splitlines()) if e["key"] == key]

    try:
        wait_for(ready.exists, timeout=300)
        with receiving(TOKEN) as receiver:
            args = [
                "--json",
                "--to",
                receiver.url,
                "--state",
                str(tmp_path / "state.json"),
                "--interval",
                "0.5",
            ]
            args += ["--events", "cpu_fallback", "--hostname", "cpubox"]
            env["XDG_RUNTIME_DIR"] = str(tmp_path / "run")
            with out.open("w") as stdout, err.open("w") as stderr:
                notify = subprocess.Popen(
                    [sys.executable, "-m", "tfgpu_tui", "notify", *args],
                    stdout=stdout,
                    stderr=stderr,
                    env=env,
                )
            try:
                wait_for(
                    lambda: (
                        ours() and any(f"PID {child.pid}" in m.get("message", "") for m in receiver.messages)
                    ),
                    timeout=120,
                )
                child.kill()
                child.wait()
                notify.send_signal(signal.SIGTERM)
                assert notify.wait(timeout=60) == 0
            finally:
                notify.kill()
                notify.wait()
            received = [m for m in receiver.messages if f"PID {child.pid}" in m.get("message", "")]
    finally:
        child.kill()
        child.wait()
    [event] = ours()
    assert event["event"] == "cpu_fallback" and event["title"] == "TensorFlow runs on the CPU on cpubox"
    assert "holds no GPU memory" in event["message"] and event["fix"], event
    assert len(received) == 1
    assert TOKEN not in out.read_text() + err.read_text()
