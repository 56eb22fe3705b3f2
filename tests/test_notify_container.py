"""notify inside a container (fakenvml's container.py: PID and mount namespaces, NVML naming host PIDs): a
stale holder of the container and idle GPUs are each sent once, through the same feed and alert rules as
the Monitor inside a container."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.notify_receiver import receiving
from tests.waiting import wait_for

HERE = Path(__file__).resolve().parent
CONTAINER = (
    Path(os.environ.get("TFGPU_FAKENVML_DIR", HERE.parents[1] / "shared" / "fakenvml")) / "container.py"
)
TOKEN = "ctr-S3CRET"


def why_not() -> str | None:
    if not CONTAINER.exists():
        return f"fakenvml's container.py not found at {CONTAINER} (set TFGPU_FAKENVML_DIR)"
    if sys.platform != "linux" or os.geteuid() != 0:
        return "container.py needs root on Linux (it makes PID and mount namespaces)"
    if shutil.which("unshare") is None:
        return "container.py needs `unshare` (util-linux)"
    return None


@pytest.mark.skipif(why_not() is not None, reason=why_not() or "")
def test_inside_a_container_a_stale_holder_and_idle_gpus_are_sent_once(
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
        env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run"), "PYTHONPATH": str(HERE.parent)}
        with out.open("w") as stdout, err.open("w") as stderr:
            container = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)
        try:
            wait_for(lambda: len(receiver.messages) >= 3 or container.poll() is not None, timeout=180)
            for process in psutil.Process(container.pid).children(recursive=True):  # ours: notify inside
                if "notify" in process.cmdline():
                    process.send_signal(signal.SIGTERM)
            container.wait(timeout=60)
        finally:
            container.kill()
            container.wait()
        messages = receiver.messages
    events = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{")]
    assert sorted(e["event"] for e in events) == ["gpu_idle", "gpu_idle", "stale_kernel"], err.read_text()
    assert len(messages) == 3
    stale = next(e for e in events if e["event"] == "stale_kernel")
    assert "forgotten.py" in stale["message"] and "18.0 GiB" in stale["message"]
    assert "stopped by SIGTERM" in err.read_text()
    assert TOKEN not in out.read_text() + err.read_text() + (tmp_path / "state.json").read_text()
