"""Regenerate screenshots/*.svg: one SVG per tab at 160x48, and the Monitor at 80x24, from the demo (simulated
GPUs, labelled SIMULATED).

Usage: python scripts/make_screenshots.py [--only monitor,training] [--out screenshots]

Everything is the demo's one simulated machine (SIMULATED): its GPUs, the Environment tab's recorded problems
on that machine, the Batch probe's simulated trials of builtin:cnn on its GPU 0; the Training tab follows
tests/fixtures/training/screenshot_demo.log.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp

ROOT = Path(__file__).resolve().parent.parent
SIZE = (160, 48)


@dataclass
class Shot:
    """One screenshot: the tab, the settings, what the tab must show first, and keys to press then."""

    tab: str
    settings: Callable[[], Settings]
    ready: Callable[[TfgpuApp], bool]
    keys: tuple[str, ...] = ()
    timeout: float = 120.0
    size: tuple[int, int] = SIZE


def _environment_ready(app: TfgpuApp) -> bool:
    from tfgpu_tui.ui.environment import EnvironmentTab

    report = app.query_one(EnvironmentTab).report
    return report is not None and report.complete


def _monitor_ready(app: TfgpuApp) -> bool:
    from tfgpu_tui.ui.monitor import MonitorTab

    return app.query_one(MonitorTab).snapshot is not None and _settled(app, 2.0)


def _probe_ready(app: TfgpuApp) -> bool:
    from tfgpu_tui.ui.batch_probe import BatchProbeTab

    return app.query_one(BatchProbeTab).result is not None


_started: dict[int, float] = {}


def _settled(app: TfgpuApp, seconds: float) -> bool:
    start = _started.setdefault(id(app), time.monotonic())
    return time.monotonic() - start > seconds


SHOTS = {
    "monitor": Shot("monitor", lambda: Settings(demo=True), _monitor_ready),
    "monitor-80x24": Shot("monitor", lambda: Settings(demo=True), _monitor_ready, size=(80, 24)),
    "environment": Shot("environment", lambda: Settings(demo=True), _environment_ready, ("down",) * 7),
    "training": Shot(
        "training",
        lambda: Settings(
            demo=True,
            log_path=ROOT / "tests/fixtures/training/screenshot_demo.log",
            log_path_given=True,
        ),
        lambda app: _settled(app, 2.5),
    ),
    "batch_probe": Shot("probe", lambda: Settings(demo=True), _probe_ready, timeout=300.0),
}


async def take(name: str, shot: Shot, out: Path) -> Path:
    """Run the app on the shot's tab until it is ready, press its keys, and save the SVG."""
    app = TfgpuApp(shot.settings(), initial_tab=shot.tab)
    async with app.run_test(size=shot.size) as pilot:
        await prepare(name, app, pilot)
        deadline = time.monotonic() + shot.timeout
        while not shot.ready(app):
            if time.monotonic() > deadline:
                raise SystemExit(f"{name}: not ready after {shot.timeout:.0f} s")
            await pilot.pause(0.2)
        for key in shot.keys:
            await pilot.press(key)
        await pilot.pause(1.5)
        path = out / f"{name}.svg"
        app.save_screenshot(filename=path.name, path=str(out))
    return path


async def prepare(name: str, app: TfgpuApp, pilot) -> None:  # noqa: ANN001 - textual's Pilot
    """Tab-specific set-up before waiting: the Batch probe starts its simulated run of builtin:cnn."""
    if name == "batch_probe":
        await pilot.pause(0.5)
        app.query_one("#probe-start").focus()
        await pilot.press("ctrl+r")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="comma-separated names: " + ", ".join(SHOTS))
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    args = parser.parse_args()
    names = [name for name in args.only.split(",") if name] or list(SHOTS)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        print("wrote", asyncio.run(take(name, SHOTS[name], args.out)))


if __name__ == "__main__":
    main()
