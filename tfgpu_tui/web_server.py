"""The web server behind `tfgpu-tui serve`: textual-serve's Server, hardened for a dashboard that can see
processes and logs.

- **A secret token**, as Jupyter does: `/?token=...` (or an `Authorization: token ...` header) is exchanged
  for an HttpOnly, SameSite=Strict cookie; every path answers 401 (the websocket 403) without one of them.
  Comparisons are constant-time.
- **Host** must name this server: a loopback name on a loopback bind, the bound address, an IP address of
  the machine (wildcard bind), or the `--public-url` host. A page on another site cannot reach the dashboard
  through DNS rebinding.
- **Origin**: the websocket needs an `Origin` equal to the page's own origin (scheme, host and port); a
  client that sends none is refused too (loopback is no boundary between local users).
- **Sessions**: at most `max_sessions` at once; a session ends with its websocket, and its process, its
  process group and every process it started end with it.
- **Nothing leaves the machine**: the page (web_page/app_index.html) uses only what this server serves, the
  font included (textual-serve's stock page loads it from Google Fonts).
- **No secret in a log**: the URL with the token is printed once the socket is bound; access lines carry the
  path without its query string, and logging shows no tracebacks with local variables.

The command line (`commands/serve.py`) imports this module; this module imports nothing of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import shlex
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil
from aiohttp import WSMsgType, web
from aiohttp.abc import AbstractAccessLogger
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

log = logging.getLogger("tfgpu-tui.serve")
TOKEN_ENV_VAR = "TFGPU_TUI_TOKEN"
PAGE_TEMPLATES = Path(__file__).resolve().parent / "web_page"  # app_index.html: no third-party origin
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
QUIT_GRACE_SECONDS = 3.0
TERM_GRACE_SECONDS = 2.0
MAX_MESSAGE_BYTES = 64 * 1024
MAX_COLUMNS, MAX_ROWS = 500, 200
COOKIE_PURPOSE = b"tfgpu-tui session cookie"
LOGIN_HELP = (
    "tfgpu-tui: this dashboard needs its access token. Open the URL that `tfgpu-tui serve` printed when it "
    "started (it ends in ?token=...).\n"
)


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback IP addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Token:
    """The secret a visitor must present, and where it came from (`generated`, a file, the environment)."""

    value: str
    source: str

    @property
    def generated(self) -> bool:
        return self.source == "generated"


class AccessLog(AbstractAccessLogger):
    """One line per request: method, path, status and time; never the query string (it can hold the token)
    nor headers (the cookie, Authorization, a Referer with a query)."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info("%s %s %s %.3fs", request.method, request.path, response.status, time)


def _hostname(host_header: str) -> str | None:
    """The host part of a Host header, lower case, without brackets; None when it cannot be parsed."""
    try:
        parts = urlsplit(f"//{host_header}")
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError:
        return None
    return (parts.hostname or "").lower() or None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostPolicy:
    """Which Host headers name this server (the port is not checked: SSH tunnels and proxies change it)."""

    def __init__(self, bind_host: str, public_url: str | None) -> None:
        self.bind = bind_host.strip("[]").lower()
        self.loopback = is_loopback(self.bind)
        self.wildcard = self.bind in ("", "0.0.0.0", "::")
        self.public_name = (urlsplit(public_url).hostname or "").lower() if public_url else None
        self.machine_names = (
            {socket.gethostname().lower(), socket.getfqdn().lower()} if self.wildcard else set()
        )

    def allows(self, host_header: str) -> bool:
        name = _hostname(host_header)
        if name is None:
            return False
        if name == self.public_name or name == self.bind:
            return True
        if self.loopback:
            return is_loopback(name)
        if self.wildcard:
            return _is_ip(name) or name in self.machine_names
        return False


def origin_is_allowed(origin: str | None, request_origin: str, public_origin: str | None) -> bool:
    """A websocket must come from a page served here: its Origin is this request's own origin (or the public
    URL's). No Origin (a non-browser client) is refused as well."""
    if not origin:
        return False
    origin = origin.lower().rstrip("/")
    return hmac.compare_digest(origin, request_origin.lower()) or (
        public_origin is not None and hmac.compare_digest(origin, public_origin.lower())
    )


