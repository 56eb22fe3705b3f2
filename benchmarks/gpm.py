"""Benchmark: what reading GPM (SM, tensor, DRAM, FP and PCIe activity) adds to one sample of 8 GPUs (issue
42: at most 2 ms), on fakenvml (../shared/fakenvml), against the same Sampler on the same GPUs without GPM.

Method: 8 H200s (Hopper: GPM) with 64 real sleeping PIDs, as fakenvml's scenario_8x64.py; a second scenario
identical but for `gpm=0` on every GPU (NVML says GPM is not supported, so nothing GPM is read). One process
loads fakenvml (before pynvml) and times `NvmlSource.read()` (every GPU's NVML reading, GPM's included; the
Sampler's history and process scan are the same on both sides and left out) --samples times per side,
0.12 s apart (GPM compares two samples at least 100 ms apart: every GPM sample here is compared), after 5
uncounted warm-up samples. The sides take turns --rounds times, so that a shared VM's drift falls on both.

--idle SECONDS also measures the dashboard idling on the Monitor (tmux 160x48, `--interval 1`, CPU time of its
process tree from /proc, as benchmarks/monitor.py measures it) on each scenario, --idle-runs times each, in
turns, after a 6 s warm-up.

    python benchmarks/gpm.py [--samples 100] [--rounds 2] [--idle SECONDS] [--idle-runs 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FAKENVML = Path(
    os.environ.get("TFGPU_FAKENVML_DIR", Path(__file__).resolve().parents[2] / "shared" / "fakenvml")
)
GPUS, PER_GPU = 8, 8
PACE_SECONDS = 0.12
WARMUP = 5
TARGET_MS = 2.0  # issue 42: GPM for 8 GPUs adds at most 2 ms per sample


def scenario(pids: list[int], gpm: bool) -> str:
    """8 H200s with 8 processes each; GPM metrics scripted, or GPM not supported (`gpm=0`)."""
    lines = ["driver 580.95.05", "cuda 13000"]
    for g in range(GPUS):
        keys = (f"gpm_sm={8 * g + 5} gpm_occupancy={4 * g} gpm_tensor={6 * g} gpm_hmma={5 * g} "
                f"gpm_dram={3 * g} gpm_fp32={2 * g} gpm_fp16={g} gpm_pcie_tx_mib={100 * g} "
                f"gpm_pcie_rx_mib={200 * g}" if gpm else "gpm=0")  # fmt: skip
        lines.append(
            f'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util={10 * g} mem_util={5 * g} '
            f"temp={40 + g} power_mw={150000 + 50000 * g} power_limit_mw=700000 fan=NA sm_clock=1980 "
            f"mem_clock=3201 pstate=0 cc=9.0 persistence=1 {keys}"
        )
    for i, pid in enumerate(pids):
        lines.append(f"process gpu={i // PER_GPU} pid={pid} used_mib={1024 * (1 + i % 8)} sm={(i * 7) % 60}")
    return "\n".join(lines) + "\n"


def timed_samples(path: Path, count: int) -> list[float]:
    """Milliseconds of `count` GPU readings of a fresh source on the scenario at `path`."""
    from tfgpu_tui.gpu.nvml import NvmlSource

    os.environ["FAKE_NVML_SCENARIO"] = str(path)
    source = NvmlSource()
    try:
        times = []
        for index in range(WARMUP + count):
            time.sleep(PACE_SECONDS)
            started = time.perf_counter()
            reading = source.read()
            elapsed = (time.perf_counter() - started) * 1000
            if index >= WARMUP:
                times.append(elapsed)
        assert reading.error is None and len(reading.devices) == GPUS, reading.error
        return times
    finally:
        source.close()


def check_sides(with_gpm: Path, without: Path) -> None:
    """The GPM side measures every GPU; the other measures none."""
    from tfgpu_tui.gpu.nvml import NvmlSource

    for path, expect in ((with_gpm, True), (without, False)):
        os.environ["FAKE_NVML_SCENARIO"] = str(path)
        source = NvmlSource()
        source.read()
        time.sleep(PACE_SECONDS)
        devices = source.read().devices
        source.close()
        got = [d.activity is not None and d.activity.basis == "gpm" for d in devices]
        assert got == [expect] * GPUS, (path.name, got)


def idle(paths: dict[str, Path], lib: Path, seconds: float, runs: int) -> dict[str, list[float]]:
    """CPU % of one core of the dashboard idling on the Monitor, per scenario, `runs` times each in turns."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from monitor import idle_cpu  # benchmarks/monitor.py: the same tmux and /proc method

    found: dict[str, list[float]] = {side: [] for side in paths}
    with tempfile.TemporaryDirectory() as home:
        base = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "TERM": "tmux-256color",
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": home,
            "LD_LIBRARY_PATH": str(lib),
            "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        }
        for _ in range(runs):
            for side, path in paths.items():
                env = {**base, "FAKE_NVML_SCENARIO": str(path)}
                argv = [sys.executable, "-m", "tfgpu_tui", "--interval", "1"]
                result = idle_cpu(argv, env, seconds, 6.0, "H200")
                if result is not None:
                    found[side].append(result[0])
                    print(f"  idle on the Monitor, {side}: {result[0]:.2f} % of a core", flush=True)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--idle", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--idle-runs", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpm-bench-"))
    subprocess.run(["sh", str(FAKENVML / "build.sh"), str(work)], check=True, capture_output=True)
    ctypes.CDLL(str(work / "libnvidia-ml.so.1"))  # before pynvml looks for it
    sleepers = [subprocess.Popen(["sleep", "3600"]) for _ in range(GPUS * PER_GPU)]
    try:
        pids = [p.pid for p in sleepers]
        with_gpm, without = work / "gpm.txt", work / "no-gpm.txt"
        with_gpm.write_text(scenario(pids, True))
        without.write_text(scenario(pids, False))
        check_sides(with_gpm, without)
        times: dict[str, list[float]] = {"gpm": [], "no_gpm": []}
        for _ in range(args.rounds):
            times["gpm"] += timed_samples(with_gpm, args.samples)
            times["no_gpm"] += timed_samples(without, args.samples)
        idling = (
            idle({"gpm": with_gpm, "no_gpm": without}, work, args.idle, args.idle_runs) if args.idle else {}
        )
    finally:
        for process in sleepers:
            process.kill()
            process.wait()
    median = {side: statistics.median(values) for side, values in times.items()}
    p90 = {side: statistics.quantiles(values, n=10)[-1] for side, values in times.items()}
    added = median["gpm"] - median["no_gpm"]
    result = {
        "gpus": GPUS,
        "processes": GPUS * PER_GPU,
        "samples_per_side": len(times["gpm"]),
        "median_ms": {k: round(v, 3) for k, v in median.items()},
        "p90_ms": {k: round(v, 3) for k, v in p90.items()},
        "gpm_added_ms": round(added, 3),
        "ratio": round(median["gpm"] / median["no_gpm"], 2),
        "target_ms": TARGET_MS,
        "met": added <= TARGET_MS,
        "idle_cpu_percent": {k: round(statistics.median(v), 2) for k, v in idling.items() if v},
    }
    print(
        f"{GPUS} GPUs, {GPUS * PER_GPU} processes, {len(times['gpm'])} samples a side: "
        f"sample without GPM median {median['no_gpm']:.2f} ms (p90 {p90['no_gpm']:.2f}), with GPM "
        f"{median['gpm']:.2f} ms (p90 {p90['gpm']:.2f}): GPM adds {added:.2f} ms "
        f"(x{result['ratio']}); target <= {TARGET_MS} ms: {'met' if result['met'] else 'NOT met'}"
    )
    if result["idle_cpu_percent"]:
        cpu = result["idle_cpu_percent"]
        print(f"dashboard idling on the Monitor (median): with GPM {cpu.get('gpm')} % of a core, without "
              f"{cpu.get('no_gpm')} %")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
