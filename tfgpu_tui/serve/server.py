"""The web server behind `tfgpu-tui serve`, on aiohttp, for a dashboard that can see processes and logs.

Every request passes the guard first (guard.py: token, Host, Origin). Each browser tab gets a session
(session.py): a dashboard process run by Textual's web driver. The page is page/app_index.html; the
terminal in it is textual-serve's browser client (its script, styles and font, served from its installed
package under /static/).

- **Sessions**: at most `max_sessions` at once; a session ends with its websocket, and its process, its
  process group and every process it started end with it. Browser messages are at most 64 KiB, sizes are
  bounded, anything malformed is ignored.
- **Nothing leaves the machine**: the page uses only what this server serves, the font included.
- **Downloads** (the Environment report) are sent once each, as attachments, never rendered on this origin.
- **No secret in a log**: the URL with the token is printed once the socket is bound; access lines carry the
  path without its query string, and errors are one line, without tracebacks.

The command line (`commands/serve.py`) imports this module; this module imports nothing of it.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import signal
import socket
import string
import sys
from collections.abc import Awaitable, Callable, Sequence
from importlib.resources import files
from pathlib import Path

from aiohttp import WSMsgType, web
from aiohttp.abc import AbstractAccessLogger

from tfgpu_tui.serve.guard import Credentials, Guard, Token
from tfgpu_tui.serve.session import Session
from tfgpu_tui.text_clean import clean_line

log = logging.getLogger("tfgpu-tui.serve")
PAGE_FOLDER = Path(__file__).resolve().parent / "page"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
MAX_MESSAGE_BYTES = 64 * 1024
MAX_COLUMNS, MAX_ROWS = 500, 200


def client_files() -> Path:
    """textual-serve's browser client (js/textual.js, css/xterm.css, fonts/), from its installed package."""
    return Path(str(files("textual_serve").joinpath("static")))


class AccessLog(AbstractAccessLogger):
    """One line per request: method, path, status and time; never the query string (it can hold the token)
    nor headers (the cookie, Authorization, a Referer with a query)."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info("%s %s %s %.3fs", request.method, request.path, response.status, time)


class DashboardServer:
    """The web server: the guard in front of the page, its static files, downloads and sessions."""

    def __init__(
        self,
        command: Sequence[str],
        host: str,
        port: int,
        public_url: str | None = None,
        token: Token | None = None,
        max_sessions: int = 3,
        note: str = "",
    ) -> None:
        """`note`: said at the end of each start-up line (the demo's SIMULATED mark)."""
        self.command = list(command)
        self.note = note
        self.host = host
        self.port = port
        self.public_url = public_url
        self.guard = Guard(token, host, port, public_url)
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

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every request passes the guard (guard.py) first."""
        credentials = Credentials(
            cookie=request.cookies.get(self.guard.cookie_name),
            authorization=request.headers.get("Authorization", ""),
            query_token=request.query.get("token"),
        )
        refusal = self.guard.refusal(
            request.host, request.path == "/ws", credentials, request.headers.get("Origin"), request.scheme
        )
        if refusal is not None:
            status, text = refusal
            return web.Response(status=status, text=text)
        return await handler(request)

    # ----- handlers -----
    async def handle_index(self, request: web.Request) -> web.Response:
        """With `?token=`: set the cookie and redirect to the bare page (the token leaves the address bar).
        Otherwise the page, pointing the browser back at the address it used (unless a public URL is set)."""
        if "token" in request.query:
            response = web.Response(status=302, headers={"Location": "/"})
            response.set_cookie(
                self.guard.cookie_name,
                self.guard.cookie_value,
                httponly=True,
                samesite="Strict",
                path="/",
                secure=request.secure or (self.guard.public_origin or "").startswith("https:"),
            )
            return response
        origin = self.guard.public_origin or f"{request.scheme}://{request.host}"
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
        host = socket.gethostname() if self.guard.hosts.wildcard else self.host
        host = f"[{host}]" if ":" in host else host
        base = (self.public_url or f"http://{host}:{self.port}").rstrip("/")
        token = self.guard.token
        if token.generated:
            print(f"tfgpu-tui: open {base}/?token={token.value}{self.note}", flush=True)
        else:
            print(f"tfgpu-tui: open {base}/?token=<the token from {token.source}>{self.note}", flush=True)
        print(
            f"tfgpu-tui: at most {self.max_sessions} sessions; Ctrl+C stops the server{self.note}", flush=True
        )


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
