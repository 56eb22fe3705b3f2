"""Helpers for the fleet tests: exporters and a real Prometheus as child processes, HTTP queries."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tests.helpers.waiting import wait_for

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    temporary.replace(path)


def start_exporter(
    lib_dir: Path, scenario: Path, args: list[str], started: list[subprocess.Popen], env: dict | None = None
) -> str:
    """`python -m tfgpu_tui export --port 0 ARGS` on fakenvml; returns the URL it prints once serving."""
    environ = {
        **os.environ,
        "LD_LIBRARY_PATH": str(lib_dir),
        "FAKE_NVML_SCENARIO": str(scenario),
        **(env or {}),
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "tfgpu_tui", "export", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )
    started.append(child)
    line = child.stdout.readline() if child.stdout else ""
    if "serving" not in line:
        child.kill()
        raise AssertionError(
            f"exporter did not start: {line!r} {child.stderr.read() if child.stderr else ''}"
        )
    return line.split("serving ", 1)[1].split()[0]  # the URL, before any note


def stop(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def prometheus_version() -> str | None:
    if not Path(PROMETHEUS).exists():
        return None
    out = subprocess.run([PROMETHEUS, "--version"], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).split("\n", 1)[0]


def start_prometheus(
    tmp: Path, targets: list[str], started: list[subprocess.Popen], interval: str = "1s", extra: str = ""
) -> str:
    """A real Prometheus scraping `targets` (HOST:PORT) every `interval` (`extra`: more lines for the job);
    returns its base URL once ready."""
    config = tmp / "prometheus.yml"
    config.write_text(
        "global:\n"
        f"  scrape_interval: {interval}\n"
        f"  scrape_timeout: {interval}\n"
        "scrape_configs:\n"
        "  - job_name: tfgpu\n"
        f"    static_configs:\n      - targets: {json.dumps(targets)}\n" + extra
    )
    port = free_port()
    child = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    started.append(child)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if child.poll() is not None:
            raise AssertionError(f"prometheus exited: {child.stderr.read().decode() if child.stderr else ''}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as reply:
                return reply.status == 200
        except OSError:
            return False

    wait_for(ready, timeout=60)
    return url


def query(url: str, promql: str) -> list[dict]:
    """An instant query through Prometheus's HTTP API: the result vector."""
    address = f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(address, timeout=5) as reply:
        data = json.load(reply)
    assert data["status"] == "success", data
    return data["data"]["result"]


def value_of(results: list[dict], **labels: str) -> float | None:
    """The value of the one result whose labels include `labels`."""
    found = [r for r in results if all(r["metric"].get(k) == v for k, v in labels.items())]
    assert len(found) <= 1, found
    return float(found[0]["value"][1]) if found else None


def targets(url: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/api/v1/targets?state=active", timeout=5) as reply:
        return json.load(reply)["data"]["activeTargets"]


def wait_scrapes(url: str, count: int, timeout: float = 60.0) -> None:
    """Until every target has been scraped `count` times (its `up` samples over the last minute)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        results = query(url, "count_over_time(up[1m])")
        if results and all(float(r["value"][1]) >= count for r in results):
            return
        time.sleep(0.25)
    raise AssertionError(f"targets not scraped {count} times in {timeout} s")
