"""Classifying a trial's child: reports, OOM messages, exit statuses; and checking a request."""

from __future__ import annotations

import pytest

from tfgpu_tui.probe.outcome import is_oom_text, trial_from_exit, trial_from_report
from tfgpu_tui.probe.request import ProbeRequest, ProbeRequestError, check_model_spec, normalise_device
from tfgpu_tui.probe.result import ProbeResult, is_power_of_two
from tfgpu_tui.probe.trial import ERROR, FITS, OOM, Trial

BFC_WARNING = (
    "W bfc_allocator.cc:296] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.46GiB with "
    "freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be "
    "performance gains if more memory were available."
)


@pytest.mark.parametrize(
    "text",
    [
        "OOM when allocating tensor with shape[32,64,250,250] and type float on /device:GPU:0 by allocator",
        "Out of memory while trying to allocate 127001552000 bytes. [[{{node cluster_58_1/xla_run}}]]",
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory",
        "failed to alloc 8589934592 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
        "CUBLAS_STATUS_ALLOC_FAILED",
    ],
)
def test_oom_messages_are_recognised(text: str) -> None:
    assert is_oom_text(text)


def test_bfc_not_a_failure_warning_is_not_an_oom() -> None:
    assert not is_oom_text(BFC_WARNING)
    assert trial_from_exit(8, 1, BFC_WARNING + "\nValueError: bad shape").result == ERROR


def test_report_over_budget_counts_as_out_of_memory() -> None:
    report = {"status": "ok", "peak_mb": 130.0, "peak_source": "allocator", "step_seconds": 0.02}
    trial = trial_from_report(64, report, budget_mb=100)
    assert trial.result == OOM and trial.peak_mb == 130 and trial.message == "over the 100 MB budget"
    assert trial_from_report(64, report, budget_mb=200).result == FITS


def test_resource_exhausted_exception_is_oom_other_exceptions_are_errors() -> None:
    oom = {
        "status": "exception",
        "phase": "train",
        "type": "ResourceExhaustedError",
        "message": "Graph error",
    }
    assert trial_from_report(8, oom, 100).result == OOM
    bad = {"status": "exception", "phase": "model", "type": "ValueError", "message": "no such layer"}
    trial = trial_from_report(8, bad, 100)
    assert trial.result == ERROR and trial.message == "ValueError while building the model: no such layer"
    unclear = {
        "status": "exception",
        "phase": "train",
        "type": "ProbeInputError",
        "message": "use a fixed shape",
    }
    assert trial_from_report(8, unclear, 100).message == "use a fixed shape"


@pytest.mark.parametrize("returncode", [-9, 137])
def test_sigkill_counts_as_does_not_fit(returncode: int) -> None:
    assert trial_from_exit(512, returncode, "").result == OOM


def test_crash_keeps_the_stderr_tail() -> None:
    trial = trial_from_exit(8, -11, "line\n" * 30 + "Fatal Python error: Segmentation fault")
    assert trial.result == ERROR and "killed by SIGSEGV" in trial.message
    assert trial.message.endswith("Segmentation fault") and trial.message.count("line") <= 12


@pytest.mark.parametrize(
    ("text", "device"), [("cpu", "CPU"), ("gpu:1", "GPU:1"), ("/GPU:0", "GPU:0"), ("0", "GPU:0")]
)
def test_devices_are_normalised(text: str, device: str) -> None:
    assert normalise_device(text) == device


def test_bad_device_and_models_get_messages(tmp_path) -> None:
    with pytest.raises(ProbeRequestError, match="use CPU or GPU:N"):
        normalise_device("TPU")
    with pytest.raises(ProbeRequestError, match="model file not found"):
        check_model_spec(str(tmp_path / "missing.keras"))
    with pytest.raises(ProbeRequestError, match="package.module:function"):
        check_model_spec("just words")
    saved = tmp_path / "model.keras"
    saved.write_bytes(b"")
    assert check_model_spec(str(saved)) == str(saved)
    assert check_model_spec("builtin:ResNet50") == "builtin:resnet50"
    assert check_model_spec("my_pkg.models:build") == "my_pkg.models:build"
    with pytest.raises(ProbeRequestError, match="budget"):
        ProbeRequest(budget_mb=0).resolved()


def test_result_summary_and_json() -> None:
    request = ProbeRequest(budget_mb=100, budget_source="given")
    trials = [
        Trial(2, FITS, 11.0, 0.006),
        Trial(64, FITS, 60.0, 0.07),
        Trial(180, FITS, 95.0, 0.18),
        Trial(190, OOM, None, None, "out of memory"),
    ]
    result = ProbeResult(request, trials)
    assert (result.max_batch, result.recommended_batch) == (180, 64)
    data = result.as_dict()
    assert data["recommended_is_power_of_two"] is True and data["snippet"] == "batch_size = 64"
    assert data["best_throughput"] == {"batch_size": 180, "samples_per_second": 1000.0}
    assert [t["result"] for t in data["trials"]] == ["fits", "fits", "fits", "oom"]
    text = "\n".join(result.summary_lines())
    assert "Largest batch that fits: 180" in text and "a power of two" in text
    assert is_power_of_two(64) and not is_power_of_two(96) and not is_power_of_two(0)
