"""Search strategies for the largest batch that fits: pure code that proposes the next batch size from the
trials so far. Nothing here runs TensorFlow; `run_search` drives any strategy with any trial function."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from tfgpu_tui.probe.trial import ERROR, OOM, Trial

DEFAULT_START = 2
DEFAULT_TOLERANCE = 0.05
MAX_TRIALS = 30
# The recommended batch keeps peak memory under this fraction of the budget.
RECOMMENDED_FRACTION = 0.9
# Below this spread between the smallest and largest measured peak, the slope is mostly noise.
MIN_RELATIVE_SPREAD = 0.05


class SearchStrategy(Protocol):
    """Anything that proposes the next batch size to try, or None when the search is over."""

    def next_batch(self, trials: Sequence[Trial]) -> int | None: ...


def bracket(trials: Sequence[Trial]) -> tuple[int, int | None]:
    """The largest batch that fitted (0 if none) and the smallest failed batch above it (None if none)."""
    low = max((t.batch_size for t in trials if t.fits), default=0)
    high = min((t.batch_size for t in trials if not t.fits and t.batch_size > low), default=None)
    return low, high


def largest_fitting(trials: Sequence[Trial]) -> Trial | None:
    """The trial with the largest batch that actually ran and fitted, or None."""
    fitting = [t for t in trials if t.fits]
    return max(fitting, key=lambda t: t.batch_size) if fitting else None


class DoublingSearch:
    """Lightning's ``binsearch``: double from ``start`` until a size fails, then bisect to a gap of one."""

    def __init__(self, max_batch: int, start: int = DEFAULT_START) -> None:
        self.max_batch = max_batch
        self.start = min(start, max_batch)

    def next_batch(self, trials: Sequence[Trial]) -> int | None:
        if not trials:
            return self.start
        low, high = bracket(trials)
        if high is None:
            return min(low * 2, self.max_batch) if low < self.max_batch else None
        return (low + high) // 2 if high - low > 1 else None


@dataclass(frozen=True)
class Line:
    """Peak memory as a straight line in the batch size: ``fixed_mb + per_sample_mb * batch``."""

    fixed_mb: float
    per_sample_mb: float

    def peak_at(self, batch: float) -> float:
        """Predicted peak memory at a batch size."""
        return self.fixed_mb + self.per_sample_mb * batch

    def batch_at(self, peak_mb: float) -> float:
        """The batch size at which the predicted peak reaches ``peak_mb``."""
        return (peak_mb - self.fixed_mb) / self.per_sample_mb


def local_line(points: Sequence[tuple[int, float]], budget_mb: float) -> Line | None:
    """The line through the two measured (batch, peak MB) points that best describe memory near the budget.

    With a point under the budget and one over it at most twice its batch, the line joins the largest under
    and the smallest over (interpolation; a farther point would drag the line on a curved memory). Otherwise
    it joins the largest point under the budget and the largest smaller batch
    whose peak is at least `MIN_RELATIVE_SPREAD` lower (extrapolation; closer points are mostly noise). Being
    local, the line follows memory that grows faster than linearly. None when no such pair exists or the slope
    is not positive.
    """
    peaks = dict(points)
    under = sorted(b for b, p in peaks.items() if p <= budget_mb)
    over = sorted(b for b, p in peaks.items() if p > budget_mb)
    if not under:
        return None
    top = under[-1]
    if over and top < over[0] <= 2 * top:
        other = over[0]
    else:
        spread = [b for b in under[:-1] if peaks[b] <= peaks[top] * (1 - MIN_RELATIVE_SPREAD)]
        if not spread:
            return None
        other = spread[-1]
    slope = (peaks[other] - peaks[top]) / (other - top)
    if slope <= 0:
        return None
    return Line(peaks[top] - slope * top, slope)


