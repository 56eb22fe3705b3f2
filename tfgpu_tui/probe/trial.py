"""One trial of the batch probe: a batch size and what happened when it ran."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tfgpu_tui.probe.rule_of_thumb import ModelFacts, estimate


class TrialResult(str, Enum):
    """How a trial ended (a str, so that it reads and serialises as its value)."""

    FITS = "fits"
    OOM = "oom"  # out of memory, or over the budget
    ERROR = "error"
    TIMEOUT = "timeout"


FITS, OOM, ERROR, TIMEOUT = TrialResult


@dataclass(frozen=True)
class Trial:
    """The outcome of training a few steps at one batch size in a fresh child process.

    Attributes:
        batch_size: the batch size tried.
        result: one of ``fits``, ``oom`` (out of memory or over the budget), ``error``, ``timeout``.
        peak_mb: peak memory of the steps after the first, in MB (None when not measured).
        step_seconds: median seconds per training step after the first (None when not measured).
        message: why it did not fit, or what went wrong; empty when it fits.
        peak_source: where ``peak_mb`` came from: ``allocator`` (TensorFlow's) or ``rss`` (the child's peak
            resident memory); empty when not measured.
        facts: what the child reported about the model (parameter counts, optimizer slots ...), or None.
    """

    batch_size: int
    result: TrialResult
    peak_mb: float | None = None
    step_seconds: float | None = None
    message: str = ""
    peak_source: str = ""
    facts: ModelFacts | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "result", TrialResult(self.result))  # a misspelt result fails here

    @property
    def fits(self) -> bool:
        """Whether the batch ran within the budget."""
        return self.result == FITS

    @property
    def samples_per_second(self) -> float | None:
        """Training throughput, or None when the step time is unknown."""
        if not self.step_seconds:
            return None
        return self.batch_size / self.step_seconds

    @property
    def rule_of_thumb_mb(self) -> float | None:
        """The rule-of-thumb memory estimate at this batch size, or None without model facts."""
        return None if self.facts is None else estimate(self.facts, self.batch_size).total_mb

    def as_dict(self) -> dict[str, object]:
        """The trial as plain JSON-ready data."""
        speed = self.samples_per_second
        return {
            "batch_size": self.batch_size,
            "result": self.result.value,
            "peak_mb": None if self.peak_mb is None else round(self.peak_mb, 1),
            "step_seconds": None if self.step_seconds is None else round(self.step_seconds, 5),
            "samples_per_second": None if speed is None else round(speed, 1),
            "peak_source": self.peak_source,
            "rule_of_thumb_mb": None if self.rule_of_thumb_mb is None else round(self.rule_of_thumb_mb, 1),
            "message": self.message,
        }
