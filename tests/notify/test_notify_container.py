"""notify inside a container (fakenvml's container.py: PID and mount namespaces, NVML naming host PIDs): a
stale holder of the container and idle GPUs are each sent once, then a GPU falls off the bus and that is sent
once too, through the same feed and alert rules as the Monitor inside a container."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.helpers.container_run import CONTAINER, ONE_CONTAINER_AT_A_TIME, why_not
from tests.helpers.notify_receiver import receiving
from tests.helpers.paths import ROOT
from tests.helpers.waiting import wait_for

WHY_NOT = why_not(modules=())
pytestmark = [  # real child processes in a PID namespace
    pytest.mark.e2e,
    ONE_CONTAINER_AT_A_TIME,
    pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or ""),
]
TOKEN = "ctr-S3CRET"
LOST = "error gpu=1 field=all code=GPU_IS_LOST\n"


def notify_inside(container: subprocess.Popen) -> psutil.Process | None:
    """The notify process that container.py runs in its namespaces (a host process, seen from here); not
    container.py or unshare, whose argv holds notify's after `--`."""
    for process in psutil.Process(container.pid).children(recursive=True):
        try:
            if process.cmdline()[1:4] == ["-m", "tfgpu_tui", "notify"]:
                return process
        except psutil.NoSuchProcess:
            continue
    return None


def lose_gpu_1(notify: psutil.Process) -> None:
    """One scenario step: GPU 1 answers GPU_IS_LOST from the next NVML call on. The scenario is the file
    container.py gave notify (its FAKE_NVML_SCENARIO: the same path outside the container), rewritten
    atomically as fakenvml asks."""
    scenario = Path(notify.environ()["FAKE_NVML_SCENARIO"])
    step = scenario.with_name(scenario.name + ".tmp")
    step.write_text(scenario.read_text() + LOST)
    step.replace(scenario)


def test_inside_a_container_a_stale_holder_idle_gpus_then_a_lost_gpu_are_sent_once(
    fakenvml_lib_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "notify.out"
    err = tmp_path / "notify.err"
    with receiving(TOKEN) as receiver:
        notify = [sys.executable, "-m", "tfgpu_tui", "notify", "--json", "--to", receiver.url]
        notify += ["--state", str(tmp_path / "state.json"), "--interval", "0.5", "--hostname", "ctr"]
        notify += [
            "--events",
            "stale_kernel,gpu_idle,gpu_lost",
            "--idle-minutes",
            "0.02",
            "--stale-minutes",
            "0.005",
        ]
        command = [sys.executable, str(CONTAINER), "--lib", str(fakenvml_lib_dir), "--gpus", "2"]
        command += ["--hold", "gpus=0 mib=18432 sm=0 cmd=forgotten.py", "--", *notify]
        env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run"), "PYTHONPATH": str(ROOT)}
        with out.open("w") as stdout, err.open("w") as stderr:
            container = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)
        try:
            wait_for(lambda: len(receiver.messages) >= 3 or container.poll() is not None, timeout=180)
            inside = notify_inside(container)
            assert inside is not None, err.read_text()
            pids = json.loads(Path(inside.environ()["TFGPU_SIM_PIDS"]).read_text())
            lose_gpu_1(inside)
            wait_for(lambda: len(receiver.messages) >= 4 or container.poll() is not None, timeout=120)
            inside.send_signal(signal.SIGTERM)
            container.wait(timeout=60)
        finally:
            container.kill()
            container.wait()
        messages = receiver.messages
    events = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{")]
    holder = pids["holders"][0]["pid"]  # as NVML names it inside the container (driver 580: its own PID)
    first = sorted(e["key"] for e in events[:3])
    assert first == ["gpu_idle:GPU 0", "gpu_idle:GPU 1", f"stale_kernel:PID {holder}"], err.read_text()
    assert [e["key"] for e in events[3:]] == ["gpu_lost:GPU 1"], err.read_text()
    assert sorted(m["title"] for m in messages) == sorted(e["title"] for e in events)
    stale = next(e for e in events if e["event"] == "stale_kernel")
    assert "forgotten.py" in stale["message"] and "18.0 GiB" in stale["message"]
    lost = events[3]
    assert "GPU 1" in lost["message"] and lost["fix"], lost
    assert "stopped by SIGTERM; 4 event(s) sent this run" in err.read_text()
    assert TOKEN not in out.read_text() + err.read_text() + (tmp_path / "state.json").read_text()
