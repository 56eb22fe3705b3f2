"""Read GPM on a real NVIDIA GPU through tfgpu-tui's own NVML source, in four phases (issue 42's check on
real hardware): idle, a bfloat16 matmul, a float32 matmul, and a loop of tiny kernels. Each workload runs in a
child process with TensorFlow (the --python interpreter's); the parent samples every 0.5 s and prints, per
phase, the medians of utilisation, SM activity and occupancy, tensor (any and HMMA), DRAM, FP32 and FP16
activity, and the diagnoses the dashboard would raise over that phase.

Usage: python scripts/gpm_phases.py [--gpu 0] [--seconds 20] [--python PATH] [--json PATH]
Exit status 1 where there is no GPU to read (the reason is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORKLOADS = {
    "idle": None,
    "bf16 matmul": "x = tf.cast(tf.random.normal((8192, 8192)), tf.bfloat16)\n"
    "step = lambda: tf.linalg.matmul(x, x)",
    "fp32 matmul": "x = tf.random.normal((8192, 8192))\nstep = lambda: tf.linalg.matmul(x, x)",
    "tiny kernels": "x = tf.zeros((8,))\nstep = lambda: x + 1.0",
}
CHILD = """
import os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf
{setup}
with tf.device("/GPU:{gpu}"):
    step()
    print("ready", flush=True)
    end = time.monotonic() + {seconds}
    while time.monotonic() < end:
        for _ in range(50):
            y = step()
        _ = y.numpy() if hasattr(y, "numpy") else y
"""
FIELDS = (
    "sm_active",
    "sm_occupancy",
    "tensor_active",
    "hmma_active",
    "dram_active",
    "fp32_active",
    "fp16_active",
)


def phase(source, gpu: int, name: str, seconds: float, python: str) -> dict:
    """Sample GPU `gpu` every 0.5 s while the phase's workload runs; the medians and the diagnoses."""
    from tfgpu_tui.gpu.efficiency import Efficiency, Thresholds

    child = None
    if WORKLOADS[name] is not None:
        code = CHILD.format(setup=WORKLOADS[name], gpu=gpu, seconds=seconds + 5)
        child = subprocess.Popen([python, "-c", code], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            child.wait()
            return {"phase": name, "error": f"the workload did not start (exit {child.returncode})"}
    efficiency = Efficiency(Thresholds(window_seconds=seconds / 2))
    readings: dict[str, list[float]] = {"utilization": [], **{field: [] for field in FIELDS}}
    diagnoses: set[str] = set()
    why_none = ""
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.5)
            device = source.read().devices[gpu]
            if device.utilization_percent is not None:
                readings["utilization"].append(device.utilization_percent)
            activity = device.activity
            why_none = activity.why_none if activity is not None else "not read"
            for field in FIELDS:
                value = getattr(activity, field, None) if activity is not None else None
                if value is not None:
                    readings[field].append(value)
            diagnoses |= {d.kind for d in efficiency.evaluate(time.monotonic(), [device], [])}
    finally:
        if child is not None:
            child.kill()
            child.wait()
    medians = {
        key: round(statistics.median(values), 1) if values else None for key, values in readings.items()
    }
    return {"phase": name, **medians, "why_none": why_none, "diagnoses": sorted(diagnoses)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter with TensorFlow for the workloads"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tfgpu_tui.gpu.nvml import NvmlSource

    source = NvmlSource()
    reading = source.read()
    if reading.error is not None:
        print(f"No GPU to read: {reading.error.message}")
        return 1
    device = reading.devices[args.gpu]
    print(f"GPU {args.gpu}: {device.name}, compute capability {device.compute_capability}, driver "
          f"{reading.driver.driver_version if reading.driver else '?'}; {os.cpu_count()} CPUs")  # fmt: skip
    results = [phase(source, args.gpu, name, args.seconds, args.python) for name in WORKLOADS]
    source.close()
    header = f"{'phase':<13}{'util':>6}" + "".join(f"{field.removesuffix('_active'):>14}" for field in FIELDS)
    print(header + "  diagnoses")
    for result in results:
        if "error" in result:
            print(f"{result['phase']:<13}{result['error']}")
            continue
        util = "-" if result["utilization"] is None else result["utilization"]
        cells = "".join(f"{'-' if result[f] is None else result[f]:>14}" for f in FIELDS)
        why = f"  ({result['why_none']})" if result["why_none"] else ""
        print(f"{result['phase']:<13}{util:>6}{cells}  {', '.join(result['diagnoses']) or '-'}{why}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
