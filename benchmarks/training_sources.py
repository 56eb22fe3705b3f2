"""Benchmark: what the Training tab pays to know a log's writer, its checkpoints and the jobs' logs.

Measures, each as a median over repeats, beside a baseline measured in the same run:
  * the pick list's host scan (`tensorflow_logs`: every process's stdout/stderr, maps only for file
    writers) against a bare ``/proc`` walk that reads each process's ``stat`` (the Monitor's CPU scan floor);
  * `find_log_writer` (every process's fd 1 and 2 stat-ed) against the same walk;
  * one `LogOversight.update` in steady state (what each follower poll adds) against one `LogWatch.poll`
    of an idle file, and the periodic checkpoint walk on a tree of 5000 files.
Targets: the host scans within a few times the bare walk (they run in a worker, every few seconds at most);
the per-poll addition well under a millisecond.

    python benchmarks/training_sources.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tfgpu_tui.proc.log_writers import find_log_writer, tensorflow_logs
from tfgpu_tui.training.checkpoints import find_checkpoints
from tfgpu_tui.training.oversight import LogOversight
from tfgpu_tui.training.synthetic import keras3_log
from tfgpu_tui.training.watch import LogWatch


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def proc_walk() -> int:
    """The baseline: read /proc/PID/stat of every process."""
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    handle.read()
                count += 1
            except OSError:
                pass
    return count


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--repeats", type=int, default=15)
    repeats = parser.parse_args().repeats
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        log = root / "train.log"
        log.write_text(keras3_log(20, 100, 10, done_epochs=5, partial_steps=50), encoding="utf-8")
        for index in range(5000):
            folder = root / "data" / f"d{index // 100}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{index}.npy" if index % 500 else folder / f"m{index}.keras").write_bytes(b"x")
        processes = proc_walk()
        walk = median_ms(proc_walk, repeats)
        pick = median_ms(tensorflow_logs, repeats)
        writer = median_ms(lambda: find_log_writer(log), repeats)
        watch = LogWatch(log)
        watch.read_all()
        oversight = LogOversight(log, find_writer=False)
        oversight.update(watch)  # the first checkpoint walk
        poll = median_ms(watch.poll, repeats * 20)
        update = median_ms(lambda: oversight.update(watch), repeats * 20)
        checkpoints = median_ms(lambda: find_checkpoints([root]), repeats)
        watch.close()
    print(f"processes on this host: {processes}")
    print(f"/proc walk (baseline)         {walk:8.2f} ms")
    print(f"pick list scan                {pick:8.2f} ms   x{pick / walk:.1f} the walk")
    print(f"find_log_writer               {writer:8.2f} ms   x{writer / walk:.1f} the walk")
    print(f"LogWatch.poll, idle (baseline) {poll * 1000:7.1f} us")
    print(f"LogOversight.update, steady   {update * 1000:8.1f} us   x{update / poll:.1f} the poll")
    print(f"checkpoint walk, 5000 files   {checkpoints:8.2f} ms   (every 15 s)")


if __name__ == "__main__":
    main()
