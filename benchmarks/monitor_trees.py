"""Benchmark: two or more source trees of tfgpu-tui in one run of monitor.py's measures (issue 40).

Each tree, the bare Textual app, nvitop and gpustat take turns (a start of each, an idle run of each, a
one-shot of each), on the same fakenvml scenario as monitor.py, so a before and an after are compared on a
shared machine whose speed changes. List the trees in both orders across runs: the program that starts
right after another dashboard has closed can be a little slower.

    git archive main tfgpu_tui | tar -x -C /tmp/before     # and the change's tree into /tmp/after
    python benchmarks/monitor_trees.py [--frames 11] [--runs 2] before=/tmp/before after=/tmp/after
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

spec = importlib.util.spec_from_file_location("monitor", Path(__file__).with_name("monitor.py"))
assert spec is not None and spec.loader is not None
monitor = importlib.util.module_from_spec(spec)
sys.modules["monitor"] = monitor  # its dataclasses look their module up
spec.loader.exec_module(monitor)


def ratio(values: list[float], anchor: list[float]) -> str:
    if not values or not anchor:
        return "-"
    ours, theirs = statistics.median(values), statistics.median(anchor)
    return f"{ours:.3f} / {theirs:.3f} = {ours / theirs:.2f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="NAME=DIR: a tree holding tfgpu_tui/")
    parser.add_argument("--frames", type=int, default=11, help="starts for the first-frame median")
    parser.add_argument("--runs", type=int, default=2, help="idle runs per program")
    parser.add_argument("--seconds", type=float, default=30.0, help="CPU measurement window")
    parser.add_argument("--warmup", type=float, default=6.0, help="seconds before the window opens")
    parser.add_argument("--oneshots", type=int, default=7, help="runs for the one-shot median")
    args = parser.parse_args()
    trees = dict(tree.split("=", 1) for tree in args.trees)
    with tempfile.TemporaryDirectory(prefix="tfgpu-trees-") as tmp_name:
        tmp = Path(tmp_name)
        os.chdir(tmp)  # `python -m` puts its working directory first on sys.path
        build = [str(monitor.FAKENVML / "build.sh"), str(tmp / "lib")]
        subprocess.run(["sh", *build], check=True, capture_output=True)
        scenario, pids = monitor.start_scenario(tmp)
        (tmp / "config").mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/root"),
            "TERM": "tmux-256color",
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(tmp / "config"),
            "LD_LIBRARY_PATH": str(tmp / "lib"),
            "FAKE_NVML_SCENARIO": str(scenario),
        }
        programs = []
        for name, tree in trees.items():
            ours = ["env", f"PYTHONPATH={Path(tree).resolve()}", sys.executable, "-m", "tfgpu_tui"]
            programs.append(monitor.Program(name, [*ours, "--interval", "1"], [*ours, "gpus", "--json"]))
        bare = monitor.Program(
            "bare Textual", [sys.executable, "-c", monitor.BARE_TEXTUAL], None, idles=False
        )
        nvitop = ["/tmp/nvitop-venv/bin/nvitop", "--interval", "1"]
        programs += [bare, monitor.Program("nvitop", nvitop, None, monitor.NVITOP_MARKER)]
        programs.append(monitor.Program("gpustat", None, ["/tmp/gpustat-venv/bin/gpustat", "--json"]))
        try:
            monitor.measure(programs, env, args)
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 15)
    figures = {program.name: program.figures for program in programs}
    print("| tree | first frame / bare Textual (s) | CPU on the Monitor / nvitop (%) | resident memory (MiB) "
          "| gpus --json / gpustat --json (s) |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name in trees:
        ours = figures[name]
        memory = f"{statistics.median(ours.rss):.2f}" if ours.rss else "-"
        print(
            f"| {name} | {ratio(ours.first_frame, bare.figures.first_frame)} "
            f"| {ratio(ours.cpu_monitor, figures['nvitop'].cpu_monitor)} | {memory} "
            f"| {ratio(ours.oneshot, figures['gpustat'].oneshot)} |"
        )
    for name, each in figures.items():
        print(
            name, {key: [round(value, 3) for value in values] for key, values in vars(each).items() if values}
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
