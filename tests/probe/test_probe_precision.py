"""float32 against mixed precision side by side (fake worker), and the note on the device's compute
capability (NVML facts faked). The tab's comparison is in test_probe_tab."""

from __future__ import annotations

import json

import pytest

from tests.helpers.paths import FIXTURES
from tests.helpers.probe_cli import run_probe
from tfgpu_tui.gpu.model import DeviceInfo
from tfgpu_tui.probe import precision
from tfgpu_tui.probe import trial_runner as runner
from tfgpu_tui.probe.precision import note_for, precision_note, run_comparison
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.trial_runner import TrialRunner

FAKE_WORKER = FIXTURES / "probe" / "fake_worker.py"
# The trials run a stand-in worker, but `probe` first asks the interpreter for its TensorFlow (passed
# explicitly: never whichever Python the machine offers).
pytestmark = pytest.mark.tf


def gpu(capability: tuple[int, int] | None) -> DeviceInfo:
    """GPU 0's static facts as NVML would give them, with the given compute capability."""
    return DeviceInfo(0, "Tesla P100", None, 16_280.0, 250.0, capability, True)


@pytest.fixture(autouse=True)
def fake_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WORKER_SCRIPT", FAKE_WORKER)
    monkeypatch.setenv("FAKE_PROBE_MODE", "linear")


def test_below_capability_7_mixed_precision_will_not_speed_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(precision, "read_gpu_facts", lambda: ([gpu((6, 0))], ""))
    note = precision_note("GPU:0")
    assert note.startswith("GPU:0 has compute capability 6.0 (below 7.0, no Tensor Cores)")
    assert "mixed_float16 will not speed training up" in note


def test_other_devices_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "Tensor Cores): mixed_float16 can speed" in note_for("GPU:1", (8, 0), "")
    monkeypatch.setattr(precision, "read_gpu_facts", lambda: ([], "no NVIDIA driver is installed here"))
    assert "Cannot read the compute capability of GPU:0 (no NVIDIA driver" in precision_note("GPU:0")
    cpu = precision_note("CPU")
    assert "mixed_bfloat16" in cpu and "emulated and slow" in cpu and "for memory, not speed" in cpu


def test_comparison_runs_both_precisions() -> None:
    request = ProbeRequest(device="CPU", budget_mb=100.0, max_batch=4096)
    passes: list[bool] = []
    comparison = run_comparison(
        request, TrialRunner(request, FAKE_WORKER), on_pass_start=lambda r: passes.append(r.mixed_precision)
    )
    assert passes == [False, True]
    float32, mixed = comparison.float32, comparison.mixed
    assert mixed is not None and not float32.request.mixed_precision and mixed.request.mixed_precision
    assert (
        171 <= float32.max_batch <= 180 and 342 <= mixed.max_batch <= 360
    )  # fake peak 0.5 vs 0.25 MB/sample
    rows = dict((label, (a, b)) for label, a, b in comparison.rows())
    assert rows["largest batch"] == (f"{float32.max_batch:,}", f"{mixed.max_batch:,}")
    assert rows["recommended batch"] == (f"{float32.recommended_batch:,}", f"{mixed.recommended_batch:,}")
    assert rows["best samples/s"][1].endswith(f"(at {mixed.best_throughput.batch_size})")
    header = comparison.table_lines()[0]
    assert header.split() == ["float32", "mixed_bfloat16"]
    # The mixed run's facts say bfloat16 activations: its rule of thumb halves them.
    assert comparison.mixed_lines()[0].startswith(f"mixed_bfloat16: Rule of thumb at batch {mixed.max_batch}")


def test_cli_compare_precision_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_probe("--device", "cpu", "--budget-mb", "100", "--compare-precision", "--json")
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert code == 0 and "-- float32" in captured.err and "-- mixed_bfloat16" in captured.err
    comparison = data["comparison"]
    assert comparison["mixed_policy"] == "mixed_bfloat16" and "emulated" in comparison["note"]
    assert comparison["float32"]["max_batch"] == data["max_batch"]
    assert 342 <= comparison["mixed"]["max_batch"] <= 360
    assert (
        comparison["mixed"]["best_throughput"]["samples_per_second"]
        > data["best_throughput"]["samples_per_second"]
    )
    assert {t["batch_size"] for t in comparison["mixed"]["trials"]} >= {comparison["mixed"]["max_batch"]}
    assert comparison["mixed"]["rule_of_thumb"]["activations_mb"] == pytest.approx(
        65_536 * comparison["mixed"]["max_batch"] * 2 / 2**20, abs=0.01
    )


def test_cli_without_comparison_has_a_null_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_probe("--device", "cpu", "--budget-mb", "100", "--max-batch", "64", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["comparison"] is None and data["params"]["params_trainable"] == 1_048_576


def test_cli_compare_precision_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_probe("--device", "cpu", "--budget-mb", "100", "--compare-precision") == 0
    out = capsys.readouterr().out
    table = out[out.index("float32") :]
    assert "largest batch" in table and "recommended batch" in table and "best samples/s" in table
    assert "Rule of thumb at batch" in out and "the measured peak is" in out


def test_compare_and_mixed_precision_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_probe("--device", "cpu", "--budget-mb", "100", "--compare-precision", "--mixed-precision")
    assert exit_info.value.code == 2
    assert "not allowed with argument --compare-precision" in capsys.readouterr().err
