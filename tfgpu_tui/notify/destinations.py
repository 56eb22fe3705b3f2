"""Where notify sends: Apprise URLs from --to, --to-file, `$TFGPU_TUI_NOTIFY` and the settings file.

A URL carries tokens and passwords, so it is never printed: everywhere it is shown as `shown(url)`, its
scheme, host and port, and the path segments that cannot be secrets; the host only when it is a machine's
name or address (for Telegram, Slack, Discord, DingTalk... the "host" part is the token itself).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tfgpu_tui.safe_files import special_file_refusal

ENV_VAR = "TFGPU_TUI_NOTIFY"
MAX_URL_FILE_BYTES = 64 * 1024
MAX_URLS = 32
SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]{0,31})://")
HOSTNAME = re.compile(r"^(?=.{1,253}$)[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+$")
HIDDEN = "(token hidden)"
PATH_SCHEMES = frozenset(
    {"json", "xml", "form"}
)  # (and their https forms) webhooks whose path is an endpoint
PLAIN_SEGMENT = re.compile(r"^[A-Za-z_-]{1,24}$")


class DestinationError(ValueError):
    """A URL that cannot be used; its message names it only by `shown()`."""


@dataclass(frozen=True)
class Destination:
    """One Apprise URL; `repr` and `str` never show it whole."""

    url: str

    @property
    def scheme(self) -> str:
        match = SCHEME.match(self.url)
        return match.group(1).lower() if match else "?"

    @property
    def shown(self) -> str:
        return shown(self.url)

    def __repr__(self) -> str:
        return f"Destination({self.shown!r})"

    __str__ = __repr__


def _is_machine(host: str) -> bool:
    if host == "localhost" or HOSTNAME.match(host):
        return True
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def shown(url: str) -> str:
    """`scheme://host:port/path` for messages, with no user, password, query or fragment; a path segment
    only for the generic webhooks (json://, xml://, form://) and only where it cannot be a secret (letters
    alone, at most 24 of them: ``/hook`` yes, ``/s3cr3t-T0KEN`` no, shown as ``…``); the host itself hidden
    when it is not a machine's name or address (a token), and then the port and path too."""
    match = SCHEME.match(url)
    if match is None:
        return "a URL without a scheme://"
    scheme = match.group(1).lower()
    rest = url[match.end() :]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    host, port = _host_and_port(authority.rpartition("@")[2])
    if not _is_machine(host):
        return f"{scheme}://{HIDDEN}"
    path = re.split(r"[?#]", rest[len(authority) :], maxsplit=1)[0]
    segments = [part for part in path.split("/") if part] if scheme.rstrip("s") in PATH_SCHEMES else []
    shown_path = "".join("/" + (part if PLAIN_SEGMENT.match(part) else "…") for part in segments)
    return f"{scheme}://{host}{':' + port if port.isdigit() else ''}{shown_path}"


def _host_and_port(hostport: str) -> tuple[str, str]:
    """("host", "port") of "host:port" or "[v6]:port" ("" where there is no port)."""
    if hostport.startswith("["):
        host, _, after = hostport.partition("]")
        return host + "]", after.removeprefix(":")
    host, _, port = hostport.partition(":")
    return host, port


def split_urls(text: str) -> list[str]:
    """URLs separated by whitespace or newlines; `#` starts a comment line."""
    urls = []
    for line in text.splitlines():
        if not line.strip().startswith("#"):
            urls += line.split()
    return urls


def read_url_file(path: Path) -> list[str]:
    """The URLs in a --to-file; raises DestinationError with one line (no URL in it)."""
    refusal = special_file_refusal(path)
    if refusal is not None:
        raise DestinationError(f"--to-file {refusal}")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_URL_FILE_BYTES + 1)
    except OSError as error:
        raise DestinationError(f"--to-file {path}: cannot read it ({error.strerror or error})") from None
    if len(data) > MAX_URL_FILE_BYTES:
        raise DestinationError(f"--to-file {path}: larger than {MAX_URL_FILE_BYTES // 1024} KiB")
    return split_urls(data.decode("utf-8", "replace"))


def gather(
    to: list[str], to_file: Path | None, configured: tuple[str, ...], environ: Mapping[str, str]
) -> list[str]:
    """Every URL given, each once, in order: --to, --to-file, `$TFGPU_TUI_NOTIFY`, the settings file."""
    urls = list(to)
    if to_file is not None:
        urls += read_url_file(to_file)
    urls += split_urls(environ.get(ENV_VAR, ""))
    urls += list(configured)
    unique = list(dict.fromkeys(urls))
    if len(unique) > MAX_URLS:
        raise DestinationError(f"{len(unique)} notification URLs given; at most {MAX_URLS}")
    return unique


def quiet_apprise() -> None:
    """Apprise logs through `logging` (its messages can hold a URL): give its logger a handler that drops
    them, so Python's last-resort handler never prints them to stderr."""
    import logging

    logger = logging.getLogger("apprise")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())


def known_schemes() -> frozenset[str]:
    """The schemes the installed Apprise speaks."""
    from apprise.manager_plugins import NotificationManager

    return frozenset(scheme.lower() for scheme in NotificationManager().schemas())


def check(url: str, schemes: frozenset[str]) -> Destination:
    """A usable destination, or DestinationError saying why (malformed, unknown scheme, refused by
    Apprise)."""
    import apprise

    quiet_apprise()
    if any(ord(char) < 32 or ord(char) == 127 for char in url):
        raise DestinationError(f"{shown(url)}: the URL holds control characters")
    match = SCHEME.match(url)
    if match is None:
        raise DestinationError("a notification URL has no scheme:// (e.g. ntfys://ntfy.sh/TOPIC); check it")
    scheme = match.group(1).lower()
    if scheme not in schemes:
        raise DestinationError(
            f"{shown(url)}: unknown scheme {scheme!r} (Apprise knows ntfy, tgram, slack, discord, mailto, "
            "dingtalk, wecombot, feishu, lark, json and others: https://github.com/caronc/apprise/wiki)"
        )
    if apprise.Apprise.instantiate(url) is None:
        raise DestinationError(f"{shown(url)}: malformed for {scheme}:// (a part is missing or invalid)")
    return Destination(url)
