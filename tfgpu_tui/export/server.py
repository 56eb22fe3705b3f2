"""The exporter's HTTP(S) server, on aiohttp as `serve`'s is: ``/metrics`` in Prometheus's text format and
``/`` with a link to it, basic auth and TLS from a web config (web_config.py). It runs its own event loop in
a thread of its own (`start`, `close`), so `export`, the tests and the benchmarks drive it alike.

- **Nobody waits on a slow client**: connections are served by the event loop, and a scrape renders the
  latest state on a worker thread (about 3 ms at 8 GPUs x 64 processes), so the loop keeps accepting and
  reading meanwhile. Rendered on the loop instead, the median round trip was up to twice as long on a
  loaded 2-core machine (7-9 ms against 3.7-4 ms, `python benchmarks/fleet.py --skip-fleet`).
- **Idle connections end**: one that has not sent a whole request's headers within `timeout` seconds of its
  start is closed, and so is a TLS handshake; between requests, aiohttp's keep-alive timeout (`timeout`).
- **Bounded**: at most `max_connections` are open at once; more are closed as they come (with TLS, once
  their handshake is done or timed out), so a flood cannot take the descriptors the exporter needs for /proc
  and the logs.
- **bcrypt off the loop**: a password not verified before is checked on one worker thread of its own; a
  flood of wrong passwords costs one core and never delays a scrape with known credentials.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from aiohttp import web
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import CollectorRegistry

from tfgpu_tui.export.collector import Exporter, exposition, registry_for
from tfgpu_tui.export.web_config import WebConfig

CONNECTION_TIMEOUT_SECONDS = 10.0
MAX_CONNECTIONS = 256  # open at once; well under the usual 1024 descriptors a process may hold
CLOSE_SECONDS = 10.0  # scrapes in flight may finish this long after `close`
INDEX = """<html><head><title>tfgpu-tui exporter</title></head><body><h1>tfgpu-tui exporter</h1>
<p><a href="metrics">Metrics</a></p></body></html>
"""
UNAUTHORIZED = {"WWW-Authenticate": 'Basic realm="tfgpu-tui"'}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Bounded(asyncio.Protocol):
    """One connection's protocol, in front of aiohttp's, bounded in number and in time: it passes the
    connection on while fewer than `limit` others are open (the set `open_now`, shared by the server's
    connections) and closes it at once otherwise; and it closes a connection that has not sent the end of a
    request's headers within `timeout` seconds of its start (after that, aiohttp's keep-alive timeout rules;
    aiohttp itself closes a connection that never sends a request only in recent releases)."""

    def __init__(self, handler: asyncio.Protocol, open_now: set[Bounded], limit: int, timeout: float) -> None:
        self.handler = handler
        self.open = open_now
        self.limit = limit
        self.timeout = timeout
        self.tail = b""  # the last bytes received, while the first request's headers are not all in
        self.deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if len(self.open) >= self.limit:
            transport.close()
            return
        self.open.add(self)
        self.deadline = asyncio.get_running_loop().call_later(self.timeout, transport.close)
        self.handler.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        if self in self.open:
            self.open.discard(self)
            self.handler.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self in self.open:
            if self.deadline is not None:
                seen = self.tail + data
                if b"\r\n\r\n" in seen:
                    self.deadline.cancel()
                    self.deadline = None
                self.tail = seen[-3:]
            self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self.handler.eof_received() if self in self.open else None

    def pause_writing(self) -> None:
        self.handler.pause_writing()

    def resume_writing(self) -> None:
        self.handler.resume_writing()


class MetricsServer:
    """Serves one exporter's registry; `web` adds TLS and basic auth. The address is bound here (OSError
    when it cannot be); `start` serves it from a thread of its own, `close` ends that."""

    def __init__(
        self,
        address: tuple[str, int],
        exporter: Exporter,
        web: WebConfig | None = None,
        *,
        timeout: float = CONNECTION_TIMEOUT_SECONDS,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.exporter = exporter
        self.registry: CollectorRegistry = registry_for(exporter)
        self.web = web or WebConfig()
        self.timeout = timeout
        self.max_connections = max_connections
        self.ssl_context: ssl.SSLContext | None = self.web.ssl_context()
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.socket = socket.create_server(address, family=family)
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._bcrypt = ThreadPoolExecutor(1, thread_name_prefix="tfgpu-export-auth")

    @property
    def port(self) -> int:
        return int(self.socket.getsockname()[1])

    @property
    def url(self) -> str:
        host = str(self.socket.getsockname()[0])
        scheme = "https" if self.ssl_context is not None else "http"
        shown = f"[{host}]" if ":" in host else host
        return f"{scheme}://{shown}:{self.port}/metrics"

    def web_app(self) -> web.Application:
        """The aiohttp application: basic auth in front of `/` and `/metrics`."""
        app = web.Application(middlewares=[self._authorize])
        app.add_routes([web.get("/", self.handle_index), web.get("/metrics", self.handle_metrics)])
        return app

    @web.middleware
    async def _authorize(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Basic auth first (404 is for those who may ask); bcrypt only on its own thread."""
        header = request.headers.get("Authorization")
        verdict = self.web.known(header)
        if verdict is None:
            verdict = await asyncio.get_running_loop().run_in_executor(
                self._bcrypt, self.web.authorized, header
            )
        if not verdict:
            return web.Response(status=401, text="Unauthorized\n", headers=UNAUTHORIZED)
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return web.Response(status=404, text="Not found: try /metrics\n")

    async def handle_index(self, request: web.Request) -> web.Response:
        return web.Response(text=INDEX, content_type="text/html")

    async def handle_metrics(self, request: web.Request) -> web.Response:
        """The registry in Prometheus's text format, rendered on a worker thread."""
        started = time.perf_counter()
        body = await asyncio.get_running_loop().run_in_executor(None, exposition, self.registry)
        self.exporter.scrape_seconds = time.perf_counter() - started
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    # ----- serving -----
    def start(self) -> None:
        """Serve from a thread of its own; returns once connections are accepted."""
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._serve(ready),), name="tfgpu-export-http"
        )
        self._thread.start()
        ready.result()

    async def _serve(self, ready: Future[None]) -> None:
        runner = web.AppRunner(
            self.web_app(),
            handle_signals=False,
            access_log=None,  # quiet: a scrape every second would flood the terminal
            keepalive_timeout=self.timeout,
            shutdown_timeout=CLOSE_SECONDS,
        )
        try:
            await runner.setup()
            server = await self._loop.create_server(
                self._protocol_factory(runner.server),
                sock=self.socket,
                ssl=self.ssl_context,
                ssl_handshake_timeout=self.timeout if self.ssl_context else None,
            )
            self._stop = asyncio.Event()
        except Exception as error:  # the caller of `start` raises it
            ready.set_exception(error)
            await runner.cleanup()
            return
        ready.set_result(None)
        try:
            await self._stop.wait()
        finally:
            server.close()
            await runner.cleanup()  # connections closed, scrapes in flight given CLOSE_SECONDS

    def _protocol_factory(self, handlers: web.Server | None) -> Callable[[], asyncio.Protocol]:
        """aiohttp's request handler for each connection, behind the bound on open connections."""
        assert handlers is not None
        open_now: set[Bounded] = set()
        return lambda: Bounded(handlers(), open_now, self.max_connections, self.timeout)

    def close(self) -> None:
        """Stop serving: the listening socket closes, open connections end, scrapes in flight finish."""
        if self._thread is not None:
            stop = self._stop
            if stop is not None:
                self._loop.call_soon_threadsafe(stop.set)
            self._thread.join()
            self._thread = None
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
        self._loop.close()
        self.socket.close()
        self._bcrypt.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> MetricsServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
