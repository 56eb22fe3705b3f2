"""prometheus/tfgpu-alerts.yml against what `tfgpu-tui export` really serves: the exporter runs on fakenvml
(GPU 0 nearly full, GPU 1 lost) and follows a crashed and a finished training log; its scraped series become
promtool's input, and each rule's expression must select exactly the series it is about (the kind, subject
and log labels as the exporter writes them), with the alerts' near misses (the other log, the other GPU) left
out."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.paths import ROOT
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e  # real child processes

RULES = ROOT / "prometheus" / "tfgpu-alerts.yml"
TARGET = {"instance": "box:9400", "job": "tfgpu"}  # the labels Prometheus adds to each scraped series
SCENARIO = (
    'device name="NVIDIA H200" total_mib=143771 base_used_mib=140000 util=0\n'
    'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util=0\n'
    "error gpu=1 field=all code=GPU_IS_LOST\n"
)
BAR = "10/10 [==============================] - 1s 100ms/step"
FINISHED = f"Epoch 1/2\n{BAR} - loss: 0.5000\nEpoch 2/2\n{BAR} - loss: 0.2500\n"
CRASHED = (
    f"Epoch 1/3\n{BAR} - loss: 0.5000\nEpoch 2/3\nTraceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
    "shape[8192,8192] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
)


def selector(name: str, labels: dict[str, str]) -> str:
    inner = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def number(value: float) -> str:
    """A value in promtool's series notation (NaN, Inf, -Inf as Prometheus writes them)."""
    return {"nan": "NaN", "inf": "Inf", "-inf": "-Inf"}.get(repr(value), repr(value))


def scrape(url: str) -> list[tuple[str, dict[str, str], float]]:
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return [
        (sample.name, {**sample.labels, **TARGET}, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def exported(tmp_path: Path, lib: Path) -> list[tuple[str, dict[str, str], float]]:
    """One scrape of a real exporter, once it reports the lost GPU and both logs' ends."""
    scenario = tmp_path / "scenario.txt"
    scenario.write_text(SCENARIO)
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib), "FAKE_NVML_SCENARIO": str(scenario)}
    logs = [str(tmp_path / "crash.log"), str(tmp_path / "fin.log")]
    command = [
        sys.executable,
        "-m",
        "tfgpu_tui",
        "export",
        "--port",
        "0",
        "--interval",
        "0.5",
        "--log",
        *logs,
    ]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        url = re.search(r"serving (\S+)", child.stdout.readline())
        assert url is not None, child.stderr.read() if child.stderr else ""
        samples: list[tuple[str, dict[str, str], float]] = []

        def complete() -> bool:
            samples[:] = scrape(url.group(1))
            kinds = {labels.get("kind") for name, labels, _ in samples if name == "tfgpu_alert_active"}
            return {"gpu_lost", "memory_full", "training_exception", "training_finished"} <= kinds

        wait_for(complete, timeout=60)
        return samples
    finally:
        child.terminate()
        child.wait(timeout=60)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed (Debian: prometheus)")
def test_each_rule_selects_the_exporters_own_series(fakenvml_lib_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "crash.log").write_text(CRASHED)
    (tmp_path / "fin.log").write_text(FINISHED)
    samples = exported(tmp_path, fakenvml_lib_dir)
    rules = {
        rule["alert"]: rule["expr"]
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
    }

    def the(name: str, **labels: str) -> tuple[dict[str, str], float]:
        [found] = [(have, v) for n, have, v in samples if n == name and labels.items() <= have.items()]
        return found

    crash, finished = str(tmp_path / "crash.log"), str(tmp_path / "fin.log")
    lost = the("tfgpu_alert_active", kind="gpu_lost")
    crashed = the("tfgpu_alert_active", kind="training_exception", subject=crash)
    done = the("tfgpu_training_finished", log=finished)
    full, fb_used = the("DCGM_FI_DEV_FB_USED", gpu="0")
    fb_free = the("DCGM_FI_DEV_FB_FREE", gpu="0")[1]
    assert lost[0]["subject"] == "GPU 1" and done[1] == 1.0
    expected = {
        "TfgpuGpuLost": [(selector("tfgpu_alert_active", lost[0]), 1.0)],
        "TfgpuTrainingCrashed": [(selector("tfgpu_alert_active", crashed[0]), 1.0)],
        "TfgpuTrainingFinished": [(selector("tfgpu_training_finished", done[0]), 1.0)],
        "TfgpuGpuMemoryFull": [(selector("", full), fb_used / (fb_used + fb_free))],
        "TfgpuTrainingStalled": [],  # both logs have just grown, and one of them crashed
    }
    tests = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": selector(name, labels), "values": f"{number(value)}x10"}
                    for name, labels, value in samples
                ],
                "promql_expr_test": [
                    {
                        "expr": rules[alert],
                        "eval_time": "5m",
                        "exp_samples": [{"labels": labels, "value": value} for labels, value in series],
                    }
                    for alert, series in expected.items()
                ],
            }
        ],
    }
    test_file = tmp_path / "exported.test.yml"
    test_file.write_text(yaml.safe_dump(tests))
    result = subprocess.run(
        ["promtool", "test", "rules", str(test_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
