"""Benchmark: how long `tfgpu-tui --help` takes, as ratios to `python -c pass` and to `gpus --help`.

For --repeats rounds (the three commands alternating, each a child of this process's interpreter), measures
the wall time of each and prints the medians and the ratios help/pass and help/gpus-help. The top-level help
registers every subcommand; each imports only what its parser needs (the web server, Textual and NVML are
imported when a command runs, not for its help).

    python benchmarks/cli_help.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "tfgpu-tui --help": [sys.executable, "-m", "tfgpu_tui", "--help"],
    "tfgpu-tui gpus --help": [sys.executable, "-m", "tfgpu_tui", "gpus", "--help"],
}


def seconds(argv: list[str]) -> float:
    """Wall time of one child run."""
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    repeats = parser.parse_args().repeats
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(repeats):
        for name, argv in COMMANDS.items():
            times[name].append(seconds(argv))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"{name:24} median {median * 1000:7.1f} ms")
    bare, help_, gpus_help = medians.values()
    print(f"--help / python -c pass: {help_ / bare:.1f}x")
    print(f"--help / gpus --help:    {help_ / gpus_help:.2f}x")


if __name__ == "__main__":
    main()
