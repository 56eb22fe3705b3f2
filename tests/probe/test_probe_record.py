"""The probe's answer kept for the efficiency diagnoses (probe/record.py): what is kept of a GPU probe, that a
file not ours counts as none, and that the diagnoses quote it for that GPU only."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from tests.helpers.gpu_alert_helpers import device, proc
from tfgpu_tui.gpu.efficiency import Efficiency, Thresholds
from tfgpu_tui.gpu.model import Activity, Diagnosis
from tfgpu_tui.probe.precision import PrecisionComparison
from tfgpu_tui.probe.record import RecordReader, load_records, record_of, save_record
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.result import ProbeResult
from tfgpu_tui.probe.trial import FITS, OOM, Trial

DAY = 1796640000.0  # 2026-12-07


def probe(device: str = "GPU:0", step: float = 0.1, model: str = "builtin:cnn") -> ProbeResult:
    trials = [Trial(256, FITS, 4000.0, step), Trial(512, FITS, 7000.0, step * 2), Trial(1024, OOM)]
    return ProbeResult(ProbeRequest(model=model, device=device, budget_mb=10000.0), trials)


def test_a_gpu_probe_keeps_its_largest_batch_and_a_comparison_its_speedup(tmp_path: Path) -> None:
    float32, mixed = probe(step=0.2), probe(step=0.08)
    record = record_of(float32, PrecisionComparison(float32, mixed, ""), now=DAY)
    assert record is not None and (record.gpu_index, record.max_batch) == (0, 512)
    assert record.mixed_speedup == 2.5 and record.mixed_policy == "mixed_float16"
    assert record_of(probe(device="CPU")) is None  # a CPU batch says nothing of a GPU
    path = tmp_path / "records.json"
    save_record(record, path)
    save_record(replace(record, gpu_index=3, mixed_speedup=None, mixed_policy=None), path)
    kept = load_records(path)
    assert sorted(kept) == [0, 3] and kept[0] == record
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_file_that_is_not_ours_counts_as_none(tmp_path: Path) -> None:
    path = tmp_path / "records.json"
    entry = {"gpu_index": 0, "model": "m", "max_batch": 8, "measured_at": 1}
    not_ours = [
        "not json",
        "[1, 2]",
        json.dumps({"0": entry | {"gpu_index": -1}}),
        json.dumps({"0": entry | {"model": "\x1b[2J"}}),  # a control sequence for the terminal
        json.dumps({"0": entry | {"mixed_policy": "x"}}),
    ]
    for text in not_ours:
        path.write_text(text)
        assert load_records(path) == {}, text
    path.write_text(json.dumps({"0": entry}))
    assert list(load_records(path)) == [0]
    path.write_text(" " * (64 * 1024 + 1))
    assert load_records(path) == {}  # too big to be ours
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert load_records(fifo) == {}  # refused before an open that would block


def busy_gpu(index: int, sm: float, tensor: float):
    """An H100 reading 97 % with `sm` % SM activity and `tensor` % tensor activity (GPM)."""
    sample = device(index=index, util=97.0, used=20000.0)
    return replace(
        sample, compute_capability=(9, 0), activity=Activity("gpm", sm_active=sm, tensor_active=tensor)
    )


def diagnoses(efficiency: Efficiency, devices, processes) -> list[Diagnosis]:
    found: list[Diagnosis] = []
    for now in range(0, 130, 5):
        found = efficiency.evaluate(float(now), devices, processes)
    return found


def test_the_fixes_quote_the_probe_on_its_gpu_only(tmp_path: Path) -> None:
    path = tmp_path / "records.json"
    float32, mixed = probe(step=0.2), probe(step=0.08)
    first = record_of(float32, PrecisionComparison(float32, mixed, ""), now=DAY)
    assert first is not None
    save_record(first, path)
    efficiency = Efficiency(Thresholds(), RecordReader(path))
    devices = [busy_gpu(0, sm=8.0, tensor=0.0), busy_gpu(1, sm=8.0, tensor=0.0), busy_gpu(2, 70.0, 0.0)]
    jobs = [proc(7, mib=20000.0, sm=60.0, tensorflow_loaded=True, gpu=2)]
    found = {(d.kind, d.gpu_index): d.fix for d in diagnoses(efficiency, devices, jobs)}
    assert "the probe fit batch 512 of builtin:cnn on this GPU (2026-12-07)" in found[("busy_not_working", 0)]
    assert "the probe" not in found[("busy_not_working", 1)]  # no probe ran on GPU 1
    assert "the probe" not in found[("tensor_cores_idle", 2)]
    on_gpu2 = probe("GPU:2", step=0.3)
    second = record_of(on_gpu2, PrecisionComparison(on_gpu2, probe("GPU:2", step=0.1), ""), now=DAY)
    assert second is not None
    save_record(second, path)
    found = {(d.kind, d.gpu_index): d.fix for d in diagnoses(efficiency, devices, jobs)}
    assert "the probe measured mixed_float16 at 3.0x float32's samples/s" in found[("tensor_cores_idle", 2)]
