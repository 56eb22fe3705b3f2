"""Regenerate screenshots/efficiency.svg: the Monitor on two scripted H100s (fakenvml, ../shared/fakenvml)
where GPU 0 reads 97 % utilisation with 8 % of its SMs active at its power cap and GPU 1 trains healthily;
the alerts list on the "SMs mostly idle" diagnosis with its text and fix below. Only the two jobs' processes
are looked at (another TensorFlow job on this machine stays out of the picture).

Usage: python scripts/make_efficiency_screenshot.py [--out screenshots]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKENVML = Path(os.environ.get("TFGPU_FAKENVML_DIR", ROOT.parent / "shared" / "fakenvml"))
SIZE = (120, 34)
H100 = 'name="NVIDIA H100 80GB HBM3" total_mib=81559'
JOBS = (("train.py", "--batch-size", "16"), ("train_mixed.py", "--batch-size", "512"))


def scenario(pids: list[int]) -> str:
    return (
        f"device {H100} util=97 gpm_sm=8 gpm_occupancy=6 gpm_tensor=0 gpm_dram=12 power_mw=690000 "
        "throttle=0x4 temp=71\n"
        f"device {H100} util=96 gpm_sm=83 gpm_occupancy=41 gpm_tensor=64 gpm_dram=58 power_mw=520000 "
        "temp=64\n"
        f"process gpu=0 pid={pids[0]} used_mib=9216 sm=97\n"
        f"process gpu=1 pid={pids[1]} used_mib=61440 sm=96\n"
    )


async def shoot(out: Path, pids: list[int]) -> None:
    from tfgpu_tui.gpu.feed import SnapshotFeed
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.proc.facts import PsutilFacts
    from tfgpu_tui.settings import Settings
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.monitor import MonitorTab
    from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel

    settings = Settings(readonly=True, efficiency_minutes=0.05)
    sampler = Sampler(settings, NvmlSource(), HostInspector(facts=PsutilFacts(pids)))
    app = TfgpuApp(settings, feed=SnapshotFeed(settings, sampler=sampler))
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one(AlertsPanel)
        deadline = time.monotonic() + 60
        while not any(a.kind == "busy_not_working" for a in panel.ordered):
            if time.monotonic() > deadline:
                raise RuntimeError("no diagnosis came")
            await pilot.pause(0.2)
        app.query_one(MonitorTab).action_focus_alerts()
        await pilot.pause(0.2)
        while panel.selected is not None and panel.selected.kind != "busy_not_working":
            await pilot.press("down")
        await pilot.pause(1.0)
        app.save_screenshot(str(out / "efficiency.svg"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["sh", str(FAKENVML / "build.sh"), tmp], check=True, capture_output=True)
        ctypes.CDLL(str(Path(tmp) / "libnvidia-ml.so.1"))  # before pynvml looks for it
        for script, *_ in JOBS:  # the jobs: scripts that sleep, named as training scripts are
            (Path(tmp) / script).write_text("import time\ntime.sleep(600)\n")
        jobs = [subprocess.Popen(["python3", *job], cwd=tmp) for job in JOBS]
        try:
            path = Path(tmp) / "scenario.txt"
            path.write_text(scenario([job.pid for job in jobs]))
            os.environ["FAKE_NVML_SCENARIO"] = str(path)
            asyncio.run(shoot(args.out, [job.pid for job in jobs]))
        finally:
            for job in jobs:
                job.kill()
                job.wait()
    print(f"wrote {args.out / 'efficiency.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
