"""Follow a log file like ``tail -F``: new bytes only, partial lines kept until their end, truncation and
rotation detected and followed, a missing file waited for, a deleted file reported.

Output is split into *segments* at ``\\n`` and at ``\\r`` (Keras progress bars rewrite their line with
``\\r``); ``\\r\\n`` counts as one line end. Decoding is UTF-8 with replacement, so binary junk never raises.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

READ_BYTES = 4 * 1024 * 1024
MAX_SEGMENT_BYTES = 16 * 1024 * 1024
TAIL_BYTES = 2 * 1024 * 1024
TERMINATOR = re.compile(rb"[\r\n]")


class FileState(Enum):
    """Where the followed file stands."""

    WAITING = "waiting"  # does not exist (yet)
    OPEN = "open"
    DELETED = "deleted"  # removed while followed; still reading what the open handle holds


@dataclass(frozen=True)
class Segment:
    """Text between two terminators.

    Attributes:
        text: decoded text (ANSI and backspaces still in it).
        line_ends: True when a ``\\n`` ended it, False for ``\\r``.
        line_number: 1-based number of the ``\\n``-terminated line it belongs to (counted from where
            following began).
    """

    text: str
    line_ends: bool
    line_number: int


@dataclass
class FollowUpdate:
    """What one poll found.

    Attributes:
        segments: complete segments, in order.
        partial: decoded text after the last terminator (the live, unfinished update).
        events: file events since the last poll: ``opened``, ``truncated``, ``rotated``, ``deleted``.
        state: the file's state after the poll.
        bytes_read: how many new bytes were read.
    """

    segments: list[Segment] = field(default_factory=list)
    partial: str = ""
    events: list[str] = field(default_factory=list)
    state: FileState = FileState.WAITING
    bytes_read: int = 0


def decode(data: bytes | bytearray) -> str:
    """UTF-8 with replacement characters for invalid bytes; NUL bytes dropped."""
    text = data.decode("utf-8", "replace")
    return text.replace("\x00", "") if "\x00" in text else text


class SegmentSplitter:
    """Turns a byte stream into segments, keeping the unterminated rest for the next feed."""

    def __init__(self, first_line_number: int = 1, max_segment_bytes: int = MAX_SEGMENT_BYTES) -> None:
        self.line_number = first_line_number
        self.max_segment_bytes = max_segment_bytes
        self._pending = b""
        self._overflow = 0  # bytes dropped from an over-long segment

    @property
    def pending(self) -> bytes:
        """Bytes after the last terminator."""
        return self._pending

    def reset(self, first_line_number: int = 1) -> None:
        """Forget pending bytes (after truncation or rotation)."""
        self.line_number = first_line_number
        self._pending = b""
        self._overflow = 0

    def feed(self, data: bytes) -> list[Segment]:
        """Complete segments found in pending + `data`."""
        buffer = self._pending + data if self._pending else data
        segments: list[Segment] = []
        append = segments.append
        start = 0
        for match in TERMINATOR.finditer(buffer):
            end = match.start()
            if end < start:  # the \n of a \r\n already consumed
                continue
            if buffer[end] == 13:  # \r
                if end + 1 == len(buffer):
                    break  # maybe the first half of \r\n: wait for the next byte
                if buffer[end + 1] == 10:
                    append(self._segment(buffer[start:end], True))
                    start = end + 2
                    continue
                append(self._segment(buffer[start:end], False))
            else:
                append(self._segment(buffer[start:end], True))
            start = end + 1
        self._pending = buffer[start:]
        if len(self._pending) > self.max_segment_bytes:
            self._overflow += len(self._pending) - self.max_segment_bytes
            self._pending = self._pending[: self.max_segment_bytes]
        return segments

    def _segment(self, data: bytes, line_ends: bool) -> Segment:
        text = decode(data)
        if self._overflow:
            text += f" [... {self._overflow} bytes cut]"
            self._overflow = 0
        segment = Segment(text, line_ends, self.line_number)
        if line_ends:
            self.line_number += 1
        return segment


def line_start_at_or_after(path: Path, offset: int) -> int:
    """The offset just after the first ``\\n`` at or after `offset` (0 stays 0); the file size if none."""
    if offset <= 0:
        return 0
    with path.open("rb") as handle:
        handle.seek(offset - 1)
        while chunk := handle.read(64 * 1024):
            found = chunk.find(b"\n")
            if found >= 0:
                return handle.tell() - len(chunk) + found + 1
        return handle.tell()


class LogFollower:
    """Follows one path. Call `poll()` repeatedly (from a worker thread); it never blocks for long.

    Args:
        path: the file to follow (it may not exist yet).
        start_offset: where to start reading an existing file (default 0); later files (after rotation or
            truncation) are always read from 0.
        first_line_number: the line number of the line at `start_offset`.
    """

    def __init__(self, path: Path, start_offset: int = 0, first_line_number: int = 1) -> None:
        self.path = Path(path)
        self.start_offset = start_offset
        self.splitter = SegmentSplitter(first_line_number)
        self.state = FileState.WAITING
        self.offset = 0
        self._handle: int | None = None
        self._inode: tuple[int, int] | None = None

    def close(self) -> None:
        """Release the file handle."""
        if self._handle is not None:
            os.close(self._handle)
            self._handle = None

    def poll(self, max_bytes: int = READ_BYTES) -> FollowUpdate:
        """Read what is new (at most about `max_bytes`) and report file events."""
        update = FollowUpdate()
        if self._handle is None:
            self._try_open(update, self.start_offset)
        else:
            self._check_path(update)
        if self._handle is not None:
            self._read(update, max_bytes)
        update.state = self.state
        update.partial = decode(self.splitter.pending)
        return update

    def _try_open(self, update: FollowUpdate, offset: int) -> None:
        try:
            handle = os.open(self.path, os.O_RDONLY)
        except OSError:
            return
        stat = os.fstat(handle)
        self._handle = handle
        self._inode = (stat.st_dev, stat.st_ino)
        self.offset = offset if offset <= stat.st_size else 0
        self.state = FileState.OPEN
        update.events.append("opened")

    def _reopen(self, update: FollowUpdate, event: str) -> None:
        self.close()
        self.splitter.reset()
        self._try_open(update, 0)
        if update.events and update.events[-1] == "opened":
            update.events[-1] = event

    def _check_path(self, update: FollowUpdate) -> None:
        try:
            stat = os.stat(self.path)
        except OSError:
            if self.state is not FileState.DELETED:
                self.state = FileState.DELETED
                update.events.append("deleted")
            return
        if (stat.st_dev, stat.st_ino) != self._inode:
            self._read(update, 1 << 62)  # drain the old file before switching
            self._reopen(update, "rotated")
        elif stat.st_size < self.offset:
            self.splitter.reset()
            self.offset = 0
            update.events.append("truncated")

    def _read(self, update: FollowUpdate, max_bytes: int) -> None:
        assert self._handle is not None
        while update.bytes_read < max_bytes:
            chunk = os.pread(self._handle, min(READ_BYTES, max_bytes - update.bytes_read), self.offset)
            if not chunk:
                return
            self.offset += len(chunk)
            update.bytes_read += len(chunk)
            update.segments.extend(self.splitter.feed(chunk))
