"""Bounded capture of a child process's output: the last `limit` bytes of each stream (optionally the first
`head` bytes too) and a count of what was left out, so a child printing gigabytes costs us kilobytes.

`communicate_bounded` is a drop-in for `Popen.communicate(timeout=...)` that reads both pipes in threads.
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field

TAIL_BYTES = 64 * 1024
READ_CHUNK = 64 * 1024


@dataclass
class BoundedCapture:
    """What one stream held: `head` (up to `head_limit` bytes), `tail` (the last `limit` bytes after the
    head) and `dropped`, the number of bytes between them that were not kept."""

    limit: int = TAIL_BYTES
    head_limit: int = 0
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def feed(self, data: bytes) -> None:
        """Keep what fits; count the rest."""
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        excess = len(self.tail) - self.limit
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def data(self) -> bytes:
        """The kept bytes, with a line saying how many were left out where they were."""
        if not self.dropped:
            return bytes(self.head + self.tail)
        note = f"\n[... {self.dropped:,} bytes of output left out ...]\n".encode()
        return bytes(self.head) + note + bytes(self.tail)


def _drain(stream, capture: BoundedCapture) -> None:
    try:
        while chunk := stream.read1(READ_CHUNK) if hasattr(stream, "read1") else stream.read(READ_CHUNK):
            capture.feed(chunk)
    except (OSError, ValueError):
        pass


def communicate_bounded(
    process: subprocess.Popen,
    timeout: float | None = None,
    limit: int = TAIL_BYTES,
    stderr_head: int = 0,
    poll: float = 0.05,
    should_stop=None,
) -> tuple[bytes, bytes, BoundedCapture, BoundedCapture]:
    """Wait for `process` (started with binary stdout/stderr pipes) keeping at most `limit` bytes of each
    stream (plus the first `stderr_head` bytes of stderr). Raises subprocess.TimeoutExpired after `timeout`
    seconds, or returns early once `should_stop()` is true (the caller kills the child); the captures
    still hold what was read."""
    out, err = BoundedCapture(limit), BoundedCapture(limit, stderr_head)
    threads = [
        threading.Thread(target=_drain, args=(stream, capture), daemon=True)
        for stream, capture in ((process.stdout, out), (process.stderr, err))
        if stream is not None
    ]
    for thread in threads:
        thread.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    while process.poll() is None:
        if deadline is not None and time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(process.args, timeout or 0, out.data(), err.data())
        if should_stop is not None and should_stop():
            break
        time.sleep(poll)
    for thread in threads:
        thread.join(timeout=5)
    return out.data(), err.data(), out, err
