"""Benchmark: following a 1 GB Keras 3 training log.

Generates a Keras-3-style ``verbose=1`` log (ANSI, ``━`` bars, backspaces, ``\\r`` updates) in a temporary
directory, then measures:
  * time until the current state (epoch, step, ETA, metrics) is known: LogWatch start + first poll;
  * the full-history scan rate in MB/s, beside ``wc -l`` on the same (cached) file;
  * peak memory (max RSS) of a full read (tail + history), for a file a tenth the size and the full file.
Targets: current state < 1 s; scan >= 1/3 of wc -l; memory independent of file size.
The file is deleted afterwards.

    python benchmarks/training_log.py [--size-mb 1024] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tfgpu_tui.training.history_scan import scan_history
from tfgpu_tui.training.run import TrainingRun
from tfgpu_tui.training.synthetic import keras3_epoch
from tfgpu_tui.training.watch import LogWatch

STEPS, UPDATES, EPOCHS_IN_RUN = 469, 400, 100_000

MEMORY_PROBE = """
import resource, sys
from pathlib import Path
from tfgpu_tui.training.watch import LogWatch
if sys.argv[1] != "-":
    watch = LogWatch(Path(sys.argv[1]))
    watch.read_all()
    assert watch.run.epochs
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def generate(path: Path, size_bytes: int) -> int:
    """Write a log of about `size_bytes`: full epochs, then half an epoch in progress; returns the epochs."""
    bodies = []
    for variant in range(1, 21):  # 20 distinct epoch bodies, reused cyclically
        text = "".join(keras3_epoch(variant, EPOCHS_IN_RUN, STEPS, UPDATES))
        bodies.append(text.split("\n", 1)[1].encode())
    written, epoch = 0, 0
    with path.open("wb") as handle:
        while written < size_bytes:
            epoch += 1
            chunk = f"Epoch {epoch}/{EPOCHS_IN_RUN}\n".encode() + bodies[epoch % 20]
            handle.write(chunk)
            written += len(chunk)
        partial = bodies[0][: len(bodies[0]) // 2]
        handle.write(f"Epoch {epoch + 1}/{EPOCHS_IN_RUN}\n".encode() + partial[: partial.rfind(b"\x08")])
    return epoch


def median_seconds(action, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def current_state(path: Path) -> None:
    watch = LogWatch(path)
    watch.poll()
    assert watch.run.current.step and watch.run.current.epoch
    watch.close()


def full_scan(path: Path) -> None:
    run = TrainingRun()
    for _ in scan_history(path, path.stat().st_size, run):
        pass
    assert run.epochs


def peak_kib(path: Path | None) -> int:
    result = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(path) if path else "-"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(result.stdout.strip())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tfgpu-bench-"))
    try:
        big, small = folder / "big.log", folder / "small.log"
        start = time.perf_counter()
        epochs = generate(big, args.size_mb * 1024 * 1024)
        generate(small, max(args.size_mb // 10, 10) * 1024 * 1024)
        size_mb = big.stat().st_size / 1024 / 1024
        print(f"generated {size_mb:.0f} MB ({epochs} epochs) in {time.perf_counter() - start:.1f} s")
        subprocess.run(["wc", "-l", str(big)], capture_output=True, check=True)  # warm the page cache

        state = median_seconds(lambda: current_state(big), args.repeats)
        print(f"time to current state: median {state * 1000:.0f} ms (target < 1000 ms)")

        wc = median_seconds(
            lambda: subprocess.run(["wc", "-l", str(big)], capture_output=True, check=True), args.repeats
        )
        scan = median_seconds(lambda: full_scan(big), args.repeats)
        print(f"wc -l: median {wc:.2f} s = {size_mb / wc:.0f} MB/s")
        print(
            f"history scan: median {scan:.2f} s = {size_mb / scan:.0f} MB/s; "
            f"ratio to wc -l {wc / scan:.2f} (target >= 0.33)"
        )

        idle, small_kib, big_kib = peak_kib(None), peak_kib(small), peak_kib(big)
        print(
            f"peak RSS of a full read: {small.stat().st_size // 2**20} MB file {small_kib / 1024:.1f} MiB, "
            f"{size_mb:.0f} MB file {big_kib / 1024:.1f} MiB; "
            f"same process without reading {idle / 1024:.1f} MiB"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
