"""Benchmark: what the container attribution costs (issue 23, item 2), against the same Sampler without it.

Method: fakenvml (../shared/fakenvml) with 4 H200s. --processes real processes (forked from one parent) each
hold --descriptors descriptors (/dev/null). NVML lists two processes under PIDs that are no local process
(host PIDs, as drivers before 535.113 report inside a container), so every sample takes the slow path: each
NVML entry is checked, then every local process is scanned for NVIDIA files (cached by PID and start time;
all re-read only when what NVML lists changes).

The two arms are the same Sampler on the same scenario in this process, `HostInspector(own_namespace=True)`
(the scan) and `own_namespace=False` (the host: no scan), taking turns for --rounds rounds of --samples
samples each; CPU is this process's CPU time (time.process_time) per sample. At one sample a second, the
difference per sample in seconds is the share of a core the scan costs (the target: at most 0.2 %).
`--churn` also measures the worst case, where what NVML lists changes at every sample: one full rescan (every
process re-read) costs `full_rescan_ms`, made at most every FULL_RESCAN_SECONDS (5 s).

    python benchmarks/container_scan.py [--processes 300] [--descriptors 50] [--samples 50] [--rounds 5]
                                        [--json PATH]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FAKENVML = Path(
    os.environ.get("TFGPU_FAKENVML_DIR", Path(__file__).resolve().parents[2] / "shared" / "fakenvml")
)
GHOST_PID = 4_194_301  # above the default pid_max: no local process has it
HOLDERS = r"""
import os, signal, sys
count, descriptors = int(sys.argv[1]), int(sys.argv[2])
fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(descriptors)]
children = []
for index in range(count):
    pid = os.fork()
    if pid == 0:
        signal.pause()
        os._exit(0)
    children.append(pid)
print(" ".join(map(str, children)), flush=True)
signal.pause()
"""


def start_holders(count: int, descriptors: int) -> tuple[subprocess.Popen, list[int]]:
    """A parent that forks `count` children holding `descriptors` descriptors each; their PIDs."""
    parent = subprocess.Popen(
        [sys.executable, "-c", HOLDERS, str(count), str(descriptors)],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert parent.stdout is not None
    pids = [int(pid) for pid in parent.stdout.readline().split()]
    return parent, pids


def scenario_text(host_pid: int) -> str:
    lines = ["driver 535.104.05"]
    lines += [f'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 minor={i}' for i in range(4)]
    lines.append(f"process gpu=0 pid={host_pid} used_mib=30720 sm=85 ghost=1")
    lines.append(f"process gpu=1 pid={GHOST_PID} used_mib=20480 sm=30 ghost=1")
    return "\n".join(lines) + "\n"


def cpu_per_sample(sampler, samples: int, churn: Path | None, texts: tuple[str, str]) -> float:
    """CPU seconds per sample over `samples` samples (`churn`: rewrite the scenario between samples so
    that what NVML lists changes every time)."""
    started = time.process_time()
    for index in range(samples):
        if churn is not None:
            churn.write_text(texts[index % 2])
        sampler.sample()
    return (time.process_time() - started) / samples


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--processes", type=int, default=300)
    parser.add_argument("--descriptors", type=int, default=50)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--churn", action="store_true", help="also: what NVML lists changes every sample")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="container-scan-"))
    lib = tmp / "fakenvml"
    subprocess.run(["sh", str(FAKENVML / "build.sh"), str(lib)], check=True, capture_output=True)
    ctypes.CDLL(str(lib / "libnvidia-ml.so.1"))  # before pynvml looks for it
    parent, _ = start_holders(args.processes, args.descriptors)
    scenario = tmp / "scenario.txt"
    texts = (scenario_text(GHOST_PID - 1), scenario_text(GHOST_PID - 2))
    scenario.write_text(texts[0])
    os.environ["FAKE_NVML_SCENARIO"] = str(scenario)

    from tfgpu_tui.gpu import processes
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.settings import Settings

    def sampler(scan: bool) -> Sampler:
        host = HostInspector(background=False, own_namespace=scan)
        made = Sampler(Settings(), NvmlSource(), host)
        made.sample()  # the first sample reads everything once: not counted
        return made

    limit = processes.FULL_RESCAN_SECONDS
    results: dict[str, list[float]] = {"host": [], "scan": [], "scan_churn": []}
    try:
        arms = {"host": sampler(False), "scan": sampler(True)}
        shown = arms["scan"].sample().processes
        found = [(r.pid, r.attribution.value if r.attribution else None) for r in shown if r.gpu_index == 0]
        for _ in range(args.rounds):
            for name, arm in arms.items():
                results[name].append(cpu_per_sample(arm, args.samples, None, texts))
            if args.churn:  # every sample a full rescan: the rate limit lifted for this arm
                processes.FULL_RESCAN_SECONDS = 0.0
                results["scan_churn"].append(cpu_per_sample(arms["scan"], args.samples, scenario, texts))
                scenario.write_text(texts[0])
                arms["scan"].sample()  # the rescan after the churn: not counted in the steady state
                processes.FULL_RESCAN_SECONDS = limit
        for arm in arms.values():
            arm.close()
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()

    host, scan = statistics.median(results["host"]), statistics.median(results["scan"])
    report = {
        "processes": args.processes,
        "descriptors": args.descriptors,
        "gpu0_rows": found,  # (pid, attribution): other-namespace, as no local process holds /dev/nvidia0
        "host_ms_per_sample": round(host * 1000, 3),
        "scan_ms_per_sample": round(scan * 1000, 3),
        "scan_cost_percent_of_a_core_at_1hz": round((scan - host) * 100, 3),
        "rounds": {name: [round(v * 1000, 3) for v in values] for name, values in results.items() if values},
    }
    if args.churn:
        churn = statistics.median(results["scan_churn"])
        report["full_rescan_ms"] = round(churn * 1000, 3)
        # NVML's list changing at every sample: a full rescan every FULL_RESCAN_SECONDS, new PIDs in between
        worst = (churn - host) / limit + (scan - host)
        report["churn_cost_percent_of_a_core_at_1hz"] = round(worst * 100, 3)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
