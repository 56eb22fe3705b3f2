"""Benchmark: our batch-size search beside Lightning-style doubling-then-bisection.

Part 1 (real, needs TensorFlow): `builtin:cnn` on the CPU with a fixed budget; each search runs every trial in
a fresh child process, as `tfgpu-tui probe` does. Prints trials, wall time and the batch each finds.
Part 2 (simulated, instant): the same two searches on simulated memory curves; median trials and the ratio.

    python benchmarks/batch_probe.py [--budget-mb 40] [--max-batch 1024] [--repeats 1] [--simulated-only]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys

from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.search import DoublingSearch, LinearFitSearch, ProbeSearch, largest_fitting, run_search
from tfgpu_tui.probe.trial import FITS, OOM, Trial
from tfgpu_tui.probe.trial_runner import run_probe


def real_run(budget_mb: float, max_batch: int, repeats: int) -> None:
    """Both searches on the real CNN, one child per trial, ``repeats`` times each (interleaved, so a busy
    machine slows both alike); prints every run and the medians."""
    request = ProbeRequest(device="CPU", budget_mb=budget_mb, budget_source="fixed", max_batch=max_batch)
    strategies = {
        "ours (fit + confirm)": lambda: LinearFitSearch(budget_mb, max_batch),
        "ours + 90% recommendation": lambda: ProbeSearch(budget_mb, max_batch),
        "doubling + bisection": lambda: DoublingSearch(max_batch),
    }
    print(f"builtin:cnn on CPU, budget {budget_mb:g} MB, bound {max_batch}, 3 steps per trial")
    print(f"{'search':<28} {'trials':>6} {'wall s':>8} {'batch found':>11}  sizes tried (x: did not fit)")
    runs: dict[str, list[tuple[int, float]]] = {name: [] for name in strategies}
    for _ in range(repeats):
        for name, make in strategies.items():
            result = run_probe(request, strategy=make())
            if result.error:
                print(f"{name}: stopped: {result.error}")
                return
            runs[name].append((len(result.trials), result.wall_seconds))
            sizes = " ".join(f"{t.batch_size}{'' if t.fits else 'x'}" for t in result.trials)
            found = str(result.max_batch)
            print(f"{name:<28} {len(result.trials):>6} {result.wall_seconds:>8.1f} {found:>11}  {sizes}")
    medians = {
        name: [statistics.median(column) for column in zip(*rows, strict=True)] for name, rows in runs.items()
    }
    base_trials, base_wall = medians["doubling + bisection"]
    for name, (trials, wall) in medians.items():
        print(
            f"median {name:<28} trials {trials:>5g} ({trials / base_trials:.2f}x)  "
            f"wall {wall:>6.1f} s ({wall / base_wall:.2f}x doubling + bisection)"
        )


def simulated_trial(memory, budget: float):
    """Fits when the simulated peak is within budget; an OOM has no peak (as on a GPU)."""

    def run(batch: int) -> Trial:
        peak = memory(batch)
        return Trial(batch, FITS, peak, 0.01) if peak <= budget else Trial(batch, OOM)

    return run


def simulated_runs(count: int = 200, seed: int = 7) -> None:
    """Median trials of both searches over random linear, noisy and convex memory curves."""
    rng = random.Random(seed)
    ours, baseline, errors = [], [], []
    for _ in range(count):
        fixed, per_sample = rng.uniform(50, 3000), rng.uniform(0.05, 200)
        curve = rng.uniform(0, 0.002)
        noise = rng.uniform(0, 0.02)
        budget = rng.uniform(fixed + 20 * per_sample, fixed + 4000 * per_sample)

        def memory(b: int, fixed=fixed, per_sample=per_sample, curve=curve, noise=noise) -> float:
            return (fixed + per_sample * b + curve * per_sample * b * b) * (1 + rng.uniform(-noise, noise))

        run = simulated_trial(memory, budget)
        ours_trials = run_search(LinearFitSearch(budget, 8192), run)
        found = largest_fitting(ours_trials)
        base_trials = run_search(DoublingSearch(8192), run)
        ours.append(len(ours_trials))
        baseline.append(len(base_trials))
        exact = largest_fitting(base_trials)
        if found and exact:
            errors.append(max(0.0, (exact.batch_size - found.batch_size) / exact.batch_size))
    med_ours, med_base = statistics.median(ours), statistics.median(baseline)
    print(f"\nsimulated: {count} random memory curves (linear, convex, up to 2 % noise), bound 8192")
    ratio = med_ours / med_base
    print(f"median trials: ours {med_ours:g}, doubling + bisection {med_base:g}, ratio {ratio:.2f}")
    print(f"max trials: ours {max(ours)}, doubling + bisection {max(baseline)}")
    print(f"batch found below doubling's: median {statistics.median(errors):.1%}, 95th pct "
          f"{sorted(errors)[int(0.95 * len(errors))]:.1%}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-mb", type=float, default=40.0)
    parser.add_argument("--max-batch", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=1, help="real runs of each search (default 1)")
    parser.add_argument("--simulated-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.simulated_only:
        real_run(args.budget_mb, args.max_batch, args.repeats)
    simulated_runs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
