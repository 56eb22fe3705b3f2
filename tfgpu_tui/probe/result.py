"""The outcome of a whole probe: the largest batch that fits, the one to use, the best throughput."""

from __future__ import annotations

from dataclasses import dataclass, field

from tfgpu_tui.probe.request import MIN_TIMED_STEPS, ProbeRequest, steps_per_trial
from tfgpu_tui.probe.rule_of_thumb import FORMULA, Estimate, ModelFacts, estimate, off_by, ratio_words
from tfgpu_tui.probe.search import RECOMMENDED_FRACTION, largest_fitting
from tfgpu_tui.probe.trial import ERROR, Trial


def is_power_of_two(value: int) -> bool:
    """Whether a positive integer is a power of two."""
    return value > 0 and value & (value - 1) == 0


@dataclass
class ProbeResult:
    """Every trial of one probe and what follows from them. Only batches that ran and fitted are reported."""

    request: ProbeRequest
    trials: list[Trial] = field(default_factory=list)
    cancelled: bool = False
    wall_seconds: float = 0.0

    @property
    def max_batch(self) -> int | None:
        """The largest batch that ran within the budget."""
        best = largest_fitting(self.trials)
        return best.batch_size if best else None

    @property
    def capped(self) -> bool:
        """Whether the largest batch that fits is the request's upper bound (``--max-batch``): the search
        stopped there, and a larger batch may fit too."""
        return self.max_batch is not None and self.max_batch >= self.request.max_batch

    @property
    def speed_note(self) -> str:
        """Why no speed is reported (one step per trial), or empty."""
        if self.request.timed:
            return ""
        return (
            f"Speed not measured: with {steps_per_trial(self.request.steps)} the only step includes tracing "
            f"and compilation; use --steps {MIN_TIMED_STEPS} or more for samples/s."
        )

    def largest_text(self) -> str:
        """The largest batch that fits, with what bounds it: the budget, or the --max-batch cap."""
        if self.capped:
            return f"{self.max_batch} (the --max-batch cap; larger may fit)"
        return f"{self.max_batch} ({self.request.budget_mb:,.0f} MB budget)"

    @property
    def recommended_batch(self) -> int | None:
        """The largest batch that ran with peak memory under 90 % of the budget."""
        limit = RECOMMENDED_FRACTION * self.request.budget_mb
        safe = [t.batch_size for t in self.trials if t.fits and t.peak_mb is not None and t.peak_mb < limit]
        return max(safe, default=None)

    @property
    def best_throughput(self) -> Trial | None:
        """The fitting trial with the most samples per second."""
        timed = [t for t in self.trials if t.fits and t.samples_per_second is not None]
        return max(timed, key=lambda t: t.samples_per_second or 0.0, default=None)

    @property
    def facts(self) -> ModelFacts | None:
        """What the children reported about the model (the same in every trial), or None."""
        return next((t.facts for t in self.trials if t.facts is not None), None)

    def rule_of_thumb(self) -> tuple[Estimate, float] | None:
        """The rule-of-thumb estimate at the largest batch that fits, and that trial's measured peak."""
        best = largest_fitting(self.trials)
        if best is None or best.facts is None or best.peak_mb is None:
            return None
        return estimate(best.facts, best.batch_size), best.peak_mb

    def rule_of_thumb_lines(self) -> list[str]:
        """The model's size and the rule of thumb beside the measured peak, as sentences."""
        facts = self.facts
        if facts is None:
            return []
        lines = [f"Model: {facts.describe()}."]
        rule = self.rule_of_thumb()
        if rule is not None:
            guess, peak = rule
            ratio = off_by(peak, guess.total_mb)
            verdict = f": {ratio_words(ratio)}" if ratio is not None else ""
            lines.append(
                f"Rule of thumb at batch {guess.batch_size}: {guess.total_mb:,.1f} MB ({guess.breakdown()}); "
                f"measured peak {peak:,.1f} MB{verdict}."
            )
            if guess.activations_mb is None:
                lines.append("Activations unknown (a layer has no single output shape): parameters only.")
        return lines

    def rule_of_thumb_dict(self) -> dict[str, object] | None:
        """The rule of thumb at the largest batch that fits, for JSON."""
        rule = self.rule_of_thumb()
        if rule is None:
            return None
        guess, peak = rule
        ratio = off_by(peak, guess.total_mb)
        activations = guess.activations_mb
        return {
            "formula": FORMULA,
            "batch_size": guess.batch_size,
            "estimate_mb": round(guess.total_mb, 1),
            "weights_mb": round(guess.weights_mb, 2),
            "gradients_mb": round(guess.gradients_mb, 2),
            "optimizer_slots_mb": round(guess.slots_mb, 2),
            "activations_mb": None if activations is None else round(activations, 2),
            "measured_peak_mb": round(peak, 1),
            "ratio": None if ratio is None else round(ratio, 2),
        }

    @property
    def error(self) -> str:
        """Why the probe stopped early (the failing trial's message), or empty."""
        return next((t.message for t in self.trials if t.result == ERROR), "")

    @property
    def snippet(self) -> str:
        """A line to paste into a training script, or empty when nothing fits."""
        batch = self.recommended_batch or self.max_batch
        return f"batch_size = {batch}" if batch else ""

    def summary_lines(self) -> list[str]:
        """The result in a few human sentences (used by the CLI and the tab)."""
        if self.error:
            return [f"Probe stopped: {self.error}"]
        lines = ["Cancelled; results so far:"] if self.cancelled else []
        if self.max_batch is None:
            lines.append(f"No batch size fits in {self.request.budget_mb:,.0f} MB on {self.request.device}.")
            return lines
        lines.append(f"Largest batch that fits: {self.largest_text()}.")
        recommended = self.recommended_batch
        if recommended is None:
            lines.append("No trial stayed under 90 % of the budget; lower the batch or raise the budget.")
        else:
            kind = "a power of two" if is_power_of_two(recommended) else "not a power of two"
            lines.append(f"Recommended: {recommended} (peak under 90 % of the budget; {kind}).")
        best = self.best_throughput
        if best is not None:
            speed = best.samples_per_second or 0.0
            lines.append(f"Best throughput: {speed:,.0f} samples/s at batch {best.batch_size}.")
        if self.speed_note:
            lines.append(self.speed_note)
        lines.extend(self.rule_of_thumb_lines())
        lines.append(f"Paste: {self.snippet}")
        return lines

    def as_dict(self) -> dict[str, object]:
        """The result as JSON-ready data (the keys are documented in the README)."""
        best = self.best_throughput
        recommended = self.recommended_batch
        throughput = None
        if best is not None:
            speed = round(best.samples_per_second or 0.0, 1)
            throughput = {"batch_size": best.batch_size, "samples_per_second": speed}
        return {
            "model": self.request.model,
            "device": self.request.device,
            "budget_mb": round(self.request.budget_mb, 1),
            "budget_source": self.request.budget_source,
            "steps": self.request.steps,
            "mixed_precision": self.request.mixed_precision,
            "max_batch_bound": self.request.max_batch,
            "max_batch": self.max_batch,
            "max_batch_capped": self.capped,
            "recommended_batch": recommended,
            "recommended_is_power_of_two": None if recommended is None else is_power_of_two(recommended),
            "best_throughput": throughput,
            "speed_note": self.speed_note or None,
            "snippet": self.snippet,
            "cancelled": self.cancelled,
            "error": self.error or None,
            "wall_seconds": round(self.wall_seconds, 2),
            "params": None if self.facts is None else self.facts.as_dict(),
            "rule_of_thumb": self.rule_of_thumb_dict(),
            "trials": [t.as_dict() for t in self.trials],
        }
