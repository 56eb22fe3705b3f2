"""A local HTTP receiver for Apprise's json:// URLs: collects each POSTed message (tests of notify)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """The messages received so far (thread-safe), and the URL to give notify."""

    def __init__(self, port: int, token: str) -> None:
        self.url = f"json://127.0.0.1:{port}/hook/{token}"
        self._messages: list[dict] = []
        self._lock = threading.Lock()

    def add(self, message: dict) -> None:
        with self._lock:
            self._messages.append(message)

    @property
    def messages(self) -> list[dict]:
        with self._lock:
            return list(self._messages)

    def titles(self) -> list[str]:
        return [str(m.get("title", "")) for m in self.messages]


@contextmanager
def receiving(token: str = "s3cr3t-T0KEN", port: int = 0, status: int = 200) -> Iterator[Receiver]:
    """Serve on a loopback port (a free one when 0) for the duration of the block, answering each POST with
    HTTP `status` (a receiver that fails: 500)."""
    holder: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server name
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            try:
                holder[0].add(json.loads(body))
            except ValueError:
                holder[0].add({"raw": body.decode("utf-8", "replace")})
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    holder.append(Receiver(server.server_address[1], token))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder[0]
    finally:
        server.shutdown()
        server.server_close()