def _public_origin(public_url: str | None) -> str | None:
    if not public_url:
        return None
    parts = urlsplit(public_url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class SessionService(AppService):
    """One browser session's dashboard process: started in a new session (process group) without the
    server's token in its environment, and stopped with every process it started."""

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        environment = self._build_environment(width=width, height=height)
        environment.pop(TOKEN_ENV_VAR, None)
        self._process = process = await asyncio.create_subprocess_exec(
            *shlex.split(self.command),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    def descendants(self) -> list[psutil.Process]:
        """Every process the session's process started (children of children included), while it lives."""
        if self._process is None:
            return []
        try:
            return psutil.Process(self._process.pid).children(recursive=True)
        except psutil.Error:
            return []

    async def stop(self) -> None:
        """Ask the dashboard to quit; if it has not within a few seconds, end its process group; then end
        whatever it started (its probe and check children lead process groups of their own)."""
        process = self._process
        started = self.descendants()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(super().stop()), QUIT_GRACE_SECONDS)
        if process is not None and process.returncode is None:
            await _end_group(process)
        end_processes(started + self.descendants())


async def _end_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, SIGKILL it if it is still there after a grace period."""
    for sig, grace in ((signal.SIGTERM, TERM_GRACE_SECONDS), (signal.SIGKILL, TERM_GRACE_SECONDS)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.wait(), grace)
            return


def end_processes(processes: list[psutil.Process]) -> None:
    """SIGKILL each process still running (psutil checks it is the same process, not a reused PID), and
    the group it leads."""
    for process in processes:
        with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
            if process.is_running():
                if os.getpgid(process.pid) == process.pid:
                    os.killpg(process.pid, signal.SIGKILL)
                process.kill()


class DashboardServer(Server):
    """textual-serve's Server with the checks above."""

    def __init__(
        self,
        command: str,
        host: str,
        port: int,
        public_url: str | None = None,
        token: Token | None = None,
        max_sessions: int = 3,
    ) -> None:
        super().__init__(
            command,
            host=host,
            port=port,
            title="tfgpu-tui",
            public_url=public_url,
            templates_path=PAGE_TEMPLATES,
        )
        self._fixed_public_url = public_url
        self._public_origin = _public_origin(public_url)
        self.hosts = HostPolicy(host, public_url)
        self.token = token or Token(os.urandom(32).hex(), "generated")
        self.cookie_name = f"tfgpu-tui-{port}"
        self._cookie_value = hmac.new(self.token.value.encode(), COOKIE_PURPOSE, hashlib.sha256).hexdigest()
        self.max_sessions = max_sessions
        self.sessions: set[object] = set()  # a placeholder while starting, then the SessionService

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    # ----- checks -----
    def _token_matches(self, presented: str | None) -> bool:
        if not presented:
            return False
        return hmac.compare_digest(presented.encode(), self.token.value.encode())

    def authorized(self, request: web.Request) -> bool:
        """A valid cookie, `Authorization: token T` / `Bearer T`, or `?token=T`."""
        cookie = request.cookies.get(self.cookie_name)
        if cookie and hmac.compare_digest(cookie.encode(), self._cookie_value.encode()):
            return True
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() in ("token", "bearer") and self._token_matches(credentials.strip()):
            return True
        return self._token_matches(request.query.get("token"))

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.host
        if not self.hosts.allows(host):
            raise web.HTTPForbidden(
                text=f"tfgpu-tui: {host!r} is not an address of this server (use --public-url for a name).\n"
            )
        if not self.authorized(request):
            if request.path == "/ws":
                raise web.HTTPForbidden(text="tfgpu-tui: websocket without the access token refused.\n")
            raise web.HTTPUnauthorized(text=LOGIN_HELP)
        if request.path == "/ws" and not origin_is_allowed(
            request.headers.get("Origin"), f"{request.scheme}://{host}", self._public_origin
        ):
            raise web.HTTPForbidden(
                text="tfgpu-tui: websocket from another site (or without Origin) refused.\n"
            )
        return await handler(request)

    # ----- handlers -----
    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """With `?token=`: set the cookie and redirect to the bare page (the token leaves the address bar).
        Otherwise the page, pointing the browser back at the address it used (unless a public URL is set)."""
        if "token" in request.query:
            response = web.Response(status=302, headers={"Location": "/"})
            response.set_cookie(
                self.cookie_name,
                self._cookie_value,
                httponly=True,
                samesite="Strict",
                path="/",
                secure=request.secure or (self._public_origin or "").startswith("https:"),
            )
            return response
        if self._fixed_public_url is None:
            self.public_url = f"{request.scheme}://{request.host}"
        return await super().handle_index(request)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One dashboard process per websocket, while fewer than `max_sessions` are open."""
        if len(self.sessions) >= self.max_sessions:
            raise web.HTTPServiceUnavailable(
                text=f"tfgpu-tui: {self.max_sessions} sessions are open already (--max-sessions); "
                "close one and reload.\n"
            )
        slot = object()
        self.sessions.add(slot)
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE_BYTES)
        width = min(max(to_int(request.query.get("width", "80"), 80), 1), MAX_COLUMNS)
        height = min(max(to_int(request.query.get("height", "24"), 24), 1), MAX_ROWS)
        service: SessionService | None = None
        try:
            await websocket.prepare(request)
            service = SessionService(
                self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,  # type: ignore[arg-type]  # returns a bool, which is ignored
                download_manager=self.download_manager,
                debug=self.debug,
            )
            self.sessions.discard(slot)
            self.sessions.add(service)
            await service.start(width, height)
            await self._process_messages(websocket, service)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception:  # a session that cannot start must not take the server down
            log.exception("tfgpu-tui: session failed")
        finally:
            self.sessions.discard(slot)
            if service is not None:
                await service.stop()
                self.sessions.discard(service)
        return websocket

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        """The browser's messages (see textual-serve's page script); anything malformed is ignored."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await app_service.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                width, height = data.get("width"), data.get("height")
                if isinstance(width, int) and isinstance(height, int):
                    await app_service.set_terminal_size(
                        min(max(width, 1), MAX_COLUMNS), min(max(height, 1), MAX_ROWS)
                    )
            elif kind == "ping" and isinstance(data, str) and len(data) <= 64:
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

    # ----- serving -----
    def initialize_logging(self) -> None:
        """Plain lines on stderr (textual-serve's handler shows tracebacks with local variables, which can
        hold the token); access lines come from AccessLog."""
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("tfgpu-tui serve: %(message)s"))
        root = logging.getLogger()
        root.handlers[:] = [handler]
        root.setLevel(logging.DEBUG if self.debug else logging.INFO)

    def serve(self, debug: bool = False) -> None:
        """Bind, then say where to point the browser, and serve until SIGINT or SIGTERM. An address that
        cannot be bound raises OSError before anything is printed."""
        self.debug = debug
        self.initialize_logging()
        asyncio.run(self._serve_until_stopped())

    async def _serve_until_stopped(self) -> None:
        runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log_class=AccessLog)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
            self.announce()
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            await stop.wait()
        finally:
            await runner.cleanup()  # on_shutdown: the open sessions end

    def announce(self) -> None:
        """Say where to point the browser (with the token, unless the user supplied it)."""
        host = socket.gethostname() if self.hosts.wildcard else self.host
        host = f"[{host}]" if ":" in host else host
        base = (self._fixed_public_url or f"http://{host}:{self.port}").rstrip("/")
        if self.token.generated:
            print(f"tfgpu-tui: open {base}/?token={self.token.value}", flush=True)
        else:
            print(f"tfgpu-tui: open {base}/?token=<the token from {self.token.source}>", flush=True)
        print(f"tfgpu-tui: at most {self.max_sessions} sessions; Ctrl+C stops the server", flush=True)

    async def on_startup(self, app: web.Application) -> None:
        """Nothing (textual-serve prints its banner here, before the socket is bound)."""

    async def on_shutdown(self, app: web.Application) -> None:
        """End every session still open."""
        services = [s for s in self.sessions if isinstance(s, SessionService)]
        await asyncio.gather(*(service.stop() for service in services), return_exceptions=True)
