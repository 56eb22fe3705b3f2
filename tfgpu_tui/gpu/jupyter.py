"""Jupyter kernels: their notebook, state and last activity from the local server.

Kernels are recognised from their command line alone (kernel_argv.py); this module loads only once one is
seen. A Jupyter server (jupyter_server 2.x / JupyterLab / Notebook 7 write ``jpserver-<pid>.json``, Notebook 6
``nbserver-<pid>.json``) records its URL, ``base_url`` and token in the runtime directory; ``GET
{url}api/sessions`` and ``api/kernels`` map kernel ids to notebook paths, execution state and last activity.
Only loopback servers are asked, with a short timeout; answers are cached for a few seconds. The first
lookup is made inline (bounded), later ones in the background unless ``background`` is False.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tfgpu_tui.gpu.kernel_argv import kernel_connection_file, kernel_from_cmdline
from tfgpu_tui.gpu.model import JupyterKernel
from tfgpu_tui.text_clean import clean_line

LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "ip6-localhost", "0.0.0.0", ""}  # noqa: S104 - we only ask
REQUEST_TIMEOUT_SECONDS = 0.5
LOOKUP_BUDGET_SECONDS = 1.0  # all servers together, for one inline lookup
# A one-shot command (`gpus`) asks once and answers once: it waits longer for a server that a loaded machine
# slows down (a fast server answers in milliseconds either way).
ONE_SHOT_REQUEST_TIMEOUT_SECONDS = 2.0
ONE_SHOT_BUDGET_SECONDS = 4.0
SESSIONS_TTL_SECONDS = 5.0
KEEP_ANSWER_SECONDS = 30.0  # a server's last answer, kept while its runtime file stays but it does not answer
NO_SERVER = "no Jupyter server found (no jpserver-*.json or nbserver-*.json runtime file of this user)"
TOKEN_UNREADABLE = "token not readable: the server's runtime file belongs to another user"


@dataclass(frozen=True)
class Session:
    """What a Jupyter server says about one kernel."""

    path: str | None
    execution_state: str | None
    last_activity: str | None
    server: str = ""
    authenticated: bool = False  # asked with a token from the server's runtime file


@dataclass
class Lookup:
    """One round of asking every server found: kernel id -> Session, and why nothing was learnt."""

    sessions: dict[str, Session] = field(default_factory=dict)
    servers_answered: int = 0
    why: str = NO_SERVER


def default_runtime_dirs() -> list[Path]:
    """Where this user's Jupyter servers write their runtime files (as jupyter_core decides, plus the old
    ``$XDG_RUNTIME_DIR/jupyter``)."""
    found = [Path(os.environ["JUPYTER_RUNTIME_DIR"])] if os.environ.get("JUPYTER_RUNTIME_DIR") else []
    data = os.environ.get("JUPYTER_DATA_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "jupyter"
    )
    found.append(Path(data) / "runtime")
    if os.environ.get("XDG_RUNTIME_DIR"):
        found.append(Path(os.environ["XDG_RUNTIME_DIR"]) / "jupyter")
    return found


def server_files(runtime_dir: Path) -> list[Path]:
    """The Jupyter server runtime files in a directory (newest first)."""
    try:
        files = [*runtime_dir.glob("jpserver-*.json"), *runtime_dir.glob("nbserver-*.json")]
    except OSError:
        return []

    def mtime(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(files, key=mtime, reverse=True)


def server_alive(info: dict) -> bool:
    """False for a runtime file left behind by a server that has exited (pid gone)."""
    pid = info.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return True
    return os.path.exists(f"/proc/{pid}") if os.path.isdir("/proc") else True


def server_base_url(info: dict) -> str | None:
    """The loopback URL (ending in ``/``) to ask a server at; None when it cannot be asked (unix socket)."""
    if info.get("sock"):
        return None
    url = str(info.get("url") or "")
    base = str(info.get("base_url") or "/")
    if not base.startswith("/"):
        base = "/" + base
    parts = urlsplit(url) if url else None
    scheme = "https" if info.get("secure") else (parts.scheme if parts and parts.scheme else "http")
    if parts is None or parts.hostname not in LOOPBACK_HOSTS or parts.hostname in ("0.0.0.0", ""):  # noqa: S104
        port = info.get("port") or (parts.port if parts else None)
        if not port:
            return None
        url = f"{scheme}://127.0.0.1:{port}{base}"
    url = url.split("?", 1)[0]
    return url if url.endswith("/") else url + "/"


def request_json(url: str, token: str, timeout: float, method: str = "GET") -> object:
    """One request to a loopback Jupyter server (never via a proxy), the token in a header; the answer's JSON,
    or None for an empty body. Raises urllib.error.HTTPError, OSError or ValueError."""
    import ssl  # the HTTP client loads only when a Jupyter server is asked (start-up time and memory)
    import urllib.request

    request = urllib.request.Request(url, headers={"Accept": "application/json"}, method=method)
    if token:
        request.add_header("Authorization", f"token {token}")
    handlers: list = [urllib.request.ProxyHandler({})]  # never via a proxy
    if url.startswith("https://"):  # a loopback server's self-signed certificate
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        handlers.append(urllib.request.HTTPSHandler(context=context))
    with urllib.request.build_opener(*handlers).open(request, timeout=timeout) as response:
        body = response.read(4 << 20)
    return json.loads(body) if body.strip() else None


def ask_server(info: dict, timeout: float = REQUEST_TIMEOUT_SECONDS) -> tuple[dict[str, Session], str]:
    """kernel id -> Session from one server (its runtime file's contents), and '' or why it failed."""
    import urllib.error

    url = server_base_url(info)
    if url is None:
        return {}, "the server listens on a unix socket"
    token = str(info.get("token") or "")
    found: dict[str, Session] = {}
    try:
        sessions = request_json(url + "api/sessions", token, timeout)
        try:  # kernels started without a notebook session (state and last activity only)
            kernels = request_json(url + "api/kernels", token, timeout)
        except (OSError, ValueError):
            kernels = []
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            return {}, f"the Jupyter server at {url} refused the token from its runtime file"
        return {}, f"the Jupyter server at {url} answered HTTP {error.code}"
    except (OSError, ValueError) as error:
        return {}, f"the Jupyter server at {url} did not answer ({getattr(error, 'reason', error)})"
    for kernel in kernels if isinstance(kernels, list) else []:
        if isinstance(kernel, dict) and kernel.get("id"):
            found[kernel["id"]] = Session(
                None, kernel.get("execution_state"), kernel.get("last_activity"), url, bool(token)
            )
    for session in sessions if isinstance(sessions, list) else []:
        kernel = session.get("kernel") if isinstance(session, dict) else None
        if isinstance(kernel, dict) and kernel.get("id"):
            path = session.get("path") or (session.get("notebook") or {}).get("path") or session.get("name")
            found[kernel["id"]] = Session(
                clean_line(str(path)) if path else None,
                kernel.get("execution_state"),
                kernel.get("last_activity"),
                url,
                bool(token),
            )
    return found, ""


def fetch_sessions(server_file: Path, timeout: float = REQUEST_TIMEOUT_SECONDS) -> dict[str, Session]:
    """kernel id -> Session from the server described by ``server_file``; {} on any failure."""
    try:
        info = json.loads(server_file.read_text())
    except (OSError, ValueError):
        return {}
    return ask_server(info, timeout)[0] if isinstance(info, dict) else {}


def lookup(
    folders: list[Path],
    budget: float = LOOKUP_BUDGET_SECONDS,
    request_timeout: float = REQUEST_TIMEOUT_SECONDS,
) -> Lookup:
    """Ask every live server whose runtime file is in ``folders``, within ``budget`` seconds in all and
    ``request_timeout`` a request."""
    deadline = time.monotonic() + budget
    result = Lookup()
    files = [file for folder in dict.fromkeys(folders) for file in server_files(folder)]
    if not files:
        return result
    reasons: list[str] = []
    for server_file in files:
        try:
            info = json.loads(server_file.read_text())
        except PermissionError:
            reasons.append(TOKEN_UNREADABLE)
            continue
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict) or not server_alive(info):
            continue
        left = deadline - time.monotonic()
        if left <= 0.05:
            reasons.append("the Jupyter servers did not all answer in time")
            break
        sessions, why = ask_server(info, min(request_timeout, left))
        if why:
            reasons.append(why)
            continue
        result.servers_answered += 1
        for kernel_id, session in sessions.items():  # a notebook session beats a bare kernel entry
            if kernel_id not in result.sessions or session.path:
                result.sessions[kernel_id] = session
    if result.servers_answered:
        result.why = "no running Jupyter server of this user lists this kernel (started by another tool?)"
    elif reasons:
        result.why = reasons[0]
    return result