class LinearFitSearch:
    """Predict the limit from the first trials' peak memory and confirm it with a few trials around it.

    Peak memory of a training step is close to ``fixed + per_sample * batch``. The search measures two small
    sizes (``start`` and ``4 * start``), draws that line, jumps just below where it meets the budget,
    then closes the gap to within ``tolerance`` with one or two trials. After each trial the line is redrawn
    through the measured points nearest the budget (`local_line`), over-budget peaks included, so it follows
    memory that is not quite linear. It falls back to doubling and bisection while peaks are not measured or
    barely change, or while the line puts a size that failed well under the budget. Only sizes that actually
    ran and fitted are ever reported (see `largest_fitting`).
    """

    def __init__(
        self,
        budget_mb: float,
        max_batch: int,
        start: int = DEFAULT_START,
        tolerance: float = DEFAULT_TOLERANCE,
    ) -> None:
        self.budget_mb = budget_mb
        self.max_batch = max_batch
        self.start = min(start, max_batch)
        self.tolerance = tolerance

    def next_batch(self, trials: Sequence[Trial]) -> int | None:
        if not trials:
            return self.start
        low, high = bracket(trials)
        upper = high if high is not None else self.max_batch + 1
        if upper - low <= 1 or (high is not None and low > 0 and self._close_enough(low, high)):
            return None
        if low == 0:
            return upper // 2
        line = self._line(trials)
        if line is None or self._contradicted(line, trials, low):
            return self._fallback(trials, low, high)
        predicted = line.batch_at(self.budget_mb)
        if predicted >= upper:
            return self.max_batch if high is None else (low + upper) // 2
        aim = math.floor(predicted * (1 - self.tolerance / 2))
        closing = math.floor(low / (1 - self.tolerance)) + 1
        return min(max(aim, closing), upper - 1)

    def _close_enough(self, low: int, high: int) -> bool:
        """Whether every batch between ``low`` and ``high`` is within tolerance of ``low``."""
        return high - 1 - low <= self.tolerance * (high - 1)

    def _line(self, trials: Sequence[Trial]) -> Line | None:
        """The local line through the measured peaks, over-budget ones included (the CPU measures them)."""
        return local_line(
            [(t.batch_size, t.peak_mb) for t in trials if t.peak_mb is not None], self.budget_mb
        )

    def _contradicted(self, line: Line, trials: Sequence[Trial], low: int) -> bool:
        """Whether a size above ``low`` failed that the line puts clearly under the budget."""
        clearly_under = self.budget_mb * (1 - 2 * self.tolerance)
        return any(
            not t.fits
            and t.result != ERROR
            and t.batch_size > low
            and line.peak_at(t.batch_size) < clearly_under
            for t in trials
        )

    def _fallback(self, trials: Sequence[Trial], low: int, high: int | None) -> int:
        """Without a usable line: grow geometrically (x4 while measuring, else doubling), then bisect."""
        if high is not None:
            return (low + high) // 2
        measured = any(t.fits and t.peak_mb is not None for t in trials)
        factor = 4 if measured else 2
        return min(low * factor, self.max_batch)


class ProbeSearch:
    """What the probe runs: `LinearFitSearch` for the largest batch that fits, then the same search for the
    largest batch whose peak stays under ``fraction`` of the budget, so the recommended batch has also run.
    Both phases read the whole history, so the second often needs one or two trials, or none."""

    def __init__(
        self,
        budget_mb: float,
        max_batch: int,
        fraction: float = RECOMMENDED_FRACTION,
        start: int = DEFAULT_START,
        tolerance: float = DEFAULT_TOLERANCE,
    ) -> None:
        self.largest = LinearFitSearch(budget_mb, max_batch, start, tolerance)
        self.recommended = LinearFitSearch(budget_mb * fraction, max_batch, start, tolerance)
        self.limit_mb = budget_mb * fraction

    def next_batch(self, trials: Sequence[Trial]) -> int | None:
        batch = self.largest.next_batch(trials)
        if batch is not None:
            return batch
        return self.recommended.next_batch([self._under_limit(t) for t in trials])

    def _under_limit(self, trial: Trial) -> Trial:
        """The trial as the second phase sees it: a fit at or above the limit counts as too big."""
        if trial.fits and trial.peak_mb is not None and trial.peak_mb >= self.limit_mb:
            return replace(trial, result=OOM)
        return trial


def run_search(
    strategy: SearchStrategy,
    run_trial: Callable[[int], Trial],
    max_trials: int = MAX_TRIALS,
    should_stop: Callable[[], bool] = lambda: False,
) -> list[Trial]:
    """Run trials as the strategy proposes until it is done, a trial errors, ``max_trials`` ran, or
    ``should_stop()`` is true. Returns every trial in the order it ran."""
    trials: list[Trial] = []
    while len(trials) < max_trials and not should_stop():
        batch = strategy.next_batch(trials)
        if batch is None or batch < 1:
            break
        trial = run_trial(batch)
        trials.append(trial)
        if trial.result == ERROR:
            break
    return trials
