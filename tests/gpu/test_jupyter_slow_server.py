"""A Jupyter server that does not answer one refresh (a loaded machine) keeps its kernels' notebook and kernel
actions for a while; one whose runtime file is gone loses them at once. A scripted server over real HTTP."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tfgpu_tui.gpu.jupyter import NO_SERVER, JupyterResolver

KERNEL = "0a1b-2c"


class Scripted(BaseHTTPRequestHandler):
    answering = True

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if not Scripted.answering or self.headers.get("Authorization") != "token t0ken":
            self.send_error(503 if Scripted.answering is False else 403)
            return
        kernel = {"id": KERNEL, "execution_state": "idle", "last_activity": "2026-12-05T09:00:00Z"}
        body = [{"path": "work/eda.ipynb", "kernel": kernel}] if self.path.endswith("sessions") else [kernel]
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    info = {"url": f"http://127.0.0.1:{httpd.server_port}/", "port": httpd.server_port, "token": "t0ken"}
    (runtime / "jpserver-1.json").write_text(json.dumps({**info, "pid": os.getpid()}))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    Scripted.answering = True
    yield runtime, info["url"]
    httpd.shutdown()
    httpd.server_close()


def test_a_server_slow_once_keeps_its_last_answer_and_a_gone_one_loses_it(server) -> None:
    runtime, url = server
    resolver = JupyterResolver(background=False)
    argv = ["python", "-m", "ipykernel_launcher", "-f", str(runtime / f"kernel-{KERNEL}.json")]
    first = resolver.resolve(argv)
    assert first is not None and first.notebook_path == "work/eda.ipynb" and first.server_url == url
    assert first.actions == ("shutdown", "restart")
    Scripted.answering = False  # the next refresh gets no answer
    resolver.forget()
    kept = resolver.resolve(argv)
    assert kept == first
    (runtime / "jpserver-1.json").unlink()  # the server has gone
    resolver.forget()
    gone = resolver.resolve(argv)
    assert (
        gone is not None and gone.server_url is None and gone.actions == () and gone.why_unknown == NO_SERVER
    )
