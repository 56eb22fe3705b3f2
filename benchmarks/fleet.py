"""Benchmark: what `tfgpu-tui export` and the Hosts tab cost (issue 15).

1. One scrape at 8 GPUs x 64 processes: `tfgpu-tui export` runs as its own process on fakenvml
   (../shared/fakenvml, scenario_8x64.py: 8 H200s, 64 real sleeping PIDs, extended NVML source); --scrapes
   HTTP scrapes one after another. Server time is the exporter's own figure for formatting each scrape
   (tfgpu_scrape_duration_seconds, read from the next reply); the client's round trip over loopback and
   the exporter's GPU+host sample time (tfgpu_sample_duration_seconds) are reported beside it.
   Aim: server time median under 20 ms.
2. The fleet view's CPU: one child process serves 50 simulated exporters (2 GPUs and 4 processes each,
   sampling every 2 s); the dashboard (`python -m tfgpu_tui --remote <the 50> --readonly`) runs in a real
   terminal (tmux, 160x48), shows the Hosts tab (key 5) and refreshes every 2 s. CPU is its process
   tree's utime+stime from /proc over --seconds after --warmup; the same dashboard without --remote (no
   Hosts tab, on the Monitor tab, no driver) is the baseline, so the difference is the fleet view's cost.
   Aim: under 2 % of one core. Where Debian's prometheus is installed, the same again with the dashboard
   reading a Prometheus that scrapes the 50 exporters every 2 s (`--prometheus URL`).

    python benchmarks/fleet.py [--scrapes 200] [--seconds 30] [--warmup 8] [--exporters 50] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

FAKENVML = Path(
    os.environ.get("TFGPU_FAKENVML_DIR", Path(__file__).resolve().parents[2] / "shared" / "fakenvml")
)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
SCRAPE_AIM_MS = 20.0
WARM_SECONDS = 4.0
CPU_AIM_PERCENT = 2.0
SERVE_50 = """
import sys, signal
from tfgpu_tui.settings import Settings
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.export.collector import Exporter
from tfgpu_tui.export.server import MetricsServer
count = int(sys.argv[1])
settings = Settings(demo=True, interval=2.0)
servers = []
for i in range(count):
    exporter = Exporter(settings, Sampler(settings, SimulatedSource(gpus=2, processes_per_gpu=2)),
                        hostname=f"node-{i:02d}")
    exporter.start()
    server = MetricsServer(("127.0.0.1", 0), exporter)
    server.start()
    servers.append(server)
print(",".join(f"127.0.0.1:{s.port}" for s in servers), flush=True)
signal.sigwait({signal.SIGTERM, signal.SIGINT})
"""


def tree_ticks(pid: int) -> int:
    """utime + stime (and reaped children's) of a process and its descendants, in clock ticks."""
    import psutil

    total = 0
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    for proc in procs:
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(fields[i]) for i in (11, 12, 13, 14))
        except (OSError, IndexError):
            continue
    return total


def build_fakenvml(out: Path) -> Path:
    subprocess.run(["sh", str(FAKENVML / "build.sh"), str(out)], check=True, capture_output=True)
    return out


def scrape_benchmark(tmp: Path, scrapes: int) -> dict:
    """Median/p90 of the exporter's server time, the client round trip and the sample time."""
    lib = build_fakenvml(tmp / "fakenvml")
    scenario = tmp / "scenario.txt"
    pids = subprocess.run(
        [sys.executable, str(FAKENVML / "scenario_8x64.py"), str(scenario), "300"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib), "FAKE_NVML_SCENARIO": str(scenario)}
    child = subprocess.Popen(
        [sys.executable, "-m", "tfgpu_tui", "export", "--port", "0", "--interval", "1"],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        url = child.stdout.readline().split("serving ", 1)[1].split()[0] if child.stdout else ""
        time.sleep(WARM_SECONDS)  # past the first samples, which look every process up
        server, client, sample = [], [], []
        lines = 0
        for _ in range(scrapes):
            started = time.perf_counter()
            with urllib.request.urlopen(url, timeout=10) as reply:
                text = reply.read().decode()
            client.append((time.perf_counter() - started) * 1000)
            lines = text.count("\n")
            found = re.search(r"^tfgpu_scrape_duration_seconds (\S+)$", text, re.M)
            if found:
                server.append(float(found.group(1)) * 1000)
            found = re.search(r"^tfgpu_sample_duration_seconds (\S+)$", text, re.M)
            if found:
                sample.append(float(found.group(1)) * 1000)
        processes = len(re.findall(r"^tfgpu_process_gpu_memory_mib\{", text, re.M))
        gpus = len(re.findall(r"^DCGM_FI_DEV_GPU_UTIL\{", text, re.M))
    finally:
        child.terminate()
        child.wait()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)
    return {
        "gpus": gpus,
        "process_series": processes,
        "lines": lines,
        "server_ms_median": statistics.median(server),
        "server_ms_p90": statistics.quantiles(server, n=10)[-1],
        "client_ms_median": statistics.median(client),
        "sample_ms_median": statistics.median(sample),
        "scrapes": scrapes,
    }


