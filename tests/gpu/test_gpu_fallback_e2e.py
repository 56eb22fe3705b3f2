"""End to end: real TensorFlow (tensorflow-cpu) processes on the CPU beside a scripted GPU (fakenvml).

A TensorFlow process that holds no GPU memory while a GPU is present is flagged within 5 s of loading
TensorFlow; one marked as a tfgpu-tui child (as the environment and batch probes are) never is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tfgpu_tui.env.tf_inspection import INSPECT_ENV
from tfgpu_tui.probe.trial_runner import child_environment
from tfgpu_tui.proc.marks import CHILD_ENV_VAR, argv_is_child, marked

pytestmark = pytest.mark.e2e  # real child processes

WORK = (
    "import tensorflow as tf\n"
    "print('ready', flush=True)\n"
    "x = tf.random.normal((256, 256))\n"
    "while True:\n"
    "    x = tf.linalg.matmul(x, x) / 256.0\n"
)
FALLBACK_LIMIT_SECONDS = 5.0


def test_probe_children_are_marked_both_ways() -> None:
    assert INSPECT_ENV[CHILD_ENV_VAR] == "1" and child_environment("CPU")[CHILD_ENV_VAR] == "1"
    assert argv_is_child(["/usr/bin/python3", "/site/tfgpu_tui/env/tf_inspect_script.py"])
    assert argv_is_child(["python", "/x/tfgpu_tui/probe/worker.py", '{"model": "builtin:cnn"}'])
    assert not argv_is_child(["python", "train.py", "tfgpu_tui/env/tf_inspect_script.py"])


def _start(env: dict[str, str]) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", WORK], stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


@pytest.mark.tf
def test_tensorflow_on_the_cpu_is_flagged_within_5_s_and_a_probe_child_never(scenario) -> None:
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.settings import Settings

    scenario('device name="NVIDIA H200" total_mib=143771 util=0\n')
    env = {k: v for k, v in os.environ.items() if k != CHILD_ENV_VAR}
    sampler = Sampler(Settings(), NvmlSource(), HostInspector())  # as the app: background scans
    sampler.sample()
    probe_like = _start(marked(env))
    user_job = _start(env)
    loaded = time.monotonic()  # TensorFlow is loaded in both
    try:
        flagged_after = None
        while time.monotonic() - loaded < FALLBACK_LIMIT_SECONDS + 1:
            snapshot = sampler.sample()  # the app samples every second
            subjects = {a.subject for a in snapshot.alerts if a.kind == "cpu_fallback"}
            assert f"PID {probe_like.pid}" not in subjects
            if f"PID {user_job.pid}" in subjects:
                flagged_after = time.monotonic() - loaded
                break
            time.sleep(1.0)
        assert flagged_after is not None and flagged_after < FALLBACK_LIMIT_SECONDS
        rows = {r.pid: r for r in snapshot.processes}
        assert rows[user_job.pid].gpu_index is None and rows[user_job.pid].tensorflow_loaded
        assert rows[probe_like.pid].own_child and rows[probe_like.pid].gpu_index is None
        alert = next(a for a in snapshot.alerts if a.subject == f"PID {user_job.pid}")
        assert alert.severity.name == "WARNING" and snapshot.alerts[0].kind == "cpu_fallback"
    finally:
        sampler.close()
        for process in (probe_like, user_job):
            process.kill()
            process.wait()
