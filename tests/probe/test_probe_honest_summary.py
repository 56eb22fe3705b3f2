"""What the probe says is what it measured (issue 24): a batch that hit --max-batch is named the cap, one
step per trial gives no speed (and says why), a missing GPU is named with the CPU as the alternative."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tests.helpers.paths import FIXTURES
from tests.helpers.probe_cli import run_probe
from tfgpu_tui.probe import budget, worker
from tfgpu_tui.probe import trial_runner as runner
from tfgpu_tui.probe.precision import PrecisionComparison
from tfgpu_tui.probe.request import ProbeRequest, steps_per_trial
from tfgpu_tui.probe.result import ProbeResult
from tfgpu_tui.probe.trial import Trial

FAKE_WORKER = FIXTURES / "probe" / "fake_worker.py"
# The trials run a stand-in worker, but `probe` first asks the interpreter for its TensorFlow (passed
# explicitly: never whichever Python the machine offers).
pytestmark = pytest.mark.tf
CAP = "64 (the --max-batch cap; larger may fit)"


@pytest.fixture(autouse=True)
def fake_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WORKER_SCRIPT", FAKE_WORKER)
    monkeypatch.setenv("FAKE_PROBE_MODE", "linear")


def result(max_batch: int, *fitting: int) -> ProbeResult:
    request = ProbeRequest(budget_mb=2000.0, max_batch=max_batch)
    return ProbeResult(request, [Trial(batch, "fits", 10.0 + batch, 0.01) for batch in fitting])


def test_a_largest_batch_at_the_cap_is_named_the_cap_not_the_budget() -> None:
    capped = result(64, 2, 8, 64)
    assert capped.capped and f"Largest batch that fits: {CAP}." in capped.summary_lines()
    assert capped.as_dict()["max_batch_capped"] is True
    free = result(8192, 2, 8, 64)
    assert not free.capped and "Largest batch that fits: 64 (2,000 MB budget)." in free.summary_lines()
    assert free.as_dict()["max_batch_capped"] is False
    table = PrecisionComparison(capped, result(64, 2, 32), "note").table_lines()
    assert "64 (cap)" in table[1] and table[1].rstrip().endswith("32")


def test_the_cli_says_the_cap_in_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_probe("--device", "CPU", "--budget-mb", "100", "--max-batch", "64") == 0
    assert f"Largest batch that fits: {CAP}." in capsys.readouterr().out
    assert run_probe("--device", "CPU", "--budget-mb", "100", "--max-batch", "64", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["max_batch"] == 64 and data["max_batch_capped"] is True


def test_one_step_per_trial_reports_no_speed_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_probe("--device", "CPU", "--budget-mb", "100", "--steps", "1") == 0
    out = capsys.readouterr().out
    assert "1 step per trial" in out and "1 steps" not in out
    assert "Best throughput" not in out and "Speed not measured" in out and "--steps 2" in out
    assert run_probe("--device", "CPU", "--budget-mb", "100", "--steps", "1", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["max_batch"] is not None and data["best_throughput"] is None and data["speed_note"]
    assert all(t["step_seconds"] is None and t["samples_per_second"] is None for t in data["trials"])
    assert steps_per_trial(3) == "3 steps per trial"


def test_the_worker_never_times_the_first_step() -> None:
    assert worker.step_time([0.855]) is None  # compile time is not a speed
    assert worker.step_time([0.855, 0.004, 0.005, 0.0043]) == 0.0043


def test_a_gpu_that_is_not_there_is_named_with_the_cpu_as_the_alternative(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(budget, "read_gpus", lambda: ([], "no NVIDIA driver is installed here"))
    assert run_probe("--device", "GPU:7") == 2
    err = capsys.readouterr().err
    assert "there is no GPU:7" in err and "--device CPU" in err and "give a budget" not in err
    one = [SimpleNamespace(index=0, memory_total_mib=81920.0, memory_used_mib=1920.0, mig_mode=False)]
    monkeypatch.setattr(budget, "read_gpus", lambda: (one, ""))
    assert run_probe("--device", "GPU:7", "--budget-mb", "100") == 2  # before any child starts
    err = capsys.readouterr().err
    assert "there is no GPU:7: this machine has 1 GPU(s) (GPU:0)" in err and "--device CPU" in err


def test_the_child_names_the_missing_gpu_and_the_cpu_too() -> None:
    fake_tf = SimpleNamespace(config=SimpleNamespace(list_physical_devices=lambda kind: []))
    expected = "there is no GPU:7: TensorFlow sees no GPU; probe the CPU"
    with pytest.raises(worker.ProbeInputError, match=expected):
        worker.configure_device(fake_tf, "GPU:7", 100.0)
