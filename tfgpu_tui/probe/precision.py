"""float32 against mixed precision: the same search run twice, set side by side, with a word on whether
mixed precision can speed this device up (read from the GPU's compute capability through `gpu.nvml`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from tfgpu_tui.gpu.model import DeviceInfo
from tfgpu_tui.gpu.nvml import NvmlSource
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.result import ProbeResult
from tfgpu_tui.probe.trial import Trial
from tfgpu_tui.probe.trial_runner import TrialRunner, run_probe
from tfgpu_tui.probe.worker import mixed_policy_for

TENSOR_CORE_CAPABILITY = (7, 0)
FLOAT32 = "float32"


def precision_name(request: ProbeRequest) -> str:
    """'float32', or the mixed policy the child uses on the request's device."""
    return mixed_policy_for(request.device) if request.mixed_precision else FLOAT32


def read_gpu_facts() -> tuple[list[DeviceInfo], str]:
    """Every GPU's static facts (compute capability ...), or an empty list and why."""
    source = NvmlSource()
    try:
        reading = source.read()
        facts = source.device_info()
    finally:
        source.close()
    if reading.error is not None:
        return [], reading.error.message
    return facts, ""


def precision_note(device: str) -> str:
    """What mixed precision can do on the device, from NVML's compute capability on a GPU."""
    if device == "CPU":
        return note_for(device, None, "")
    index = int(device.split(":")[1])
    facts, reason = read_gpu_facts()
    info = next((f for f in facts if f.index == index), None)
    capability = info.compute_capability if info is not None else None
    return note_for(device, capability, reason or f"NVML does not report it for {device}")


def note_for(device: str, capability: tuple[int, int] | None, reason: str) -> str:
    """The note for a device with a known (or unknown, with the reason) compute capability."""
    if device == "CPU":
        return (
            "CPU: mixed precision runs as mixed_bfloat16 (float16 math on a CPU is emulated and slow); it "
            "speeds training up only on CPUs with bfloat16 instructions (AVX512-BF16, AMX), so read the "
            "mixed column for memory, not speed."
        )
    if capability is None:
        return (
            f"Cannot read the compute capability of {device} ({reason}); mixed_float16 needs 7.0+ for speed."
        )
    version = f"{capability[0]}.{capability[1]}"
    if capability < TENSOR_CORE_CAPABILITY:
        return (
            f"{device} has compute capability {version} (below 7.0, no Tensor Cores): mixed_float16 will not "
            "speed training up here; it can still save activation memory."
        )
    return f"{device} has compute capability {version} (Tensor Cores): mixed_float16 can speed training up."


@dataclass
class PrecisionComparison:
    """The float32 probe and the mixed-precision probe of the same request, and the note on the device."""

    float32: ProbeResult
    mixed: ProbeResult | None
    note: str

    @property
    def mixed_policy(self) -> str:
        """``mixed_float16`` on a GPU, ``mixed_bfloat16`` on the CPU."""
        return mixed_policy_for(self.float32.request.device)

    def rows(self) -> list[tuple[str, str, str]]:
        """(what, float32, mixed) rows: largest batch, recommended batch, best throughput, peak at the
        largest batch."""
        figures: list[tuple[str, Callable[[ProbeResult], object]]] = [
            ("largest batch", lambda r: f"{r.max_batch:,} (cap)" if r.capped else r.max_batch),
            ("recommended batch", lambda r: r.recommended_batch),
            ("best samples/s", throughput_text),
            ("peak MB at largest", peak_at_largest),
        ]
        return [(label, cell(self.float32, value), cell(self.mixed, value)) for label, value in figures]

    def table_lines(self) -> list[str]:
        """The side-by-side table as fixed-width text, a header line first."""
        rows = [("", FLOAT32, self.mixed_policy), *self.rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        return [f"{a:<{widths[0]}}  {b:>{widths[1]}}  {c:>{widths[2]}}" for a, b, c in rows]

    def mixed_lines(self) -> list[str]:
        """Why the mixed run stopped, or its rule of thumb beside its measured peak."""
        if self.mixed is None:
            return []
        if self.mixed.error:
            return [f"{self.mixed_policy} stopped: {self.mixed.error}"]
        return [f"{self.mixed_policy}: {line}" for line in self.mixed.rule_of_thumb_lines()[1:]]

    def lines(self) -> list[str]:
        """The table, the note on the device and the mixed run's own lines."""
        return [*self.table_lines(), self.note, *self.mixed_lines()]

    def as_dict(self) -> dict[str, object]:
        """The comparison for JSON: each run's headline figures (the mixed run's trials too) and the note."""
        return {
            "mixed_policy": self.mixed_policy,
            "note": self.note,
            FLOAT32: headline(self.float32),
            "mixed": None
            if self.mixed is None
            else {**headline(self.mixed), "trials": trial_dicts(self.mixed)},
        }


def trial_dicts(result: ProbeResult) -> list[dict[str, object]]:
    """Every trial of a run as JSON-ready data."""
    return [t.as_dict() for t in result.trials]


def headline(result: ProbeResult) -> dict[str, object]:
    """The figures the comparison sets side by side."""
    full = result.as_dict()
    keys = (
        "max_batch",
        "max_batch_capped",
        "recommended_batch",
        "best_throughput",
        "rule_of_thumb",
        "error",
        "wall_seconds",
    )
    return {key: full[key] for key in keys} | {"peak_mb_at_max_batch": peak_at_largest(result)}


def peak_at_largest(result: ProbeResult) -> float | None:
    """The measured peak of the largest batch that fits."""
    best = next((t for t in result.trials if t.fits and t.batch_size == result.max_batch), None)
    return None if best is None or best.peak_mb is None else round(best.peak_mb, 1)


def throughput_text(result: ProbeResult) -> str | None:
    """'12,345 (at 256)', or None."""
    best = result.best_throughput
    if best is None:
        return None
    return f"{best.samples_per_second or 0.0:,.0f} (at {best.batch_size})"


def cell(result: ProbeResult | None, value: Callable[[ProbeResult], object]) -> str:
    """One table cell: the value, '-' when there is none, 'not run' without a result, 'error' on one."""
    if result is None:
        return "not run"
    if result.error:
        return "error"
    figure = value(result)
    if figure is None:
        return "-"
    return f"{figure:,}" if isinstance(figure, (int, float)) else str(figure)


def run_comparison(
    request: ProbeRequest,
    runner: TrialRunner | None = None,
    on_pass_start: Callable[[ProbeRequest], None] = lambda request: None,
    on_trial_start: Callable[[int], None] = lambda batch: None,
    on_trial_done: Callable[[Trial], None] = lambda trial: None,
) -> PrecisionComparison:
    """Probe in float32, then (unless cancelled or stopped on an error) with the mixed-precision policy."""
    runner = runner or TrialRunner(request)
    note = precision_note(request.device)
    results: list[ProbeResult] = []
    for mixed in (False, True):
        pass_request = replace(request, mixed_precision=mixed)
        runner.request = pass_request
        on_pass_start(pass_request)
        results.append(run_probe(pass_request, runner, None, on_trial_start, on_trial_done))
        if runner.cancelled or results[-1].error:
            break
    return PrecisionComparison(results[0], results[1] if len(results) > 1 else None, note)
