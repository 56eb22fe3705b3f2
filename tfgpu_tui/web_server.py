"""The web server behind `tfgpu-tui serve`: textual-serve's Server, hardened for a dashboard that can kill.

- The page tells the browser to connect back to the address it asked for (so `ssh -L 9000:127.0.0.1:8000`
  works), unless a fixed `public_url` is given (for a reverse proxy that terminates TLS).
- On a loopback bind, requests must name a loopback host (or the public URL's host): a web page the user
  visits cannot reach the dashboard by DNS rebinding.
- The session websocket refuses other sites' pages (cross-site websocket hijacking): a browser's `Origin`
  must be the page's own address.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.server import Server

from tfgpu_tui.commands.serve import is_loopback

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def allowed_hosts(public_url: str | None) -> set[str]:
    """`host:port` values (lower case) a request may name besides loopback ones."""
    return {urlsplit(public_url).netloc.lower()} if public_url else set()


def host_is_allowed(host_header: str, loopback_only: bool, extra: set[str]) -> bool:
    """Whether a request's Host header is acceptable for this server."""
    if not loopback_only or host_header.lower() in extra:
        return True
    hostname = urlsplit(f"//{host_header}").hostname or ""
    return is_loopback(hostname)


def origin_is_allowed(origin: str | None, host_header: str, extra: set[str]) -> bool:
    """A websocket from a browser must come from a page served here (non-browser clients send no Origin)."""
    if origin is None:
        return True
    netloc = urlsplit(origin).netloc.lower()
    return netloc == host_header.lower() or netloc in extra


class DashboardServer(Server):
    """textual-serve's Server with the checks above."""

    def __init__(self, command: str, host: str, port: int, public_url: str | None = None) -> None:
        super().__init__(command, host=host, port=port, title="tfgpu-tui", public_url=public_url)
        self._fixed_public_url = public_url
        self._loopback_only = is_loopback(host)
        self._extra_hosts = allowed_hosts(public_url)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.host
        if not host_is_allowed(host, self._loopback_only, self._extra_hosts):
            raise web.HTTPForbidden(text=f"tfgpu-tui serves loopback addresses only, not {host!r}.\n")
        if request.path == "/ws" and not origin_is_allowed(
            request.headers.get("Origin"), host, self._extra_hosts
        ):
            raise web.HTTPForbidden(text="tfgpu-tui: websocket from another site refused.\n")
        return await handler(request)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The page, pointing the browser back at the address it used (unless a public URL is fixed)."""
        if self._fixed_public_url is None:
            self.public_url = f"{request.scheme}://{request.host}"
        return await super().handle_index(request)
