"""`tfgpu-tui gpus`: the gpustat-like table, --json, --watch, and the no-driver exit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.gpu_fake_pynvml import CODES, FakePynvml
from tfgpu_tui.cli import main

pytestmark = pytest.mark.e2e  # real child processes


def test_demo_table(capsys: pytest.CaptureFixture) -> None:
    assert main(["gpus", "--demo"]) == 0
    out = capsys.readouterr().out
    assert "[SIMULATED]" in out and "[0] NVIDIA A100-SXM4-80GB" in out and "fan N/A" in out
    assert "notebook experiments/resnet_finetune.ipynb" in out
    assert "has TensorFlow loaded but holds no GPU memory" in out and "fix:" in out


def test_demo_json_keys(capsys: pytest.CaptureFixture) -> None:
    assert main(["--demo", "gpus", "--json"]) == 0  # --demo works before the subcommand too
    data = json.loads(capsys.readouterr().out)
    assert data["error"] is None and data["simulated"] is True
    for device in data["devices"]:
        assert {"index", "name", "utilization_percent", "memory_used_mib", "memory_total_mib"} <= set(device)
    for process in data["processes"]:
        assert {"pid", "gpu_index", "gpu_memory_mib", "user", "command"} <= set(process)
    assert {a["kind"] for a in data["alerts"]} >= {"cpu_fallback", "stale_vram"}
    assert all("message" in a and "fix" in a for a in data["alerts"])


@pytest.mark.parametrize("as_json", [False, True])
def test_no_driver_exits_nonzero_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, as_json: bool
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml(init_error=CODES["DriverNotLoaded"]))
    assert main(["gpus", *(["--json"] if as_json else [])]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    if as_json:
        error = json.loads(captured.out)["error"]
        assert error["kind"] == "driver_not_loaded" and "modprobe" in error["fix"]
    else:
        assert "kernel module is not loaded" in captured.out and "modprobe nvidia" in captured.out


def default_sigint() -> None:
    """In the child before exec: SIGINT raises KeyboardInterrupt, whatever pytest inherited (started in the
    background by a script, SIGINT is ignored, and Python then leaves it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_watch_refreshes_until_interrupted(fakenvml_lib_dir: Path, tmp_path: Path) -> None:
    """`gpus --watch --json` on the scripted NVML prints one line per refresh until Ctrl+C, then exits 130."""
    scenario = tmp_path / "scenario.txt"
    scenario.write_text('device name="NVIDIA H200" util=12\n')
    env = {**os.environ, "LD_LIBRARY_PATH": str(fakenvml_lib_dir), "FAKE_NVML_SCENARIO": str(scenario)}
    command = [sys.executable, "-m", "tfgpu_tui", "gpus", "--watch", "--json", "--interval", "0.25"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, preexec_fn=default_sigint)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert all(json.loads(line)["devices"][0]["utilization_percent"] == 12 for line in lines)


def test_interval_below_minimum_is_refused(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["gpus", "--interval", "0.1"])
    assert exited.value.code == 2 and "0.25" in capsys.readouterr().err
