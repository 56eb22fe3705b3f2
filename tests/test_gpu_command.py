"""`tfgpu-tui gpus`: the gpustat-like table, --json, --watch, and the no-driver exit."""

from __future__ import annotations

import json
import sys

import pytest
from gpu_fake_pynvml import CODES, FakeGpu, FakePynvml

from tfgpu_tui.cli import main
from tfgpu_tui.commands import gpus


def test_demo_table(capsys: pytest.CaptureFixture) -> None:
    assert main(["gpus", "--demo"]) == 0
    out = capsys.readouterr().out
    assert "[SIMULATED]" in out and "[0] NVIDIA A100-SXM4-80GB" in out and "fan N/A" in out
    assert "[jupyter] experiments/resnet_finetune.ipynb" in out
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


def test_watch_refreshes_until_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml([FakeGpu(util=12)]))
    waits: list[float] = []

    def fake_wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(gpus, "_wait", fake_wait)
    assert main(["gpus", "--watch", "--json", "--interval", "2"]) == 130
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(
        json.loads(line)["devices"][0]["utilization_percent"] == 12 for line in lines
    )
    assert waits[1:] == [2.0, 2.0]


def test_interval_below_minimum_is_refused(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["gpus", "--interval", "0.1"])
    assert exited.value.code == 2 and "0.25" in capsys.readouterr().err
