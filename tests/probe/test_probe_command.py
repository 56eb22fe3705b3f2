"""`tfgpu-tui probe` headless: text and JSON output, exit codes, bad input."""

from __future__ import annotations

import json

import pytest

from tests.helpers.paths import FIXTURES
from tests.helpers.probe_cli import run_probe
from tfgpu_tui.probe import trial_runner as runner

FAKE_WORKER = FIXTURES / "probe" / "fake_worker.py"
# The trials run a stand-in worker, but `probe` first asks the interpreter for its TensorFlow (passed
# explicitly: never whichever Python the machine offers).
pytestmark = pytest.mark.tf


@pytest.fixture(autouse=True)
def fake_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WORKER_SCRIPT", FAKE_WORKER)
    monkeypatch.setenv("FAKE_PROBE_MODE", "linear")


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_probe("--device", "cpu", "--budget-mb", "100", "--json")
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert code == 0
    for key in ("max_batch", "recommended_batch", "budget_mb", "device", "trials"):
        assert key in data
    assert data["device"] == "CPU" and data["budget_mb"] == 100 and 171 <= data["max_batch"] <= 180
    assert all(set(t) >= {"batch_size", "result", "peak_mb", "step_seconds"} for t in data["trials"])
    assert "Probing builtin:cnn on CPU" in out.err  # progress goes to stderr, keeping stdout JSON


def test_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_probe("--device", "CPU", "--budget-mb", "100", "--max-batch", "64") == 0
    out = capsys.readouterr().out
    assert "Largest batch that fits: 64" in out and "Paste: batch_size = 64" in out
    assert "   64  fits" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "gone/model.keras"], "model file not found: gone/model.keras"),
        (["--device", "TPU:0"], "unknown device 'TPU:0'"),
        (["--steps", "0"], "steps per trial must be at least 1"),
        (["--budget-mb", "-5"], "the budget must be a positive number"),
    ],
)
def test_bad_input_exits_2_with_a_message(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run_probe("--device", "CPU", "--budget-mb", "100", *argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_crash_exits_1(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_PROBE_MODE", "crash")
    assert run_probe("--device", "CPU", "--budget-mb", "100") == 1
    assert "Probe stopped: the trial's child process exited with status 3" in capsys.readouterr().out
