"""Benchmark: time from start to a visible alert, for each headline case, on real processes.

A scripted GPU (../shared/fakenvml) holds memory for real PIDs: a Jupyter kernel of a real jupyter_server, a
kernel with no server, and real tensorflow-cpu processes. For each case it measures the dashboard (headless
Textual app, default 1 s interval: from start, or from TensorFlow loaded, until the header shows the alert)
and one-shot `tfgpu-tui gpus --json` (wall time of the whole command, and whether the alert was in it).

    python benchmarks/alert_latency.py [--skip-tf]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

FAKENVML = Path(
    os.environ.get("TFGPU_FAKENVML_DIR", Path(__file__).resolve().parents[2] / "shared" / "fakenvml")
)
TF_WORK = (
    "import tensorflow as tf\nprint('ready', flush=True)\nx = tf.random.normal((256, 256))\n"
    "while True:\n    x = tf.linalg.matmul(x, x) / 256.0\n"
)
GPU = 'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util=0\n'


def wait_for(condition, timeout: float = 60.0, step: float = 0.05):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(step)
    return value


class Bench:
    """Shared state: the fakenvml build, the scenario file, the processes to stop."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.lib = base / "lib"
        subprocess.run(["sh", str(FAKENVML / "build.sh"), str(self.lib)], check=True, capture_output=True)
        ctypes.CDLL(str(self.lib / "libnvidia-ml.so.1"))  # before pynvml looks for it
        self.scenario = base / "scenario.txt"
        os.environ["FAKE_NVML_SCENARIO"] = str(self.scenario)
        self.started: list[subprocess.Popen] = []

    def spawn(self, args: list[str], **kwargs: object) -> subprocess.Popen:
        process = subprocess.Popen(args, **kwargs)  # type: ignore[call-overload]
        self.started.append(process)
        return process

    def tf_process(self) -> tuple[subprocess.Popen, float]:
        process = self.spawn([sys.executable, "-c", TF_WORK], stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        return process, time.monotonic()

    def one_shot(self, config: str = "", runtime: Path | None = None) -> tuple[float, dict]:
        env = {**os.environ, "LD_LIBRARY_PATH": str(self.lib), "FAKE_NVML_SCENARIO": str(self.scenario)}
        if config:
            path = self.base / f"config-{uuid.uuid4().hex}.toml"
            path.write_text(config)
            env["TFGPU_TUI_CONFIG"] = str(path)
        if runtime is not None:
            env["JUPYTER_RUNTIME_DIR"] = str(runtime)
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "tfgpu_tui", "gpus", "--json"], env=env, capture_output=True, text=True
        )
        return time.monotonic() - started, json.loads(done.stdout)

    def stop(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
            process.wait()


async def app_latency(settings_kwargs: dict, kind: str, subject: str, start_job=None) -> float:  # noqa: ANN001
    """Seconds from the app's start until the header or the Monitor's alert panel shows an alert of `kind`
    about `subject`; with `start_job` (blocking, returns (subject, since)), from the moment it says, with the
    app already running."""
    from tfgpu_tui.settings import Settings
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.header import StatusHeader
    from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel

    started = time.monotonic()
    app = TfgpuApp(Settings(**settings_kwargs))
    async with app.run_test(size=(160, 40)) as pilot:
        header = app.query_one(StatusHeader)
        panel = app.query_one(AlertsPanel)
        if start_job is not None:
            await pilot.pause(2.0)  # the dashboard is up and sampling
            subject, started = await asyncio.to_thread(start_job)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            shown = [a for a in (header.alert, *panel.alerts) if a is not None]  # header or Monitor panel
            if any(a.kind == kind and subject in a.message + a.subject for a in shown):
                return time.monotonic() - started
            await pilot.pause(0.05)
    raise TimeoutError(f"no {kind} alert in the header")


def start_jupyter(bench: Bench) -> tuple[dict, int]:
    """A real jupyter_server with one notebook session; (server info, kernel PID)."""
    runtime, root = bench.base / "runtime", bench.base / "root"
    (root / "work").mkdir(parents=True)
    (root / "work/analysis.ipynb").write_text(
        '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    )
    token = secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTER_CONFIG_DIR": str(bench.base / "jc")}
    server = bench.spawn(
        [sys.executable, "-m", "jupyter_server", "--ServerApp.port=0", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.base_url=/jp/",
         "--ServerApp.open_browser=False", "--allow-root"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    info = json.loads(wait_for(lambda: next(runtime.glob("jpserver-*.json"), None)).read_text())
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def answers() -> bool:  # the runtime file can come before the server listens
        try:
            opener.open(f"http://127.0.0.1:{info['port']}/jp/api/status", timeout=5).close()
        except OSError as error:
            return getattr(error, "code", None) is not None  # an HTTP answer (even 403) means it listens
        return True

    wait_for(answers, step=0.1)
    url = f"http://127.0.0.1:{info['port']}/jp/api/sessions"
    body = json.dumps({"path": "work/analysis.ipynb", "type": "notebook", "kernel": {"name": "python3"}})
    request = urllib.request.Request(url, body.encode(), {"Authorization": f"token {token}"}, method="POST")
    with opener.open(request, timeout=30) as response:
        kernel_id = json.loads(response.read())["kernel"]["id"]
    import psutil

    def kernel_pid() -> int | None:
        for child in psutil.Process(server.pid).children(recursive=True):
            if any(kernel_id in part for part in child.cmdline()):
                return child.pid
        return None

    pid = wait_for(kernel_pid)
    time.sleep(1.0)  # idle a moment longer than the benchmark's stale threshold
    return {**info, "runtime": runtime}, pid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-tf", action="store_true", help="leave out the two TensorFlow cases")
    args = parser.parse_args()
    results: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(Path(tmp))
        try:
            sleeper = bench.spawn(["sleep", "600"])
            bench.scenario.write_text(GPU + f"process gpu=0 pid={sleeper.pid} used_mib=4096 sm=30\n")
            spent, _ = bench.one_shot()
            results.append(("nothing to confirm (common case)", "-", f"gpus --json {spent:.2f} s"))

            info, kernel = start_jupyter(bench)
            bench.scenario.write_text(GPU + f"process gpu=0 pid={kernel} used_mib=18432 sm=0\n")
            os.environ["JUPYTER_RUNTIME_DIR"] = str(info["runtime"])
            tui = asyncio.run(app_latency({"stale_minutes": 0.01}, "stale_vram", "analysis.ipynb"))
            spent, data = bench.one_shot("stale_minutes = 0.01\n", info["runtime"])
            named = any("analysis.ipynb" in a["message"] for a in data["alerts"] if a["kind"] == "stale_vram")
            results.append(
                ("stale kernel, server idle > threshold", f"{tui:.2f} s", f"{spent:.2f} s alert={named}")
            )

            runtime = Path(tmp) / "no-server"
            runtime.mkdir()
            os.environ["JUPYTER_RUNTIME_DIR"] = str(runtime)
            connection = runtime / f"kernel-{uuid.uuid4()}.json"
            lonely = bench.spawn([sys.executable, "-m", "ipykernel_launcher", "-f", str(connection)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            wait_for(connection.exists)
            bench.scenario.write_text(GPU + f"process gpu=0 pid={lonely.pid} used_mib=18432 sm=0\n")
            tui = asyncio.run(app_latency({"stale_minutes": 0.05}, "stale_vram", connection.stem[7:]))
            results.append(("stale kernel, no server (threshold 3 s)", f"{tui:.2f} s", "- (needs watching)"))

            if not args.skip_tf:
                bench.scenario.write_text(GPU)
                jobs: list[subprocess.Popen] = []

                def start_cpu_job() -> tuple[str, float]:
                    job, loaded = bench.tf_process()
                    jobs.append(job)
                    return f"PID {job.pid}", loaded

                tui = asyncio.run(app_latency({}, "cpu_fallback", "", start_cpu_job))
                cpu_job = jobs[0]
                fresh, _ = bench.tf_process()  # one-shot on a job that has just loaded TensorFlow
                spent, data = bench.one_shot()
                flagged = any(a["subject"] == f"PID {fresh.pid}" for a in data["alerts"])
                results.append(
                    (
                        "TensorFlow on the CPU (from TF loaded)",
                        f"{tui:.2f} s",
                        f"{spent:.2f} s alert={flagged}",
                    )
                )
                fresh.kill()
                cpu_job.kill()
                holder, _ = bench.tf_process()
                bench.scenario.write_text(GPU + f"process gpu=0 pid={holder.pid} used_mib=20480 sm=0\n")
                spent, data = bench.one_shot()
                said = [a["message"] for a in data["alerts"] if a["kind"] == "cpu_fallback"]
                over = bool(said) and "0 % over 2 s" in said[0]
                tui = asyncio.run(app_latency({}, "cpu_fallback", "GPU 0"))
                results.append(
                    (
                        "GPU 0 % while TF holds memory (15 s rule)",
                        f"{tui:.2f} s",
                        f"{spent:.2f} s '0 % over 2 s'={over}",
                    )
                )
        finally:
            bench.stop()
    print(f"{'case':<44} {'dashboard':>10}  one-shot gpus --json")
    for case, tui, one_shot in results:
        print(f"{case:<44} {tui:>10}  {one_shot}")


if __name__ == "__main__":
    main()
