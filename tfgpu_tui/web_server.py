"""The web server behind `tfgpu-tui serve`, on aiohttp, for a dashboard that can see processes and logs.

Each browser tab gets a session (web_session.py): a dashboard process run by Textual's web driver. The page
is web_page/app_index.html; the terminal in it is textual-serve's browser client (its script, styles and
font, served from its installed package under /static/). The server's guards:

- **A secret token**, as Jupyter does: `/?token=...` (or an `Authorization: token ...` header) is exchanged
  for an HttpOnly, SameSite=Strict cookie; every path answers 401 (the websocket 403) without one of them.
  Comparisons are constant-time.
- **Host** must name this server: a loopback name on a loopback bind, the bound address, an IP address of
  the machine (wildcard bind), or the `--public-url` host. A page on another site cannot reach the dashboard
  through DNS rebinding.
- **Origin**: the websocket needs an `Origin` equal to the page's own origin (scheme, host and port); a
  client that sends none is refused too (loopback is no boundary between local users).
- **Sessions**: at most `max_sessions` at once; a session ends with its websocket, and its process, its
  process group and every process it started end with it. Browser messages are at most 64 KiB, sizes are
  bounded, anything malformed is ignored.
- **Nothing leaves the machine**: the page uses only what this server serves, the font included.
- **Downloads** (the Environment report) are sent once each, as attachments, never rendered on this origin.
- **No secret in a log**: the URL with the token is printed once the socket is bound; access lines carry the
  path without its query string, and logging shows no tracebacks with local variables.

The command line (`commands/serve.py`) imports this module; this module imports nothing of it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import ipaddress
import json
import logging
import os
import signal
import socket
import string
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web
from aiohttp.abc import AbstractAccessLogger

from tfgpu_tui.text_clean import clean_line
from tfgpu_tui.web_session import TOKEN_ENV_VAR, Session

__all__ = ["TOKEN_ENV_VAR", "DashboardServer", "Token", "is_loopback"]

log = logging.getLogger("tfgpu-tui.serve")
PAGE_FOLDER = Path(__file__).resolve().parent / "web_page"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
MAX_MESSAGE_BYTES = 64 * 1024
MAX_COLUMNS, MAX_ROWS = 500, 200
COOKIE_PURPOSE = b"tfgpu-tui session cookie"
LOGIN_HELP = (
    "tfgpu-tui: this dashboard needs its access token. Open the URL that `tfgpu-tui serve` printed when it "
    "started (it ends in ?token=...).\n"
)


def client_files() -> Path:
    """textual-serve's browser client (js/textual.js, css/xterm.css, fonts/), from its installed package."""
    return Path(str(files("textual_serve").joinpath("static")))


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


