"""Jupyter kernels: the kernel id from a command line, and its notebook from the local server's sessions.

A kernel runs as ``python -m ipykernel_launcher -f <runtime dir>/kernel-<id>.json``. Each Jupyter server
writes ``jpserver-<pid>.json`` (classic Notebook: ``nbserver-<pid>.json``) into the same runtime directory,
with its URL and token; ``GET {url}api/sessions`` maps kernel ids to notebook paths. Only loopback servers
are asked, with a short timeout, and answers are cached.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tfgpu_tui.gpu.model import JupyterKernel
from tfgpu_tui.gpu.refresh import Periodic

KERNEL_FILE = re.compile(r"kernel-([0-9A-Za-z-]+)\.json$")
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "ip6-localhost"}
REQUEST_TIMEOUT_SECONDS = 0.5
SESSIONS_TTL_SECONDS = 10.0


@dataclass(frozen=True)
class Session:
    """What a Jupyter server says about one kernel."""

    path: str
    execution_state: str | None
    last_activity: str | None


def kernel_connection_file(cmdline: list[str]) -> str | None:
    """The ``-f`` connection file of an ipykernel command line, or None when it is not a kernel."""
    if not any("ipykernel" in part for part in cmdline):
        return None
    for i, part in enumerate(cmdline):
        if part in ("-f", "--f") and i + 1 < len(cmdline):
            return cmdline[i + 1]
        if part.startswith(("-f=", "--f=")):
            return part.split("=", 1)[1]
    return None


def kernel_id_from_file(connection_file: str) -> str | None:
    """The kernel id in ``.../kernel-<id>.json``."""
    match = KERNEL_FILE.search(connection_file)
    return match.group(1) if match else None


def default_runtime_dirs() -> list[Path]:
    """Where Jupyter servers of this user write their runtime files."""
    found = [Path(os.environ["JUPYTER_RUNTIME_DIR"])] if os.environ.get("JUPYTER_RUNTIME_DIR") else []
    data = os.environ.get("JUPYTER_DATA_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "jupyter"
    )
    return [*found, Path(data) / "runtime"]


def server_files(runtime_dir: Path) -> list[Path]:
    """The Jupyter server runtime files in a directory (newest first)."""
    try:
        files = [*runtime_dir.glob("jpserver-*.json"), *runtime_dir.glob("nbserver-*.json")]
    except OSError:
        return []
    return sorted(files, key=lambda p: p.stat().st_mtime if p.exists() else 0, reverse=True)


def fetch_sessions(server_file: Path, timeout: float = REQUEST_TIMEOUT_SECONDS) -> dict[str, Session]:
    """kernel id -> Session from the server described by ``server_file``; {} on any failure."""
    try:
        info = json.loads(server_file.read_text())
    except (OSError, ValueError):
        return {}
    url = info.get("url") or ""
    if not url and info.get("port"):
        url = f"http://127.0.0.1:{info['port']}{info.get('base_url', '/')}"
    if urlsplit(url).hostname not in LOOPBACK_HOSTS:
        url = f"http://127.0.0.1:{info.get('port')}{info.get('base_url', '/')}" if info.get("port") else ""
    if not url:
        return {}
    if not url.endswith("/"):
        url += "/"
    request = urllib.request.Request(url + "api/sessions")
    if info.get("token"):
        request.add_header("Authorization", f"token {info['token']}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    try:
        with opener.open(request, timeout=timeout) as response:
            sessions = json.loads(response.read())
    except (OSError, ValueError):
        return {}
    found: dict[str, Session] = {}
    for session in sessions if isinstance(sessions, list) else []:
        kernel = session.get("kernel") or {}
        if kernel.get("id"):
            found[kernel["id"]] = Session(
                session.get("path") or session.get("name") or "",
                kernel.get("execution_state"),
                kernel.get("last_activity"),
            )
    return found


class JupyterResolver:
    """Turns kernel command lines into JupyterKernel values, asking local servers in the background."""

    def __init__(self, background: bool = True, timeout: float = REQUEST_TIMEOUT_SECONDS) -> None:
        self._background = background
        self._timeout = timeout
        self._dirs: dict[str, Periodic[dict[str, Session] | None]] = {}

    def _sessions_for(self, runtime_dir: str) -> dict[str, Session] | None:
        """Sessions of every server in ``runtime_dir`` (the kernel's connection-file folder) and the usual
        runtime folders; None when there is no readable server file."""
        folders = dict.fromkeys([Path(runtime_dir), *default_runtime_dirs()])
        files = [file for folder in folders for file in server_files(folder)]
        if not files:
            return None
        merged: dict[str, Session] = {}
        for server_file in files:
            merged.update(fetch_sessions(server_file, self._timeout))
        return merged

    def resolve(self, cmdline: list[str]) -> JupyterKernel | None:
        """The kernel this command line runs, with its notebook when a local server says so."""
        connection_file = kernel_connection_file(cmdline)
        if connection_file is None:
            return None
        kernel_id = kernel_id_from_file(connection_file) or os.path.basename(connection_file)
        runtime_dir = os.path.dirname(connection_file) or "."
        periodic = self._dirs.get(runtime_dir)
        if periodic is None:
            periodic = Periodic(
                lambda: self._sessions_for(runtime_dir), SESSIONS_TTL_SECONDS, {}, background=self._background
            )
            self._dirs[runtime_dir] = periodic
        sessions = periodic.get()
        if sessions is None:
            why = (
                "no Jupyter server file readable in its runtime directory "
                "(another user's server, or started with a different JUPYTER_RUNTIME_DIR)"
            )
            return JupyterKernel(kernel_id, why_unknown=why)
        session = sessions.get(kernel_id)
        if session is None:
            return JupyterKernel(kernel_id, why_unknown="no local Jupyter server lists this kernel")
        return JupyterKernel(kernel_id, session.path, "", session.execution_state, session.last_activity)