def dashboard_cpu(args: list[str], seconds: float, warmup: float, keys: str, name: str) -> float:
    """% of one core used by the dashboard's process tree, in tmux."""
    command = " ".join([sys.executable, "-m", "tfgpu_tui", "--readonly", *args])
    socket = f"tfgpu-fleet-bench-{os.getpid()}-{name}"
    env = {**os.environ, "TERM": "xterm-256color"}
    subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", "-x", "160", "-y", "48", command], check=True, env=env
    )
    try:
        time.sleep(3)
        if keys:
            subprocess.run(["tmux", "-L", socket, "send-keys", keys], check=True)
        pid = int(
            subprocess.run(
                ["tmux", "-L", socket, "list-panes", "-F", "#{pane_pid}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()[0]
        )
        time.sleep(warmup)
        before, started = tree_ticks(pid), time.monotonic()
        time.sleep(seconds)
        used = (tree_ticks(pid) - before) / CLOCK_TICKS
        pane = subprocess.run(
            ["tmux", "-L", socket, "capture-pane", "-p"], check=True, capture_output=True, text=True
        ).stdout
        if args and "node-" not in pane:
            raise RuntimeError(f"the Hosts tab shows no host:\n{pane}")
        return 100.0 * used / (time.monotonic() - started)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], check=False)


def start_prometheus(tmp: Path, targets: str) -> tuple[subprocess.Popen, str]:
    """Debian's prometheus scraping the exporters every 2 s; (process, base URL) once every target is up."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = tmp / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 2s\nscrape_configs:\n  - job_name: tfgpu\n    static_configs:\n"
        f"      - targets: {json.dumps(targets.split(','))}\n"
    )
    child = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.5)
        try:
            with urllib.request.urlopen(f"{url}/api/v1/query?query=sum(up)", timeout=2) as reply:
                result = json.load(reply)["data"]["result"]
            if result and float(result[0]["value"][1]) == len(targets.split(",")):
                return child, url
        except OSError:
            continue
    child.terminate()
    raise RuntimeError("prometheus did not scrape every exporter in 60 s")


def fleet_benchmark(exporters: int, seconds: float, warmup: float, via_prometheus: bool) -> dict:
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE_50, str(exporters)], stdout=subprocess.PIPE, text=True
    )
    results: dict = {"exporters": exporters, "seconds": seconds}
    try:
        targets = server.stdout.readline().strip() if server.stdout else ""
        results["cpu_percent_baseline"] = baseline = dashboard_cpu([], seconds, warmup, "", "base")
        direct = dashboard_cpu(["--remote", targets], seconds, warmup, "5", "fleet")
        results["cpu_percent_with_hosts_tab"] = direct
        results["cpu_percent_fleet_view"] = direct - baseline
        if via_prometheus:
            with tempfile.TemporaryDirectory() as tmp:
                prometheus, url = start_prometheus(Path(tmp), targets)
                try:
                    through = dashboard_cpu(["--prometheus", url], seconds, warmup, "5", "prom")
                finally:
                    prometheus.terminate()
                    prometheus.wait()
            results["cpu_percent_fleet_view_via_prometheus"] = through - baseline
    finally:
        server.terminate()
        server.wait()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=8.0)
    parser.add_argument("--exporters", type=int, default=50)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--skip-fleet", action="store_true", help="only the scrape benchmark")
    parser.add_argument("--no-prometheus", action="store_true", help="skip the fleet view through Prometheus")
    args = parser.parse_args()
    if shutil.which("tmux") is None and not args.skip_fleet:
        print("tmux is needed for the fleet view benchmark", file=sys.stderr)
        return 2
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["scrape"] = scrape(Path(tmp), args.scrapes)
    s = results["scrape"]
    print(
        f"scrape at {s['gpus']} GPUs, {s['process_series']} process series ({s['lines']} lines): server "
        f"median {s['server_ms_median']:.2f} ms (p90 {s['server_ms_p90']:.2f}; aim < {SCRAPE_AIM_MS:.0f}), "
        f"client round trip {s['client_ms_median']:.2f} ms, GPU+host sample {s['sample_ms_median']:.2f} ms"
    )
    if not args.skip_fleet:
        via = Path(PROMETHEUS).exists() and not args.no_prometheus
        results["fleet"] = f = fleet_benchmark(args.exporters, args.seconds, args.warmup, via)
        print(
            f"Hosts tab with {f['exporters']} exporters at 2 s: {f['cpu_percent_with_hosts_tab']:.2f} % of a "
            f"core (dashboard without it {f['cpu_percent_baseline']:.2f} %): fleet view "
            f"{f['cpu_percent_fleet_view']:.2f} % (aim < {CPU_AIM_PERCENT:.0f})"
        )
        if "cpu_percent_fleet_view_via_prometheus" in f:
            print(
                f"through --prometheus instead: fleet view {f['cpu_percent_fleet_view_via_prometheus']:.2f} %"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


scrape = scrape_benchmark

if __name__ == "__main__":
    sys.exit(main())
