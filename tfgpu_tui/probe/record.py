"""The probe's last answer on each GPU of this machine, kept for the efficiency diagnoses: the largest batch
that fit and, after ``--compare-precision``, what mixed precision gained in samples per second. One small
JSON file in the user's state directory, written atomically; what is read back is checked and bounded, and
a file that is not what we wrote counts as none."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tfgpu_tui.paths import state_dir
from tfgpu_tui.safe_files import read_json_object, write_atomically

if TYPE_CHECKING:  # the diagnoses read records without loading the probe
    from tfgpu_tui.probe.precision import PrecisionComparison
    from tfgpu_tui.probe.result import ProbeResult

MAX_RECORD_BYTES = 64 * 1024
MAX_GPUS = 64
MAX_MODEL_CHARS = 200


@dataclass(frozen=True)
class ProbeRecord:
    """What one probe measured on GPU `gpu_index`."""

    gpu_index: int
    model: str
    max_batch: int
    measured_at: float  # seconds since the epoch
    mixed_speedup: float | None = None  # best mixed samples/s over float32's, from --compare-precision
    mixed_policy: str | None = None

    def batch_text(self) -> str:
        """``the probe fit batch 512 of builtin:cnn on this GPU (2026-12-07)``."""
        day = time.strftime("%Y-%m-%d", time.localtime(self.measured_at))
        return f"the probe fit batch {self.max_batch:,} of {self.model} on this GPU ({day})"

    def speedup_text(self) -> str | None:
        """``the probe measured mixed_float16 at 2.6x float32's samples/s``, None without a comparison."""
        if self.mixed_speedup is None:
            return None
        return f"the probe measured {self.mixed_policy} at {self.mixed_speedup:.1f}x float32's samples/s"


def record_path() -> Path:
    return state_dir() / "probe-records.json"


def gpu_index_of(device: str) -> int | None:
    """``GPU:1`` -> 1; None for the CPU."""
    kind, _, index = device.partition(":")
    return int(index) if kind == "GPU" and index.isdigit() else None


def record_of(
    result: ProbeResult, comparison: PrecisionComparison | None = None, now: float | None = None
) -> ProbeRecord | None:
    """What a finished probe on a GPU tells the diagnoses; None on the CPU or when no batch fit."""
    index = gpu_index_of(result.request.device)
    if index is None or result.max_batch is None or result.error:
        return None
    speedup = policy = None
    if comparison is not None and comparison.mixed is not None and not comparison.mixed.error:
        best32, best_mixed = comparison.float32.best_throughput, comparison.mixed.best_throughput
        if best32 and best_mixed and best32.samples_per_second and best_mixed.samples_per_second:
            speedup = round(best_mixed.samples_per_second / best32.samples_per_second, 2)
            policy = comparison.mixed_policy
    model = result.request.model[-MAX_MODEL_CHARS:]
    return ProbeRecord(index, model, result.max_batch, time.time() if now is None else now, speedup, policy)


def save_record(record: ProbeRecord, path: Path | None = None) -> None:
    """Keep `record` for its GPU beside the others; raises OSError when the file cannot be written."""
    path = record_path() if path is None else path
    records = load_records(path)
    records[record.gpu_index] = record
    document = {str(index): asdict(kept) for index, kept in sorted(records.items())[:MAX_GPUS]}
    write_atomically(path, json.dumps(document, indent=1) + "\n")


def load_records(path: Path | None = None) -> dict[int, ProbeRecord]:
    """The kept records by GPU index; empty when there is no file or it is not one we wrote."""
    path = record_path() if path is None else path
    try:
        document = read_json_object(path, MAX_RECORD_BYTES)
    except (OSError, ValueError):
        return {}
    records = {}
    for entry in list(document.values())[:MAX_GPUS]:
        record = _checked(entry)
        if record is not None:
            records[record.gpu_index] = record
    return records


def _checked(entry: object) -> ProbeRecord | None:
    """A record from JSON, every field of the right type and range, else None."""
    if not isinstance(entry, dict):
        return None
    try:
        index, batch, at = entry["gpu_index"], entry["max_batch"], float(entry["measured_at"])
        model, speedup, policy = entry["model"], entry.get("mixed_speedup"), entry.get("mixed_policy")
    except (KeyError, TypeError, ValueError):
        return None
    if not (isinstance(index, int) and 0 <= index < MAX_GPUS and isinstance(batch, int) and batch > 0):
        return None
    if not (isinstance(model, str) and model.isprintable() and math.isfinite(at)):
        return None
    if speedup is not None and not (isinstance(speedup, (int, float)) and 0 < speedup < 100):
        return None
    if policy is not None and policy not in ("mixed_float16", "mixed_bfloat16"):
        return None
    return ProbeRecord(index, model[:MAX_MODEL_CHARS], batch, at, speedup, policy)


class RecordReader:
    """The records as the diagnoses ask for them: the file is read again only when it has changed."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = record_path() if path is None else path
        self._stamp: tuple[int, int] | None = None
        self._records: dict[int, ProbeRecord] = {}

    def __call__(self) -> dict[int, ProbeRecord]:
        try:
            info = self.path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = None
        if stamp != self._stamp:
            self._stamp, self._records = stamp, (load_records(self.path) if stamp else {})
        return self._records
