"""Who may use `serve`'s web server: the checks in front of every request, with no web framework in them.

- **A secret token**, as Jupyter does: `/?token=...` (or an `Authorization: token ...` header) is exchanged
  for an HttpOnly, SameSite=Strict cookie; every path answers 401 (the websocket 403) without one of them.
  Comparisons are constant-time.
- **Host** must name this server: a loopback name on a loopback bind, the bound address, an IP address of
  the machine (wildcard bind), or the `--public-url` host. A page on another site cannot reach the dashboard
  through DNS rebinding.
- **Origin**: the websocket needs an `Origin` equal to the page's own origin (scheme, host and port); a
  client that sends none is refused too (loopback is no boundary between local users).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

TOKEN_ENV_VAR = "TFGPU_TUI_TOKEN"
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


def public_origin(public_url: str | None) -> str | None:
    if not public_url:
        return None
    parts = urlsplit(public_url)
    return f"{parts.scheme}://{parts.netloc}".lower()


@dataclass(frozen=True)
class Credentials:
    """What a request presents: the cookie named for this server, the Authorization header, `?token=`."""

    cookie: str | None
    authorization: str
    query_token: str | None


class Guard:
    """The token, its cookie, and the Host and Origin rules of one server."""

    def __init__(self, token: Token | None, bind_host: str, port: int, public_url: str | None) -> None:
        self.token = token or Token(os.urandom(32).hex(), "generated")
        self.cookie_name = f"tfgpu-tui-{port}"
        self.cookie_value = hmac.new(self.token.value.encode(), COOKIE_PURPOSE, hashlib.sha256).hexdigest()
        self.hosts = HostPolicy(bind_host, public_url)
        self.public_origin = public_origin(public_url)

    def _token_matches(self, presented: str | None) -> bool:
        if not presented:
            return False
        return hmac.compare_digest(presented.encode(), self.token.value.encode())

    def authorized(self, credentials: Credentials) -> bool:
        """A valid cookie, `Authorization: token T` / `Bearer T`, or `?token=T`."""
        cookie = credentials.cookie
        if cookie and hmac.compare_digest(cookie.encode(), self.cookie_value.encode()):
            return True
        scheme, _, presented = credentials.authorization.partition(" ")
        if scheme.lower() in ("token", "bearer") and self._token_matches(presented.strip()):
            return True
        return self._token_matches(credentials.query_token)

    def refusal(
        self, host: str, websocket: bool, credentials: Credentials, origin: str | None, scheme: str
    ) -> tuple[int, str] | None:
        """The HTTP status and text that refuse this request, or None when it may go on."""
        if not self.hosts.allows(host):
            return (
                403,
                f"tfgpu-tui: {host!r} is not an address of this server (use --public-url for a name).\n",
            )
        if not self.authorized(credentials):
            if websocket:
                return 403, "tfgpu-tui: websocket without the access token refused.\n"
            return 401, LOGIN_HELP
        if websocket and not origin_is_allowed(origin, f"{scheme}://{host}", self.public_origin):
            return 403, "tfgpu-tui: websocket from another site (or without Origin) refused.\n"
        return None
