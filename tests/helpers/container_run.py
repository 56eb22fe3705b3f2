"""Running a script inside fakenvml's container.py (root, PID and mount namespaces): whether it can run here,
one run with a hang guard whose facts the script leaves in OUT/results.json, and the mark that keeps such
runs one at a time.

One at a time: container.py finds each holder's host PID by the PID it has inside (the last NSpid), and every
container numbers its processes alike (15, 16, 17 ...). Two containers at once (two xdist workers) can so
give a holder another container's host PID; NVML then lists it only while that other process lives. Seen
beside two CPU hogs: `gpus --json` inside listed no process at all."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import FAKENVML_DIR

CONTAINER = FAKENVML_DIR / "container.py"
ONE_CONTAINER_AT_A_TIME = pytest.mark.xdist_group("pid-namespace")  # on one xdist worker, one after another


def why_not(
    tools: tuple[str, ...] = (), modules: tuple[str, ...] = ("jupyter_server", "ipykernel")
) -> str | None:
    """Why container.py cannot run here (with these programs and modules), or None."""
    if not CONTAINER.exists():
        return f"fakenvml's container.py not found at {CONTAINER} (set TFGPU_FAKENVML_DIR)"
    if sys.platform != "linux" or os.geteuid() != 0:
        return "container.py needs root on Linux (it makes PID and mount namespaces)"
    for tool in ("unshare", *tools):
        if shutil.which(tool) is None:
            return f"container.py's world needs `{tool}`"
    for module in (*modules, "pynvml"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[test]')"
    probe = subprocess.run(
        ["unshare", "--mount", "--pid", "--fork", "true"], capture_output=True, text=True, timeout=30
    )
    if probe.returncode != 0:
        return f"unshare cannot make PID and mount namespaces here: {probe.stderr.strip()}"
    return None


def run_container(
    container_args: list[str], out: Path, timeout: float, env: dict[str, str] | None = None
) -> dict:
    """`container.py CONTAINER_ARGS` run from `out` in a session of its own, ended whole after `timeout` s
    (a hang guard); OUT/results.json plus `rc` (None after the guard) and the end of its output."""
    env = env or {k: v for k, v in os.environ.items() if k not in ("FAKE_NVML_SCENARIO", "TFGPU_TUI_CONFIG")}
    log = out / "container.log"
    with open(log, "w") as handle:
        # its own session, so a run that overruns is ended whole: unshare, the namespace's PID 1 (and so
        # everything inside), and any other container's process container.py starts outside
        argv = [sys.executable, str(CONTAINER), *container_args]
        proc = subprocess.Popen(argv, env=env, cwd=out, stdout=handle, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    try:
        results = json.loads((out / "results.json").read_text())
    except (OSError, ValueError):
        results = {"errors": ["no results.json"]}
    results["rc"] = rc
    results["log_tail"] = log.read_text()[-4000:]
    return results
