"""The log-signature knowledge base: every row loads, matches its own sample, and maps to a fix."""

from __future__ import annotations

from tfgpu_tui.alerts import Severity
from tfgpu_tui.env.diagnoses import (
    diagnose_line,
    diagnose_lines,
    diagnose_text,
    load_signatures,
)

CONSTRUCTED = "[constructed from source format string] "


def test_every_signature_matches_its_own_sample_line():
    signatures = load_signatures()
    assert len(signatures) >= 50
    assert len({s.id for s in signatures}) == len(signatures)
    for signature in signatures:
        sample = signature.sample_line.replace(CONSTRUCTED, "")
        found = diagnose_line(sample, signatures=[signature], include_benign=True)
        assert found is not None, signature.id


def test_oom_line_is_critical_with_details_and_fix():
    line = (
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
        "shape[256,1024,64,64] and type float on /job:localhost/replica:0/task:0/device:GPU:0 "
        "by allocator GPU_0_bfc"
    )
    found = diagnose_line(line, line_number=7)
    assert found is not None
    assert found.id == "OOM_TENSOR"
    assert found.severity is Severity.CRITICAL
    assert found.details["shape"] == "256,1024,64,64"
    assert "batch size" in found.fix.lower()
    assert found.as_dict()["line_number"] == 7


def test_benign_lines_are_skipped_unless_asked():
    line = "I0000 00:00:1744212707.411665 14 cuda_dnn.cc:473] Loaded cuDNN version 91002"
    assert diagnose_line(line) is None
    found = diagnose_line(line, include_benign=True)
    assert found is not None and found.id == "CUDNN_LOADED" and not found.signature.is_problem


def test_diagnose_lines_numbers_matches_and_ignores_ordinary_lines():
    lines = [
        "Epoch 1/3",
        "W0000 00:00:1744212707.411665 14 gpu_device.cc:2341] Cannot dlopen some GPU libraries. "
        "Please make sure the missing libraries mentioned above are installed properly",
        "Skipping registering GPU devices...",
        "hello from print()",
    ]
    found = diagnose_lines(lines)
    assert [(d.id, d.line_number) for d in found] == [("CANNOT_DLOPEN_GPU_LIBS", 2), ("SKIP_GPU_REG", 3)]
    assert [d.id for d in diagnose_text("\n".join(lines))] == ["CANNOT_DLOPEN_GPU_LIBS", "SKIP_GPU_REG"]
