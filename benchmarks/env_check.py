"""Benchmark: how long the environment check takes, beside a bare `python -c "import tensorflow"`.

For --repeats runs (alternating, in this process's interpreter or --python), measures:
  * bare import: `python -c "import tensorflow"` wall time (the floor any TF-based check pays);
  * time to first findings: collecting the TensorFlow-free facts and evaluating the fast checks;
  * time to the full report: facts + the inspection child (one import with the loader's messages on, build
    info, devices, placement test) + checks.
Prints medians and the ratios full/bare and first/bare (target: full/bare <= 1.15). Needs TensorFlow in the
target interpreter.

    python benchmarks/env_check.py [--python PATH] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from tfgpu_tui.env.check_run import run_check


def bare_import(python: str) -> float:
    """Seconds for a child `python -c "import tensorflow"`."""
    started = time.perf_counter()
    subprocess.run([python, "-c", "import tensorflow"], check=True, capture_output=True)
    return time.perf_counter() - started


def env_check(python: str) -> tuple[float, float]:
    """(seconds to the first findings, seconds to the full report) of one run_check."""
    marks: dict[str, float] = {}
    started = time.perf_counter()
    run = run_check(python, 300, on_fast=lambda _: marks.setdefault("fast", time.perf_counter()))
    finished = time.perf_counter()
    if not run.inspection.outcome.ok:
        raise SystemExit(f"the inspection failed: {run.inspection.outcome.message}")
    return marks["fast"] - started, finished - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python", default=sys.executable, help="target interpreter (needs TensorFlow)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bare, first, full = [], [], []
    bare_import(args.python)  # warm the file cache once so the first sample is not an outlier
    for _ in range(args.repeats):
        bare.append(bare_import(args.python))
        fast_s, full_s = env_check(args.python)
        first.append(fast_s)
        full.append(full_s)
    median_bare, median_first, median_full = (statistics.median(x) for x in (bare, first, full))
    print(f"target: {args.python}, {args.repeats} runs each, medians")
    rows = [
        ("bare `import tensorflow`", median_bare),
        ("first findings (no TensorFlow)", median_first),
        ("full report (inspection + checks)", median_full),
    ]
    for label, seconds in rows:
        print(f"{label:<34} {seconds:8.2f} s   {seconds / median_bare:6.2f}x bare")
    print(f"inspection overhead over a bare import: {median_full - median_bare:+.2f} s")


if __name__ == "__main__":
    main()
