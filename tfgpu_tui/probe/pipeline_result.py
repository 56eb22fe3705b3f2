"""The pipeline probe's result: the three measured rates and what follows from them, or one line saying why
nothing was measured; as sentences for the CLI and the tab, and as the JSON ``pipeline`` object."""

from __future__ import annotations

from dataclasses import dataclass

from tfgpu_tui.probe.pipeline_request import PipelineRequest
from tfgpu_tui.probe.pipeline_verdict import (
    Fix,
    Rates,
    fixes,
    input_bound,
    prefetch_helped,
    verdict_line,
    wait_percent,
)


@dataclass(frozen=True)
class PipelineMeasurement:
    """What the child measured: the rates, and facts the fixes need."""

    rates: Rates
    ends_with_prefetch: bool = False
    cpu_count: int | None = None


@dataclass
class PipelineResult:
    """One pipeline probe: its measurement, or `error` (one line) when there is none."""

    request: PipelineRequest
    measurement: PipelineMeasurement | None = None
    error: str = ""
    cancelled: bool = False
    wall_seconds: float = 0.0

    @property
    def input_bound(self) -> bool | None:
        """Whether the model waits for input (None when not measured)."""
        if self.measurement is None:
            return None
        rates = self.measurement.rates
        return input_bound(rates.pipeline, rates.model)

    @property
    def gpu_wait_percent(self) -> float | None:
        """The share of time the model waits for input (None when not measured)."""
        if self.measurement is None:
            return None
        return wait_percent(self.measurement.rates.pipeline, self.measurement.rates.model)

    def fixes(self) -> list[Fix]:
        """The fixes, measured ones first (empty when not input-bound or not measured)."""
        found = self.measurement
        return [] if found is None else fixes(found.rates, found.ends_with_prefetch, found.cpu_count)

    def summary_lines(self) -> list[str]:
        """The result as sentences: the verdict, each rate and what it rests on, the fixes."""
        if self.cancelled:
            return ["Pipeline probe cancelled."]
        if self.measurement is None:
            return [f"Pipeline probe stopped: {self.error}"]
        rates = self.measurement.rates
        request = self.request
        seconds = f"{request.measure_seconds:g} s"
        helped = "helped" if prefetch_helped(rates) else "did not help"
        lines = [
            verdict_line(rates, request.device),
            f"Measured: {request.spec} alone {rates.pipeline:,.0f} samples/s, with "
            f".prefetch(tf.data.AUTOTUNE) appended {rates.with_prefetch:,.0f} samples/s (prefetch {helped}), "
            f"each over about {seconds} "
            f"after warm-up; {request.model} on {request.device} {rates.model:,.0f} samples/s "
            "(median step, on one of the pipeline's batches replayed from memory).",
        ]
        found = self.fixes()
        if found:
            lines.append("Fixes, measured first:")
            lines += [f"  {number}. {fix.line()}" for number, fix in enumerate(found, 1)]
        return lines

    def as_dict(self) -> dict[str, object]:
        """The JSON ``pipeline`` object (the five headline keys are documented in docs/pipeline-probe.md)."""
        found = self.measurement
        rates = None if found is None else found.rates
        wait = self.gpu_wait_percent
        return {
            "spec": self.request.spec,
            "samples_per_second": None if rates is None else round(rates.pipeline, 1),
            "with_prefetch_samples_per_second": None if rates is None else round(rates.with_prefetch, 1),
            "model_samples_per_second": None if rates is None else round(rates.model, 1),
            "input_bound": self.input_bound,
            "gpu_wait_percent": None if wait is None else round(wait, 1),
            "batch_size": None if rates is None else rates.batch_size,
            "ends_with_prefetch": None if found is None else found.ends_with_prefetch,
            "fixes": [{"fix": fix.text, "measured": fix.measured} for fix in self.fixes()],
            "measure_seconds": self.request.measure_seconds,
            "cancelled": self.cancelled,
            "error": self.error or None,
            "wall_seconds": round(self.wall_seconds, 2),
        }
