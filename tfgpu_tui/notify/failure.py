"""Why a message was not delivered, in words: an HTTP status, a refused connection, a name that did not
resolve, a timeout, TLS. Apprise only answers True or False; the reason is in what it logs while it sends,
which is read here (kept in memory, never printed: its lines can hold the URL) and turned into one phrase."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

UNKNOWN = "the service refused it or could not be reached"
# (what Apprise or the library under it says, the phrase for the user), the first that matches wins
REASONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"NameResolutionError|Name or service not known|nodename nor servname|getaddrinfo failed|"
            r"Temporary failure in name resolution|Failed to resolve"
        ),
        "the host name did not resolve",
    ),
    (
        re.compile(r"Connection refused|ConnectionRefusedError|Errno 111\b"),
        "the connection was refused (nothing listens on that port)",
    ),
    (re.compile(r"timed out|Timeout", re.IGNORECASE), "the connection timed out"),
    (
        re.compile(r"SSLError|CERTIFICATE_VERIFY_FAILED|certificate verify", re.IGNORECASE),
        "the TLS handshake failed (certificate)",
    ),
)
HTTP_STATUS = re.compile(r"\berror=(\d{3})\b|\bHTTP (?:status|error)[ :]*(\d{3})\b", re.IGNORECASE)


def reason(messages: list[str]) -> str:
    """The phrase for what Apprise logged while a send failed."""
    text = "\n".join(messages)
    status = HTTP_STATUS.search(text)
    if status is not None:
        return f"the service answered HTTP {status.group(1) or status.group(2)}"
    return next((phrase for pattern, phrase in REASONS if pattern.search(text)), UNKNOWN)


class _Collect(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a record that cannot be formatted tells nothing
            self.sink.append(record.getMessage())


@contextmanager
def apprise_messages() -> Iterator[Callable[[], str]]:
    """While the block runs, keep what Apprise logs (its debug lines included, where the socket error is);
    yields a function giving the reason phrase for what was logged so far."""
    logger = logging.getLogger("apprise")
    sink: list[str] = []
    handler = _Collect(sink)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield lambda: reason(sink)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
