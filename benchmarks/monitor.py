"""Benchmark: the cost of the GPU monitor.

Measures, on this machine:
  * one refresh (Sampler.sample + the process-table row building) with a simulated 8 GPUs x 64 processes
    each (512 processes); target < 5 ms;
  * a sample against fakenvml (the real nvidia-ml-py, ctypes and /proc path) with the scenario of
    ../shared/fakenvml/scenario_8x64.py (8 GPUs, 64 live processes in all), beside bare pynvml calls for the
    same fields and, where an interpreter with nvitop is available (--nvitop-python, or nvitop importable
    here), nvitop's own snapshot of devices + processes;
  * the dashboard run in a 120x40 pseudo-terminal on the Monitor tab - `--demo` (2 GPUs), the simulated
    8 x 64 scene (512 processes) and fakenvml's 8 GPUs / 64 processes: time to its first frame, CPU use of
    the whole process over --seconds at a 1 s interval (target < 1 % of one core; the median of --runs runs),
    resident memory.

    python benchmarks/monitor.py [--iterations 300] [--seconds 30] [--runs 3] [--nvitop-python PATH]
                                 [--skip-app]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pty
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.settings import Settings

FAKENVML = Path(
    os.environ.get("TFGPU_FAKENVML_DIR", Path(__file__).resolve().parents[2] / "shared" / "fakenvml")
)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
TARGET_REFRESH_MS = 5.0
TARGET_CPU_PERCENT = 1.0

FAKENVML_CHILD = r"""
import json, statistics, sys, time
import pynvml
from tfgpu_tui.gpu.nvml import NvmlSource
from tfgpu_tui.gpu.processes import HostInspector
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.settings import Settings
n = int(sys.argv[1])
sampler = Sampler(Settings(), NvmlSource(), HostInspector())
for _ in range(5):
    sampler.sample()
    time.sleep(0.05)
ours = []
for _ in range(n):
    t = time.perf_counter(); snap = sampler.sample(); ours.append((time.perf_counter() - t) * 1000)
assert len(snap.devices) == 8 and sum(p.gpu_index is not None for p in snap.processes) == 64, snap.error
handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
def bare():
    for h in handles:
        pynvml.nvmlDeviceGetMemoryInfo(h); pynvml.nvmlDeviceGetUtilizationRates(h)
        pynvml.nvmlDeviceGetTemperature(h, 0); pynvml.nvmlDeviceGetPowerUsage(h)
        try: pynvml.nvmlDeviceGetFanSpeed(h)
        except pynvml.NVMLError: pass
        pynvml.nvmlDeviceGetClockInfo(h, 1); pynvml.nvmlDeviceGetPerformanceState(h)
        pynvml.nvmlDeviceGetComputeRunningProcesses(h); pynvml.nvmlDeviceGetGraphicsRunningProcesses(h)
        try: pynvml.nvmlDeviceGetProcessUtilization(h, 0)
        except pynvml.NVMLError: pass
raw = []
for _ in range(n):
    t = time.perf_counter(); bare(); raw.append((time.perf_counter() - t) * 1000)
print(json.dumps({"ours": statistics.median(ours), "ours_p90": sorted(ours)[int(0.9 * n)],
                  "bare": statistics.median(raw)}))
"""

NVITOP_CHILD = r"""
import json, statistics, sys, time
from nvitop import Device, GpuProcess
n = int(sys.argv[1])
devices = Device.all()
def refresh():
    snaps = [d.as_snapshot() for d in devices]
    procs = {}
    for d in devices:
        procs.update(d.processes())
    return snaps, GpuProcess.take_snapshots(procs.values(), failsafe=True)
for _ in range(5):
    refresh(); time.sleep(0.05)
times = []
for _ in range(n):
    t = time.perf_counter(); _, p = refresh(); times.append((time.perf_counter() - t) * 1000)
assert len(p) == 64, len(p)
print(json.dumps({"nvitop": statistics.median(times)}))
"""


def median_ms(call, iterations: int) -> float:
    """Median wall time of ``call()`` in milliseconds."""
    times = []
    for _ in range(iterations):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


GPUS, PER_GPU = 8, 64  # the simulated scene: 8 GPUs with 64 processes each

# The dashboard with the Monitor tab on the simulated 8 x 64 scene instead of the demo's two GPUs.
SIMULATED_APP = f"""
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui import monitor
from tfgpu_tui.ui.app import TfgpuApp
plain_init = monitor.MonitorTab.__init__
def scene_init(self, settings, source=None):
    plain_init(self, settings, SimulatedSource(gpus={GPUS}, processes_per_gpu={PER_GPU}))
