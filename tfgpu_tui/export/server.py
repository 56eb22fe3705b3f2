"""The exporter's HTTP(S) server: ``/metrics`` in Prometheus's text format, basic auth and TLS from a web
config, one thread per connection (the TLS handshake too, so a slow client holds up nobody)."""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import CollectorRegistry

from tfgpu_tui.export.collector import Exporter, exposition, registry_for
from tfgpu_tui.export.web_config import WebConfig

CONNECTION_TIMEOUT_SECONDS = 10.0
MAX_CONNECTIONS = 32  # open connections served at once; a flood of idle ones cannot exhaust threads
INDEX = b"""<html><head><title>tfgpu-tui exporter</title></head><body><h1>tfgpu-tui exporter</h1>
<p><a href="metrics">Metrics</a></p></body></html>
"""


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach (``localhost`` included; other names are not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class MetricsServer(ThreadingHTTPServer):
    """Serves one exporter's registry; `web` adds TLS and basic auth."""

    daemon_threads = False  # server_close() lets scrapes in flight finish (each is one request)

    def __init__(self, address: tuple[str, int], exporter: Exporter, web: WebConfig | None = None) -> None:
        self.exporter = exporter
        self.registry: CollectorRegistry = registry_for(exporter)
        self.web = web or WebConfig()
        self.ssl_context: ssl.SSLContext | None = self.web.ssl_context()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, MetricsHandler)

    def process_request(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        """One thread per connection, at most MAX_CONNECTIONS at once (more are closed at once)."""
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        """Do the TLS handshake in the connection's own thread."""
        request.settimeout(CONNECTION_TIMEOUT_SECONDS)
        if self.ssl_context is not None:
            try:
                request = self.ssl_context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                request.close()
                return
        super().finish_request(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        scheme = "https" if self.ssl_context is not None else "http"
        shown = f"[{host}]" if ":" in host else host
        return f"{scheme}://{shown}:{port}/metrics"


class MetricsHandler(BaseHTTPRequestHandler):
    """GET /metrics (and / with a link to it); everything else is 404."""

    server: MetricsServer
    server_version = "tfgpu-tui-exporter"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self.server.web.authorized(self.headers.get("Authorization")):
            self._send(401, b"Unauthorized\n", "text/plain", {"WWW-Authenticate": 'Basic realm="tfgpu-tui"'})
            return
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            started = time.perf_counter()
            body = exposition(self.server.registry)
            self.server.exporter.scrape_seconds = time.perf_counter() - started
            self._send(200, body, CONTENT_TYPE_LATEST)
        elif path == "/":
            self._send(200, INDEX, "text/html")
        else:
            self._send(404, b"Not found: try /metrics\n", "text/plain")

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        """Quiet: a scrape every second would flood the terminal."""
