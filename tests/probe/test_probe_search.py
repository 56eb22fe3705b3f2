"""The batch-size search on simulated memory functions: the right answer, never a failed size, few trials."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from tfgpu_tui.probe.search import (
    DoublingSearch,
    LinearFitSearch,
    ProbeSearch,
    bracket,
    largest_fitting,
    local_line,
    run_search,
)
from tfgpu_tui.probe.trial import ERROR, FITS, OOM, Trial

MemoryFunction = Callable[[int], float]


def simulated_trial(
    memory: MemoryFunction, budget: float, over_budget_measured: bool
) -> Callable[[int], Trial]:
    """A trial function: fits when the simulated peak is within budget. On a GPU an OOM has no peak; on the
    CPU the over-budget peak is measured (``over_budget_measured``)."""

    def run(batch: int) -> Trial:
        peak = memory(batch)
        if peak <= budget:
            return Trial(batch, FITS, peak, 0.01)
        return Trial(batch, OOM, peak if over_budget_measured else None)

    return run


def true_limit(memory: MemoryFunction, budget: float, max_batch: int) -> int:
    """The largest batch whose simulated peak fits (every smaller one fits too in these functions)."""
    limit = 0
    for batch in range(1, max_batch + 1):
        if memory(batch) > budget:
            break
        limit = batch
    return limit


def noisy(memory: MemoryFunction, spread: float, seed: int) -> MemoryFunction:
    rng = random.Random(seed)
    return lambda batch: memory(batch) * (1 + rng.uniform(-spread, spread))


# Peaks measured for builtin:cnn on a loaded 2-core CPU (oneDNN allocator): curved, overheads at small sizes.
CPU_CNN_PEAKS = ((2, 4.3), (8, 5.2), (124, 33.2), (136, 38.0), (144, 42.3), (148, 47.1), (240, 79.7))


def interpolated(points: tuple[tuple[int, float], ...]) -> MemoryFunction:
    def memory(batch: int) -> float:
        for (b1, p1), (b2, p2) in zip(points, points[1:], strict=False):
            if batch <= b2:
                return p1 + (p2 - p1) * (batch - b1) / (b2 - b1)
        (b1, p1), (b2, p2) = points[-2:]
        return p2 + (p2 - p1) * (batch - b2) / (b2 - b1)

    return memory


CASES = {
    "measured cpu cnn": (interpolated(CPU_CNN_PEAKS), 40.0, 1024),
    "linear": (lambda b: 300 + 2.5 * b, 2000.0, 8192),
    "resnet-like": (lambda b: 400 + 95 * b, 20000.0, 8192),
    "large fixed part": (lambda b: 1000 + 0.5 * b, 4000.0, 100_000),
    "step": (lambda b: 300 + 2.5 * b + (400 if b >= 256 else 0), 2000.0, 8192),
    "convex": (lambda b: 200 + 0.5 * b + 0.002 * b * b, 4000.0, 8192),
}


@pytest.mark.parametrize("over_budget_measured", [False, True], ids=["gpu", "cpu"])
@pytest.mark.parametrize("name", list(CASES))
def test_finds_limit_within_five_percent_in_half_the_trials(name: str, over_budget_measured: bool) -> None:
    memory, budget, max_batch = CASES[name]
    limit = true_limit(memory, budget, max_batch)
    run = simulated_trial(memory, budget, over_budget_measured)
    ours = run_search(LinearFitSearch(budget, max_batch), run)
    baseline = run_search(DoublingSearch(max_batch), run)
    found = largest_fitting(ours)
    assert found is not None and limit * 0.95 <= found.batch_size <= limit
    assert largest_fitting(baseline).batch_size == limit
    assert len(ours) <= 0.6 * len(baseline), ([t.batch_size for t in ours], len(baseline))


@pytest.mark.parametrize("seed", range(5))
def test_noisy_linear_memory_stays_within_five_percent(seed: int) -> None:
    budget = 2000.0
    memory = noisy(lambda b: 300 + 2.5 * b, 0.02, seed)
    trials = run_search(LinearFitSearch(budget, 8192), simulated_trial(memory, budget, False))
    found = largest_fitting(trials)
    # Noise moves the real limit too: anything from a peak of 98 % to 102 % of the nominal line.
    assert found is not None and 0.95 * (budget / 1.02 - 300) / 2.5 <= found.batch_size
    assert found.fits and len(trials) <= 10


def test_limit_below_first_trial() -> None:
    memory, budget = (lambda b: 1500 + 400 * b), 2000.0
    for strategy in (LinearFitSearch(budget, 8192), DoublingSearch(8192)):
        trials = run_search(strategy, simulated_trial(memory, budget, False))
        assert [t.batch_size for t in trials] == [2, 1]
        assert largest_fitting(trials).batch_size == 1


def test_nothing_fits_reports_nothing() -> None:
    trials = run_search(LinearFitSearch(2000, 8192), simulated_trial(lambda b: 2500 + b, 2000, True))
    assert largest_fitting(trials) is None
    assert all(not t.fits for t in trials) and len(trials) == 2


def test_everything_fits_up_to_the_bound() -> None:
    memory, budget = (lambda b: 100 + 0.1 * b), 2000.0
    trials = run_search(LinearFitSearch(budget, 512), simulated_trial(memory, budget, False))
    assert largest_fitting(trials).batch_size == 512
    assert max(t.batch_size for t in trials) == 512 and len(trials) <= 6


def test_bound_below_start() -> None:
    trials = run_search(LinearFitSearch(2000, 1), simulated_trial(lambda b: 10.0, 2000, False))
    assert [t.batch_size for t in trials] == [1]


def test_never_reports_a_size_that_failed_even_when_memory_is_not_monotonic() -> None:
    # A size that fails between two that fit (fragmentation): the answer is one that actually ran and fit.
    def run(batch: int) -> Trial:
        return Trial(batch, OOM if batch % 3 == 0 else FITS, 5.0 + batch * 0.01, 0.01)

    trials = run_search(LinearFitSearch(100, 4096), run)
    best = largest_fitting(trials)
    assert best is not None and best.fits and best in trials
    assert len({t.batch_size for t in trials}) == len(trials), "no size is tried twice"


def test_error_stops_the_search() -> None:
    trials = run_search(LinearFitSearch(100, 4096), lambda batch: Trial(batch, ERROR, message="boom"))
    assert len(trials) == 1


def test_should_stop_is_checked_before_each_trial() -> None:
    ran: list[int] = []

    def run(batch: int) -> Trial:
        ran.append(batch)
        return Trial(batch, FITS, 1.0 + batch, 0.1)

    trials = run_search(DoublingSearch(4096), run, should_stop=lambda: len(ran) >= 2)
    assert len(trials) == 2


def test_bracket_ignores_failures_below_a_fitting_size() -> None:
    trials = [Trial(8, FITS, 1.0), Trial(4, OOM), Trial(64, OOM), Trial(32, OOM)]
    assert bracket(trials) == (8, 32)


def test_local_line_uses_the_points_nearest_the_budget() -> None:
    assert local_line([(2, 10.0)], 100) is None
    assert local_line([(2, 10.0), (8, 10.1)], 100) is None, "peaks that barely differ are noise"
    assert local_line([(2, 30.0), (8, 20.0)], 100) is None, "memory that falls with the batch is no line"
    line = local_line([(2, 14.0), (8, 26.0), (32, 74.0)], 100)
    assert line is not None and line.fixed_mb == pytest.approx(10) and line.per_sample_mb == pytest.approx(2)
    assert line.batch_at(100) == pytest.approx(45)
    # Convex memory: the points around the budget decide, not the small ones.
    line = local_line([(2, 4.0), (8, 5.0), (120, 36.0), (140, 44.0)], 40)
    assert line.per_sample_mb == pytest.approx(0.4) and line.batch_at(40) == pytest.approx(130)


def test_probe_search_also_runs_the_recommended_batch() -> None:
    memory, budget = (lambda b: 300 + 2.5 * b), 2000.0
    run = simulated_trial(memory, budget, False)
    largest_only = run_search(LinearFitSearch(budget, 8192), run)
    trials = run_search(ProbeSearch(budget, 8192), run)
    assert trials[: len(largest_only)] == largest_only
    under = [t for t in trials if t.fits and t.peak_mb < 0.9 * budget]
    recommended = max(t.batch_size for t in under)
    assert 0.95 * true_limit(memory, 0.9 * budget, 8192) <= recommended
    assert len(trials) - len(largest_only) <= 2
