"""Follow a log file like ``tail -F``: new bytes only, partial lines kept until their end, truncation and
rotation detected and followed, a missing file waited for, a deleted file reported.

Output is split into *segments* at ``\\n`` and at ``\\r`` (Keras progress bars rewrite their line with
``\\r``); ``\\r\\n`` counts as one line end. Decoding is UTF-8 with replacement, so binary junk never raises;
a file in UTF-16 (PowerShell's ``>``: told by its byte-order mark, or by its byte pattern when it has
none, see `encoding.py`) is split and decoded as UTF-16, its offsets staying byte offsets on even
boundaries. A byte-order mark never reaches the text.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from stat import S_ISREG

from tfgpu_tui.safe_files import special_file_refusal
from tfgpu_tui.training.encoding import SNIFF_BYTES, detect_encoding

READ_BYTES = 4 * 1024 * 1024
MAX_SEGMENT_BYTES = 16 * 1024 * 1024
TAIL_BYTES = 2 * 1024 * 1024
TERMINATOR = re.compile(rb"[\r\n]")
UTF16_TERMINATOR = {"utf-16-le": re.compile(rb"[\r\n]\x00"), "utf-16-be": re.compile(rb"\x00[\r\n]")}
__all__ = ["FileEvent", "FileState", "LogFollower", "Segment", "SegmentSplitter", "decode", "detect_encoding"]


class FileEvent(str, Enum):
    """What happened to the followed file between two polls."""

    OPENED = "opened"
    TRUNCATED = "truncated"
    ROTATED = "rotated"
    DELETED = "deleted"

    def __str__(self) -> str:
        return self.value


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
    events: list[FileEvent] = field(default_factory=list)
    state: FileState = FileState.WAITING
    bytes_read: int = 0


def decode(data: bytes | bytearray, encoding: str = "utf-8") -> str:
    """Text with replacement characters for invalid bytes; NUL bytes and a leading byte-order mark dropped."""
    text = data.decode(encoding, "replace")
    if text[:1] == "\ufeff":
        text = text[1:]
    return text.replace("\x00", "") if "\x00" in text else text


class SegmentSplitter:
    """Turns a byte stream into segments, keeping the unterminated rest for the next feed."""

    def __init__(
        self, first_line_number: int = 1, max_segment_bytes: int = MAX_SEGMENT_BYTES, encoding: str = "utf-8"
    ) -> None:
        self.line_number = first_line_number
        self.max_segment_bytes = max_segment_bytes
        self.encoding = encoding
        self._pending = b""
        self._overflow = 0  # bytes dropped from an over-long segment

    @property
    def pending(self) -> bytes:
        """Bytes after the last terminator."""
        return self._pending

    def reset(self, first_line_number: int = 1, encoding: str = "utf-8") -> None:
        """Forget pending bytes (after truncation or rotation)."""
        self.line_number = first_line_number
        self.encoding = encoding
        self._pending = b""
        self._overflow = 0

    def decode_pending(self) -> str:
        """The text after the last terminator (a UTF-16 half character left out)."""
        pending = self._pending
        if self.encoding != "utf-8" and len(pending) % 2:
            pending = pending[:-1]
        return decode(pending, self.encoding)

    def feed(self, data: bytes) -> list[Segment]:
        """Complete segments found in pending + `data`."""
        if self.encoding != "utf-8":
            return self._feed_utf16(data)
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
        self._keep(buffer[start:])
        return segments

    def _keep(self, pending: bytes) -> None:
        self._pending = pending
        if len(pending) > self.max_segment_bytes:
            cut = self.max_segment_bytes - self.max_segment_bytes % 2  # whole UTF-16 code units
            self._overflow += len(pending) - cut
            self._pending = pending[:cut]

    def _feed_utf16(self, data: bytes) -> list[Segment]:
        """`feed` for UTF-16: terminators are the code units ``\\r``/``\\n`` at even offsets of the buffer
        (which always starts on a code unit)."""
        buffer = self._pending + data if self._pending else data
        big_endian = self.encoding == "utf-16-be"
        crlf_tail = b"\x00\n" if big_endian else b"\n\x00"
        segments: list[Segment] = []
        start = 0
        for match in UTF16_TERMINATOR[self.encoding].finditer(buffer):
            end = match.start()
            if end % 2 or end < start:
                continue  # inside a character, or the \n of a \r\n already consumed
            char = buffer[end + 1] if big_endian else buffer[end]
            if char == 13:
                following = buffer[end + 2 : end + 4]
                if len(following) < 2:
                    break  # maybe the first half of \r\n: wait for the next bytes
                if following == crlf_tail:
                    segments.append(self._segment(buffer[start:end], True))
                    start = end + 4
                    continue
                segments.append(self._segment(buffer[start:end], False))
            else:
                segments.append(self._segment(buffer[start:end], True))
            start = end + 2
        self._keep(buffer[start:])
        return segments

    def _segment(self, data: bytes, line_ends: bool) -> Segment:
        text = decode(data, self.encoding)
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
        self.encoding = "utf-8"
        self._handle: int | None = None
        self._inode: tuple[int, int] | None = None
        self.refused: str | None = None  # why the path cannot be followed (safe_files.special_file_refusal)

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
        update.partial = self.splitter.decode_pending()
        return update

    def _try_open(self, update: FollowUpdate, offset: int) -> None:
        try:  # O_NONBLOCK: opening a FIFO must not wait for a writer (reads of a regular file are unaffected)
            handle = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            self.refused = special_file_refusal(self.path)  # a symlink loop is named as such
            return
        stat = os.fstat(handle)
        if not S_ISREG(stat.st_mode):  # FIFO, device, socket, directory: never read
            os.close(handle)
            self.refused = special_file_refusal(self.path) or f"{self.path} is not a regular file"
            return
        self.refused = None
        self._handle = handle
        self._inode = (stat.st_dev, stat.st_ino)
        self.offset = offset if offset <= stat.st_size else 0
        self._detect_encoding()
        self.state = FileState.OPEN
        update.events.append(FileEvent.OPENED)

    def _detect_encoding(self) -> None:
        """Tell the encoding from the file's first bytes (once it has some): a byte-order mark, skipped when
        reading from the start, or the byte pattern of UTF-16 without one."""
        assert self._handle is not None
        encoding, bom = detect_encoding(os.pread(self._handle, SNIFF_BYTES, 0))
        if encoding != self.encoding:
            self.encoding = encoding
            self.splitter.reset(self.splitter.line_number, encoding)
        if self.offset < bom:
            self.offset = bom
        elif encoding != "utf-8" and self.offset % 2:
            self.offset += 1  # stay on a code unit

    def _reopen(self, update: FollowUpdate, event: FileEvent) -> None:
        self.close()
        self.splitter.reset()
        self.encoding = "utf-8"
        self._try_open(update, 0)
        if update.events and update.events[-1] == FileEvent.OPENED:
            update.events[-1] = event

    def _check_path(self, update: FollowUpdate) -> None:
        try:
            stat = os.stat(self.path)
        except OSError:
            if self.state is not FileState.DELETED:
                self.state = FileState.DELETED
                update.events.append(FileEvent.DELETED)
            return
        if (stat.st_dev, stat.st_ino) != self._inode:
            self._read(update, 1 << 62)  # drain the old file before switching
            self._reopen(update, FileEvent.ROTATED)
        elif stat.st_size < self.offset:
            self.splitter.reset()
            self.encoding = "utf-8"
            self.offset = 0
            update.events.append(FileEvent.TRUNCATED)

    def _read(self, update: FollowUpdate, max_bytes: int) -> None:
        assert self._handle is not None
        if self.offset < 4:
            self._detect_encoding()  # the file was empty (or truncated) when opened: its first bytes decide
        while update.bytes_read < max_bytes:
            chunk = os.pread(self._handle, min(READ_BYTES, max_bytes - update.bytes_read), self.offset)
            if not chunk:
                return
            self.offset += len(chunk)
            update.bytes_read += len(chunk)
            update.segments.extend(self.splitter.feed(chunk))