monitor.MonitorTab.__init__ = scene_init
TfgpuApp(Settings(interval=1.0)).run()
"""


def bench_simulated(iterations: int) -> None:
    """Refresh cost with the simulated 8 x 64 scene."""
    sampler = Sampler(Settings(), SimulatedSource(gpus=GPUS, processes_per_gpu=PER_GPU))
    try:
        from tfgpu_tui.ui.widgets.process_table import build_process_rows
    except ImportError:  # the UI module is optional for this measurement
        build_process_rows = None
    snapshot = sampler.sample()
    sample = median_ms(sampler.sample, iterations)
    processes = GPUS * PER_GPU
    print(f"simulated {GPUS} GPUs x {PER_GPU} processes = {processes} ({iterations} refreshes):")
    print(
        f"  sample                      median {sample:7.3f} ms   "
        f"(sampler thread at 1 s: {sample / 10:.2f} % of a core)"
    )
    if build_process_rows is not None:
        rows = median_ms(lambda: build_process_rows(snapshot, "memory"), iterations)
        both = median_ms(lambda: build_process_rows(sampler.sample(), "memory"), iterations)
        print(f"  table rows ({processes})            median {rows:7.3f} ms")
        print(
            f"  refresh (sample + rows)     median {both:7.3f} ms   "
            f"= {both / TARGET_REFRESH_MS:.2f} x the 5 ms target"
        )
    else:
        print(f"  (no UI row builder found)          = {sample / TARGET_REFRESH_MS:.2f} x the 5 ms target")


def build_fakenvml(out: Path) -> bool:
    """Build fakenvml into ``out``; False (with a note) where that is impossible here."""
    if not (FAKENVML / "build.sh").exists() or shutil.which("gcc") is None:
        print(f"fakenvml: skipped ({FAKENVML} or gcc missing)")
        return False
    subprocess.run(["sh", str(FAKENVML / "build.sh"), str(out)], check=True, capture_output=True)
    return True


def nvitop_python(explicit: str | None) -> str | None:
    """An interpreter that can import nvitop, or None."""
    for candidate in filter(None, [explicit, os.environ.get("NVITOP_PYTHON"), sys.executable]):
        probe = subprocess.run([candidate, "-c", "import nvitop"], capture_output=True)
        if probe.returncode == 0:
            return candidate
    return None


def bench_fakenvml(env: dict[str, str], iterations: int, nvitop: str | None) -> None:
    """Our sample vs bare pynvml calls (and nvitop) against fakenvml's 8 x 64 scenario."""
    child = subprocess.run(
        [sys.executable, "-c", FAKENVML_CHILD, str(iterations)], env=env, capture_output=True, text=True
    )
    if child.returncode != 0:
        print(f"fakenvml: child failed: {child.stderr.strip()[-400:]}")
        return
    result = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"fakenvml 8 GPUs, 64 live processes in all ({iterations} samples; real pynvml + ctypes + /proc):")
    print(
        f"  tfgpu-tui sample            median {result['ours']:7.3f} ms   (p90 {result['ours_p90']:.3f} ms)"
    )
    print(
        f"  bare pynvml, same fields    median {result['bare']:7.3f} ms   "
        f"ratio {result['ours'] / result['bare']:.2f}"
    )
    if nvitop is None:
        print("  nvitop                      not installed (pass --nvitop-python PATH to compare)")
        return
    other = subprocess.run(
        [nvitop, "-c", NVITOP_CHILD, str(iterations)], env=env, capture_output=True, text=True
    )
    if other.returncode != 0:
        print(f"  nvitop                      failed: {other.stderr.strip()[-300:]}")
        return
    theirs = json.loads(other.stdout.strip().splitlines()[-1])["nvitop"]
    print(
        f"  nvitop 1.x snapshot         median {theirs:7.3f} ms   "
        f"ratio ours/nvitop {result['ours'] / theirs:.2f}"
    )


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure_in_pty(
    argv: list[str], env: dict[str, str], seconds: float, marker: bytes
) -> tuple[float, float, float] | None:
    """Start ``argv`` in a 120x40 pseudo-terminal; (first-frame seconds, CPU % over ``seconds``, RSS MiB), or
    None when no first frame came."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    seen = bytearray()
    first_frame = threading.Event()
    frame_at: list[float] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            if not first_frame.is_set():
                seen.extend(chunk)
                if marker in seen:
                    frame_at.append(time.perf_counter() - started)
                    first_frame.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        if not first_frame.wait(60):
            return None
        time.sleep(3)  # let start-up work finish before measuring the steady state
        ticks, t0 = cpu_ticks(process.pid), time.perf_counter()
        time.sleep(seconds)
        used = (cpu_ticks(process.pid) - ticks) / CLOCK_TICKS
        elapsed = time.perf_counter() - t0
        return frame_at[0], 100 * used / elapsed, rss_mib(process.pid)
    finally:
        os.write(master, b"q")
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        os.close(master)


def run_in_pty(
    label: str, argv: list[str], env: dict[str, str], seconds: float, marker: bytes, runs: int = 1
) -> None:
    """Measure ``argv`` ``runs`` times in a pseudo-terminal and print the medians (and each run's CPU %)."""
    results = [r for r in (measure_in_pty(argv, env, seconds, marker) for _ in range(runs)) if r is not None]
    if not results:
        print(f"{label}: no first frame within 60 s")
        return
    frame, percent, rss = (statistics.median(values) for values in zip(*results, strict=True))
    each = ", ".join(f"{r[1]:.2f}" for r in results)
    print(f"{label} (median of {len(results)} run{'s' if len(results) > 1 else ''}):")
    print(f"  first frame                 {frame:7.2f} s")
    print(
        f"  CPU over {seconds:.0f} s at 1 s interval {percent:5.2f} % of one core   "
        f"= {percent / TARGET_CPU_PERCENT:.2f} x the 1 % target   (runs: {each})"
    )
    print(f"  resident memory             {rss:7.1f} MiB")


def start_scenario(tmp: Path) -> tuple[Path, list[int]]:
    """Start the 64 sleeps of scenario_8x64.py and write its scenario."""
    scenario = tmp / "scenario_8x64.txt"
    out = subprocess.run(
        [sys.executable, str(FAKENVML / "scenario_8x64.py"), str(scenario), "900"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return scenario, [int(pid) for pid in out.stdout.split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=30.0, help="CPU measurement window per app run")
    parser.add_argument("--runs", type=int, default=3, help="app runs per scene (medians are printed)")
    parser.add_argument("--nvitop-python", default=None, help="an interpreter with nvitop installed")
    parser.add_argument("--skip-app", action="store_true", help="skip the pseudo-terminal runs of the app")
    args = parser.parse_args()

    bench_simulated(args.iterations)
    app = [sys.executable, "-m", "tfgpu_tui", "--interval", "1"]
    base_env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    if not args.skip_app:
        demo = "dashboard --demo (simulated 2 GPUs)"
        run_in_pty(demo, [*app, "--demo"], base_env, args.seconds, b"SIMULATED", args.runs)
        scene = f"dashboard on the simulated {GPUS} x {PER_GPU} scene ({GPUS * PER_GPU} processes)"
        argv = [sys.executable, "-c", SIMULATED_APP]
        run_in_pty(scene, argv, base_env, args.seconds, b"SIMULATED", args.runs)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if not build_fakenvml(tmp / "lib"):
            return 0
        scenario, pids = start_scenario(tmp)
        env = {**base_env, "LD_LIBRARY_PATH": str(tmp / "lib"), "FAKE_NVML_SCENARIO": str(scenario)}
        try:
            nvitop = nvitop_python(args.nvitop_python)
            bench_fakenvml(env, args.iterations, nvitop)
            if not args.skip_app:
                label = "dashboard against fakenvml (8 GPUs, 64 processes)"
                run_in_pty(label, app, env, args.seconds, b"H200", args.runs)
                nvitop_bin = Path(nvitop).parent / "nvitop" if nvitop else None
                if nvitop_bin and nvitop_bin.exists():
                    label = "baseline: nvitop --interval 1, same scenario"
                    argv = [str(nvitop_bin), "--interval", "1"]
                    run_in_pty(label, argv, env, args.seconds, b"NVITOP", args.runs)
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
