"""Host details of GPU processes on real child processes: identity, markers, TensorFlow, Jupyter notebooks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from tfgpu_tui.gpu import processes
from tfgpu_tui.gpu.jupyter import JupyterResolver, fetch_sessions, kernel_connection_file, kernel_id_from_file
from tfgpu_tui.gpu.model import HostState
from tfgpu_tui.gpu.processes import HostInspector, read_stat, tensorflow_loaded
from tfgpu_tui.gpu.source import GpuProcess

SLEEPER = "import time, sys; print('ready', flush=True); time.sleep(60)"
MAPPER = (
    "import mmap, sys, time\n"
    "f = open(sys.argv[1], 'r+b'); m = mmap.mmap(f.fileno(), 0)\n"
    "print('ready', flush=True); time.sleep(60)\n"
)


def start(args: list[str]) -> subprocess.Popen:
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


@pytest.fixture
def children():
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def test_read_stat_of_self_and_of_nothing() -> None:
    stat = read_stat(os.getpid())
    assert stat is not None and stat.state in "RS" and stat.rss_pages > 0 and stat.start_ticks > 0
    assert read_stat(4_194_301) is None


def test_tensorflow_loaded_reads_the_maps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "PROC", str(tmp_path))
    (tmp_path / "5").mkdir()
    filler = b"7f00-7f01 r-xp 0 08:01 1 /usr/lib/libc.so.6\n" * 3000  # crosses the 64 KiB read size
    (tmp_path / "5" / "maps").write_bytes(
        filler + b"7f02-7f03 r-xp 0 08:01 2 /site/libtensorflow_framework.so.2\n"
    )
    (tmp_path / "6").mkdir()
    (tmp_path / "6" / "maps").write_bytes(filler)
    assert tensorflow_loaded(5) is True
    assert tensorflow_loaded(6) is False
    assert tensorflow_loaded(7) is None


def test_describe_a_real_process(children: list) -> None:
    child = start([sys.executable, "-c", SLEEPER])
    children.append(child)
    clock = [1e9]
    inspector = HostInspector(background=False, clock=lambda: clock[0])
    first = inspector.describe([GpuProcess(child.pid, 0, 512.0, 10.0)])[0]
    assert first.host_state is HostState.OK and first.gpu_memory_mib == 512.0 and first.sm_percent == 10.0
    assert first.command and "time.sleep(60)" in first.command
    assert first.uid == os.getuid() and first.user and first.create_time and first.running_seconds is not None
    assert first.host_memory_mib and first.host_memory_mib > 1
    assert first.tensorflow_loaded is False and first.jupyter is None
    assert first.cpu_percent is None  # needs two readings
    clock[0] += 1
    # listed on two GPUs: both rows get the same CPU % (not 0 % for the second read in the same refresh)
    second, third = inspector.describe(
        [GpuProcess(child.pid, 0, 512.0, 10.0), GpuProcess(child.pid, 1, 1.0, 0.0)]
    )
    assert (
        second.cpu_percent is not None and second.cpu_percent >= 0 and third.cpu_percent == second.cpu_percent
    )


def test_zombie_and_vanished_processes_keep_their_rows(
    children: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "in_other_pid_namespace", lambda: False)
    child = subprocess.Popen(["sleep", "60"])
    children.append(child)
    inspector = HostInspector(background=False)
    assert inspector.describe([GpuProcess(child.pid, 0, 1.0, 0.0)])[0].host_state is HostState.OK
    child.kill()
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    row = inspector.describe([GpuProcess(child.pid, 0, 1.0, 0.0)])[0]
    assert row.host_state is HostState.ZOMBIE and row.gpu_memory_mib == 1.0 and row.parent_pid == os.getpid()
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.settings import Settings

    refusal = Sampler(Settings(), host=inspector, source=_NoGpu()).kill_refusal(row) or ""
    assert "zombie" in refusal and f"its parent, PID {os.getpid()}" in refusal
    child.wait()
    assert inspector.describe([GpuProcess(child.pid, 0, 1.0, 0.0)])[0].host_state is HostState.NO_SUCH_PROCESS


class _NoGpu:
    simulated = False
    host = None

    def device_info(self) -> list:
        return []

    def past_samples(self, seconds: float, step: float) -> tuple:
        return ()

    def read(self):
        from tfgpu_tui.gpu.source import GpuReading

        return GpuReading(None, None)

    def close(self) -> None:
        pass


def test_unreadable_process_is_marked_no_permission(children: list, monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    child = subprocess.Popen(["sleep", "60"])
    children.append(child)

    class Denied:
        def __init__(self, pid: int) -> None:
            raise psutil.AccessDenied(pid)

    monkeypatch.setattr(psutil, "Process", Denied)  # as under a hidepid=2 /proc
    row = HostInspector(background=False).describe([GpuProcess(child.pid, 0, 64.0, 0.0)])[0]
    assert row.host_state is HostState.NO_PERMISSION and row.gpu_memory_mib == 64.0 and row.command is None


def test_cpu_tensorflow_processes_are_found(children: list, tmp_path: Path) -> None:
    fake_lib = tmp_path / "libtensorflow_framework.so.2"
    fake_lib.write_bytes(b"\0" * 4096)
    child = start([sys.executable, "-c", MAPPER, str(fake_lib)])
    children.append(child)
    inspector = HostInspector(background=False)
    rows = {r.pid: r for r in inspector.cpu_tensorflow(set())}
    assert child.pid in rows and rows[child.pid].gpu_index is None and rows[child.pid].tensorflow_loaded
    assert child.pid not in {r.pid for r in inspector.cpu_tensorflow({child.pid})}


def test_kernel_command_lines() -> None:
    cmd = ["python", "-m", "ipykernel_launcher", "-f", "/run/user/1/jupyter/kernel-0a1b-2c.json"]
    assert kernel_connection_file(cmd) == "/run/user/1/jupyter/kernel-0a1b-2c.json"
    assert kernel_id_from_file(cmd[-1]) == "0a1b-2c"
    assert (
        kernel_connection_file(["python", "-m", "ipykernel_launcher", "--f=/x/kernel-9.json"])
        == "/x/kernel-9.json"
    )
    assert kernel_connection_file(["python", "train.py", "-f", "x"]) is None


class SessionsHandler(BaseHTTPRequestHandler):
    token = "s3cret"
    sessions: list = []

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        ok = self.path == "/lab/api/sessions" and self.headers.get("Authorization") == f"token {self.token}"
        body = json.dumps(self.sessions if ok else {"message": "Forbidden"}).encode()
        self.send_response(200 if ok else 403)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def jupyter_server(tmp_path: Path):
    """A local stand-in for a Jupyter server's /api/sessions, and its runtime file."""
    server = HTTPServer(("127.0.0.1", 0), SessionsHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    SessionsHandler.sessions = [
        {
            "path": "work/resnet.ipynb",
            "kernel": {"id": "abcd-1234", "execution_state": "idle", "last_activity": "2026-01-01T10:00:00Z"},
        }
    ]
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    port = server.server_address[1]
    info = {"url": f"http://localhost:{port}/lab/", "port": port, "base_url": "/lab/", "token": "s3cret"}
    (runtime / "jpserver-77.json").write_text(json.dumps(info))
    yield runtime
    server.shutdown()


def test_sessions_with_token(jupyter_server: Path) -> None:
    sessions = fetch_sessions(jupyter_server / "jpserver-77.json")
    assert (
        sessions["abcd-1234"].path == "work/resnet.ipynb" and sessions["abcd-1234"].execution_state == "idle"
    )
    info = json.loads((jupyter_server / "jpserver-77.json").read_text())
    info["token"] = "wrong"
    (jupyter_server / "nbserver-1.json").write_text(json.dumps(info))
    assert fetch_sessions(jupyter_server / "nbserver-1.json") == {}


def test_kernel_process_shows_its_notebook(jupyter_server: Path, children: list) -> None:
    kernel_file = jupyter_server / "kernel-abcd-1234.json"
    child = start([sys.executable, "-c", SLEEPER, "ipykernel_launcher", "-f", str(kernel_file)])
    children.append(child)
    row = HostInspector(background=False).describe([GpuProcess(child.pid, 0, 100.0, 0.0)])[0]
    assert row.jupyter is not None and row.jupyter.kernel_id == "abcd-1234"
    assert row.jupyter.notebook_path == "work/resnet.ipynb" and row.jupyter.execution_state == "idle"


def test_unknown_kernel_says_why(
    tmp_path: Path, jupyter_server: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tfgpu_tui.gpu.jupyter.default_runtime_dirs", lambda: [])
    resolver = JupyterResolver(background=False)
    lonely = resolver.resolve(
        ["python", "-m", "ipykernel_launcher", "-f", str(tmp_path / "kernel-ffff.json")]
    )
    assert lonely is not None and lonely.notebook_path is None and "server file" in lonely.why_unknown
    unlisted = resolver.resolve(
        ["python", "-m", "ipykernel_launcher", "-f", str(jupyter_server / "kernel-ee.json")]
    )
    assert unlisted is not None and unlisted.kernel_id == "ee" and "lists" in unlisted.why_unknown


def test_server_in_the_default_runtime_dir_is_asked(
    tmp_path: Path, jupyter_server: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(jupyter_server))
    elsewhere = tmp_path / "elsewhere"
    kernel = JupyterResolver(background=False).resolve(
        ["python", "-m", "ipykernel_launcher", "-f", str(elsewhere / "kernel-abcd-1234.json")]
    )
    assert kernel is not None and kernel.notebook_path == "work/resnet.ipynb"