class DashboardServer:
    """The web server: the checks above in front of the page, its static files, downloads and sessions."""

    def __init__(
        self,
        command: Sequence[str],
        host: str,
        port: int,
        public_url: str | None = None,
        token: Token | None = None,
        max_sessions: int = 3,
    ) -> None:
        self.command = list(command)
        self.host = host
        self.port = port
        self.public_url = public_url
        self._public_origin = _public_origin(public_url)
        self.hosts = HostPolicy(host, public_url)
        self.token = token or Token(os.urandom(32).hex(), "generated")
        self.cookie_name = f"tfgpu-tui-{port}"
        self._cookie_value = hmac.new(self.token.value.encode(), COOKIE_PURPOSE, hashlib.sha256).hexdigest()
        self.max_sessions = max_sessions
        self.sessions: set[Session] = set()
        self.page = string.Template((PAGE_FOLDER / "app_index.html").read_text(encoding="utf-8"))

    def web_app(self) -> web.Application:
        """The aiohttp application: every route behind the guard."""
        app = web.Application(middlewares=[self._guard])
        app.add_routes(
            [
                web.get("/", self.handle_index),
                web.get("/ws", self.handle_websocket),
                web.get("/download/{key}", self.handle_download),
                web.static("/static", client_files()),
            ]
        )
        app.on_shutdown.append(self.on_shutdown)
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
    async def handle_index(self, request: web.Request) -> web.Response:
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
        origin = self._public_origin or f"{request.scheme}://{request.host}"
        websocket_url = ("wss:" if origin.startswith("https:") else "ws:") + origin.partition(":")[2] + "/ws"
        page = self.page.substitute(
            title="tfgpu-tui",
            static_url="/static/",
            websocket_url=html.escape(websocket_url),
            font_size=min(max(_whole(request.query.get("fontsize"), 16), 6), 64),
        )
        return web.Response(text=page, content_type="text/html")

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One dashboard process per websocket, while fewer than `max_sessions` are open."""
        if len(self.sessions) >= self.max_sessions:
            raise web.HTTPServiceUnavailable(
                text=f"tfgpu-tui: {self.max_sessions} sessions are open already (--max-sessions); "
                "close one and reload.\n"
            )
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE_BYTES)
        session = Session(self.command, websocket)
        self.sessions.add(session)
        try:
            await websocket.prepare(request)
            query = request.query
            await session.start(
                *terminal_size(_whole(query.get("width"), 80), _whole(query.get("height"), 24))
            )
            await relay_browser(websocket, session)
        except asyncio.CancelledError:
            await websocket.close()
            raise
        except Exception as error:  # a session that cannot start must not take the server down
            log.error("session failed: %s: %s", type(error).__name__, clean_line(str(error)))
        finally:
            await session.stop()
            self.sessions.discard(session)
        return websocket

    async def handle_download(self, request: web.Request) -> web.StreamResponse:
        """A file a session offered (the Environment report): sent once, always as an attachment."""
        key = request.match_info["key"]
        for session in list(self.sessions):
            if (download := session.take_download(key)) is not None:
                break
        else:
            raise web.HTTPNotFound(
                text="tfgpu-tui: no such download (each is sent once, while its tab is open).\n"
            )
        response = web.StreamResponse(
            headers={
                "Content-Type": download.content_type,
                "Content-Disposition": f"attachment; filename={download.file_name}",
                "X-Content-Type-Options": "nosniff",
            }
        )
        await response.prepare(request)
        async for chunk in session.download_chunks(key, download):
            await response.write(chunk)
        await response.write_eof()
        return response

    async def on_shutdown(self, app: web.Application) -> None:
        """End every session still open."""
        await asyncio.gather(*(session.stop() for session in list(self.sessions)), return_exceptions=True)

    # ----- serving -----
    def serve(self) -> None:
        """Bind, then say where to point the browser, and serve until SIGINT or SIGTERM. An address that
        cannot be bound raises OSError before anything is printed."""
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("tfgpu-tui serve: %(message)s"))
        root = logging.getLogger()
        root.handlers[:] = [handler]
        root.setLevel(logging.INFO)
        asyncio.run(self._serve_until_stopped())

    async def _serve_until_stopped(self) -> None:
        runner = web.AppRunner(self.web_app(), handle_signals=False, access_log_class=AccessLog)
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
        base = (self.public_url or f"http://{host}:{self.port}").rstrip("/")
        if self.token.generated:
            print(f"tfgpu-tui: open {base}/?token={self.token.value}", flush=True)
        else:
            print(f"tfgpu-tui: open {base}/?token=<the token from {self.token.source}>", flush=True)
        print(f"tfgpu-tui: at most {self.max_sessions} sessions; Ctrl+C stops the server", flush=True)


def _whole(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def terminal_size(columns: int, rows: int) -> tuple[int, int]:
    """A size the browser asked for, within 1..MAX_COLUMNS x 1..MAX_ROWS."""
    return min(max(columns, 1), MAX_COLUMNS), min(max(rows, 1), MAX_ROWS)


async def relay_browser(websocket: web.WebSocketResponse, session: Session) -> None:
    """The browser's messages (the JSON lists textual-serve's page script sends) to the dashboard; anything
    malformed is ignored."""
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
            await session.send_keys(data)
        elif kind == "resize" and isinstance(data, dict):
            width, height = data.get("width"), data.get("height")
            if isinstance(width, int) and isinstance(height, int):
                columns, rows = terminal_size(width, height)
                await session.send_meta({"type": "resize", "width": columns, "height": rows})
        elif kind == "ping" and isinstance(data, str) and len(data) <= 64:
            await websocket.send_json(["pong", data])
        elif kind in ("blur", "focus"):
            await session.send_meta({"type": kind})
