"""A real jupyter_server for tests (on the host, or inside a fakenvml container): port 0, a random token, a
runtime folder of its own; notebook sessions opened through its REST API. No pytest in here, so that a script
run inside a container can use it too. Every wait is bounded (generous: the machine may be loaded)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

EMPTY_NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
START_SECONDS = 120.0


def wait(condition, timeout: float, what: str, step: float = 0.05):  # type: ignore[no-untyped-def]
    """Poll `condition` every `step` s until it returns something true (returned); TimeoutError naming
    `what` after `timeout` s (a hang guard, not a time limit under test)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout:g} s: {what}")
        time.sleep(step)


class JupyterServer:
    """Starts on construction (`runtime` given: its runtime files go there, else under `env`'s HOME); `url`
    ends in its base URL."""

    def __init__(
        self, base: Path, env: dict[str, str] | None = None, runtime: Path | None = None, base_url: str = "/"
    ) -> None:
        self.base = base
        self.root = base / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        self.token = secrets.token_hex(16)
        self.sessions: list[dict] = []  # as the server answered each open_notebook
        self.env = {**(env or os.environ), "JUPYTER_PLATFORM_DIRS": "1"}
        if runtime is not None:
            self.env["JUPYTER_RUNTIME_DIR"] = str(runtime)
        self.env.setdefault("JUPYTER_CONFIG_DIR", str(base / "config"))
        self.runtime = runtime or Path(self.env["HOME"]) / ".local/share/jupyter/runtime"
        self.log = open(base / "server.log", "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "jupyter_server", "--ServerApp.port=0", "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.token={self.token}", f"--ServerApp.root_dir={self.root}",
                f"--ServerApp.base_url={base_url}", "--ServerApp.open_browser=False", "--allow-root",
            ],
            env=self.env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            info = wait(self._runtime_info, START_SECONDS, "the server's jpserver-*.json, written whole")
            self.url = f"http://127.0.0.1:{info['port']}{info['base_url']}"
            wait(self._answers, START_SECONDS, "the Jupyter server answers")
        except BaseException:
            self.stop()
            raise

    def _runtime_info(self) -> dict | None:
        """The server's runtime file once it holds whole JSON (the server creates it before writing it)."""
        if self.process.poll() is not None:
            raise RuntimeError(f"the Jupyter server exited ({self.process.returncode})")
        path = next(self.runtime.glob(f"jpserver-{self.process.pid}.json"), None)
        try:
            info = json.loads(path.read_text()) if path else None
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) and "port" in info else None

    def _answers(self) -> bool:
        try:
            self.api("GET", "api/status")
        except OSError:
            return False
        return True

    def api(self, method: str, path: str, body: object | None = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        request.add_header("Content-Type", "application/json")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None

    def listed_kernels(self) -> list[str]:
        kernels = self.api("GET", "api/kernels")
        return [k["id"] for k in kernels] if isinstance(kernels, list) else []

    def open_notebook(self, path: str, kernel: str = "python3") -> str:
        """A notebook session (the notebook written empty); its kernel's id once its process runs."""
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(json.dumps(EMPTY_NOTEBOOK))
        session = self.api(
            "POST", "api/sessions", {"path": path, "type": "notebook", "kernel": {"name": kernel}}
        )
        assert isinstance(session, dict)
        self.sessions.append(session)
        kernel_id = session["kernel"]["id"]
        wait(lambda: self.kernel_pids(kernel_id), START_SECONDS, f"kernel {kernel_id}'s process")
        return kernel_id

    def kernel_pids(self, kernel_id: str) -> list[int]:
        """The server's live descendants whose command line names the kernel's connection file."""
        found = []
        for child in psutil.Process(self.process.pid).children(recursive=True):
            try:
                if child.status() != psutil.STATUS_ZOMBIE and any(
                    kernel_id in part for part in child.cmdline()
                ):
                    found.append(child.pid)
            except psutil.Error:
                continue
        return found

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
