"""Benchmark: what `tfgpu-tui notify` costs while idle, against the Monitor measured in the same run.

Method (benchmarks/monitor.py's, whose helpers it uses): fakenvml (../shared/fakenvml) with the scenario of
its scenario_8x64.py (8 H200s, 64 real sleeping PIDs); the dashboard idles on its Monitor in its own tmux
server at 160x48 with a 1 s refresh; notify runs headless beside it (no tmux: it is a nohup job) with one
finished training log to follow, at its default 5 s interval and at 1 s (the Monitor's rate). CPU is the CPU
time of each program's process tree from /proc over --seconds after --warmup seconds; the programs take
turns, --runs times each, so a change in the speed of a shared VM's host falls on both sides of a ratio
alike.

    python benchmarks/notify.py [--seconds 30] [--warmup 6] [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from monitor import CLOCK_TICKS, FAKENVML, OURS_MARKER, idle_cpu, start_scenario, tree_ticks  # noqa: E402

FINISHED_LOG = (
    "Epoch 1/2\n10/10 [==============================] - 1s 100ms/step - loss: 0.5000\n"
    "Epoch 2/2\n10/10 [==============================] - 1s 100ms/step - loss: 0.2500\n"
)


def notify_cpu(argv: list[str], env: dict[str, str], seconds: float, warmup: float) -> float:
    """CPU % of one core of a headless notify over `seconds`, after it said it watches and `warmup`."""
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 120
            while b"watching" not in (err.seek(0) or err.read()):
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit(f"notify did not start: {(err.seek(0) or err.read()).decode()}")
                time.sleep(0.1)
            time.sleep(warmup)
            ticks, started = tree_ticks(process.pid), time.perf_counter()
            time.sleep(seconds)
            used = (tree_ticks(process.pid) - ticks) / CLOCK_TICKS
            return 100 * used / (time.perf_counter() - started)
        finally:
            process.terminate()
            process.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="CPU measurement window")
    parser.add_argument("--warmup", type=float, default=6.0, help="seconds before the window opens")
    parser.add_argument("--runs", type=int, default=2, help="idle runs per program")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfgpu-bench-notify-") as tmp_name:
        tmp = Path(tmp_name)
        os.chdir(tmp)
        subprocess.run(["sh", str(FAKENVML / "build.sh"), str(tmp / "lib")], check=True, capture_output=True)
        scenario, pids = start_scenario(tmp)
        (tmp / "config").mkdir()
        (tmp / "train.log").write_text(FINISHED_LOG)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/root"),
            "TERM": "tmux-256color",
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(tmp / "config"),
            "XDG_RUNTIME_DIR": str(tmp),
            "LD_LIBRARY_PATH": str(tmp / "lib"),
            "FAKE_NVML_SCENARIO": str(scenario),
        }
        monitor = [sys.executable, "-m", "tfgpu_tui", "--interval", "1"]
        notify = [sys.executable, "-m", "tfgpu_tui", "notify", "--json", "--log", str(tmp / "train.log")]
        notify += ["--state", str(tmp / "state.json")]
        figures: dict[str, list[float]] = {"monitor": [], "notify": [], "notify_1s": []}
        try:
            print(f"python {sys.version.split()[0]}; {os.cpu_count()} CPUs; fakenvml 8x64", flush=True)
            for run in range(args.runs):
                result = idle_cpu(monitor, env, args.seconds, args.warmup, OURS_MARKER)
                if result is not None:
                    figures["monitor"].append(result[0])
                figures["notify"].append(notify_cpu(notify, env, args.seconds, args.warmup))
                figures["notify_1s"].append(
                    notify_cpu([*notify, "--interval", "1"], env, args.seconds, args.warmup)
                )
                print(f"  run {run + 1}: " + ", ".join(f"{k} {v[-1]:.2f} %" for k, v in figures.items() if v))
        finally:
            for pid in pids:
                os.kill(pid, 9)
        medians = {key: statistics.median(values) for key, values in figures.items() if values}
        monitor_cpu = medians.get("monitor")
        for key, value in medians.items():
            ratio = f" ({value / monitor_cpu:.2f}x the Monitor)" if monitor_cpu else ""
            print(f"{key}: {value:.2f} % of one core{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
