"""Regenerate screenshots/hosts.svg and screenshots/host_detail.svg: the Hosts tab (--remote) over three
`tfgpu-tui export --demo` exporters (simulated GPUs, one following a training log) and one that is stopped.

Usage: python scripts/make_fleet_screenshot.py [--out screenshots]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tfgpu_tui.settings import Settings
from tfgpu_tui.training.synthetic import keras3_log
from tfgpu_tui.ui.app import TfgpuApp

ROOT = Path(__file__).resolve().parent.parent
SIZE = (160, 40)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def exporter(name: str, port: int, log: Path | None = None) -> subprocess.Popen:
    args = [sys.executable, "-m", "tfgpu_tui", "export", "--demo", "--port", str(port), "--hostname", name]
    child = subprocess.Popen(
        [*args, *(["--log", str(log)] if log else [])], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and "serving" in child.stdout.readline()
    return child


async def shoot(targets: tuple[str, ...], first: str, out: Path) -> None:
    from tfgpu_tui.ui.host_detail import HostDetailScreen
    from tfgpu_tui.ui.hosts import HostsTab
    from tfgpu_tui.ui.widgets.hosts_table import HostsTable

    app = TfgpuApp(Settings(demo=True, readonly=True, remote_hosts=targets, fleet_refresh_seconds=1.0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        tab = app.query_one(HostsTab)
        deadline = time.monotonic() + 30
        while not (tab.view and sum(h.up for h in tab.view.hosts) == len(targets) - 1):
            if time.monotonic() > deadline:
                raise RuntimeError("the hosts did not come up")
            await pilot.pause(0.2)
        await pilot.pause(1.5)  # a second refresh: scrape ages settle
        app.save_screenshot(str(out / "hosts.svg"))
        app.query_one(HostsTable).move_to(first)
        await pilot.press("enter")
        while not isinstance(app.screen, HostDetailScreen):
            await pilot.pause(0.1)
        await pilot.pause(1.0)
        app.save_screenshot(str(out / "host_detail.svg"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    args = parser.parse_args()
    ports = [free_port() for _ in range(4)]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        log.write_text(keras3_log(20, 469, 40, done_epochs=7, partial_steps=300))
        children = [
            exporter("lab-a100", ports[0], log),
            exporter("cloud-1", ports[1]),
            exporter("cloud-2", ports[2]),
        ]
        try:
            targets = tuple(f"127.0.0.1:{port}" for port in ports)  # the last one has no exporter: down
            asyncio.run(shoot(targets, targets[0], args.out))
        finally:
            for child in children:
                child.terminate()
                child.wait()
    print(f"wrote {args.out / 'hosts.svg'} and {args.out / 'host_detail.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