class JupyterResolver:
    """Adds the server's view (notebook, state, last activity) to kernels recognised from argv.

    The first lookup runs inline (bounded by LOOKUP_BUDGET_SECONDS); later ones every SESSIONS_TTL_SECONDS,
    in a daemon thread with ``background`` (the app) or inline without (one-shot commands). A kernel the
    cached answer does not know triggers an early refresh (a notebook opened since).
    """

    def __init__(self, background: bool = True, budget: float | None = None) -> None:
        """`background`: later lookups in a thread (the app); without, every lookup is inline and waits
        longer for a slow server (one-shot commands)."""
        self._background = background
        self._budget = budget or (LOOKUP_BUDGET_SECONDS if background else ONE_SHOT_BUDGET_SECONDS)
        self._request_timeout = REQUEST_TIMEOUT_SECONDS if background else ONE_SHOT_REQUEST_TIMEOUT_SECONDS
        self._lock = threading.Lock()
        self._result: Lookup | None = None
        self._stamp = 0.0
        self._running = False
        self._extra_dirs: set[Path] = set()
        self._asked_again: set[str] = set()
        self._answered_at = 0.0  # when a server last answered

    def _refresh(self) -> None:
        with self._lock:
            folders = [*sorted(self._extra_dirs), *default_runtime_dirs()]
        try:
            result = lookup(folders, self._budget, self._request_timeout)
        except Exception:  # noqa: BLE001 - a lookup must never break sampling
            result = Lookup(why="the Jupyter server lookup failed")
        now = time.monotonic()
        with self._lock:
            previous = self._result
            if result.servers_answered:
                self._answered_at = now
            elif (
                result.why != NO_SERVER
                and previous is not None
                and previous.servers_answered
                and now - self._answered_at < KEEP_ANSWER_SECONDS
            ):  # a server still there but slow this once (a loaded machine): its last answer stands a while
                result = previous
            self._result, self._stamp, self._running = result, now, False

    def _current(self, kernel_id: str, runtime_dir: Path | None) -> Lookup | None:
        """The cached lookup, refreshed inline the first time and when stale or missing this kernel."""
        with self._lock:
            if runtime_dir is not None and runtime_dir not in self._extra_dirs:
                self._extra_dirs.add(runtime_dir)
                self._stamp = 0.0
            age = time.monotonic() - self._stamp
            # a kernel the last answer did not list: ask once more soon (a notebook opened since), only once
            unknown = self._result is not None and kernel_id not in self._result.sessions
            early = unknown and age >= 1.0 and kernel_id not in self._asked_again
            if early:
                self._asked_again.add(kernel_id)
            due = self._result is None or age >= SESSIONS_TTL_SECONDS or early
            inline = self._result is None or not self._background
            if due and not self._running:
                self._running = True
            else:
                due = False
        if due and inline:
            self._refresh()
        elif due:
            threading.Thread(target=self._refresh, name="tfgpu-jupyter", daemon=True).start()
        with self._lock:
            return self._result

    def resolve(self, cmdline: list[str]) -> JupyterKernel | None:
        """The kernel this command line runs, with its notebook when a local server says so."""
        kernel = kernel_from_cmdline(cmdline)
        if kernel is None or kernel.kernel_id == "?":
            return kernel
        connection_file = kernel_connection_file(cmdline) or ""
        runtime_dir = Path(os.path.dirname(connection_file)) if os.path.isabs(connection_file) else None
        result = self._current(kernel.kernel_id, runtime_dir)
        if result is None:
            return kernel
        session = result.sessions.get(kernel.kernel_id)
        if session is None:
            return JupyterKernel(kernel.kernel_id, why_unknown=result.why)
        why = "" if session.path else "the server lists the kernel but no notebook session for it"
        return JupyterKernel(
            kernel.kernel_id,
            session.path,
            why,
            session.execution_state,
            session.last_activity,
            session.server if session.authenticated else None,
        )

    def forget(self) -> None:
        """Make the next resolve ask the servers again."""
        with contextlib.suppress(Exception), self._lock:
            self._stamp = 0.0
