"""Fast scan of a log's earlier part for its epoch history, in bounded memory.

Only the last ``\\r`` update of each line matters for history (earlier updates are superseded), so the scan
finds line ends and carriage returns with C-speed ``bytes.find``/``rfind`` and decodes one short segment per
line. Memory is one chunk plus one carried partial line (capped), whatever the file size.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tfgpu_tui.training.follow import Segment, decode
from tfgpu_tui.training.run import TrainingRun

CHUNK_BYTES = 1024 * 1024  # fits in the CPU cache: reading into it and searching it stay fast
MAX_CARRY_BYTES = 1024 * 1024


def last_update(line: bytes) -> bytes:
    """The part of a line after its last ``\\r`` (a trailing ``\\r`` of CRLF ignored)."""
    if line.endswith(b"\r"):
        line = line[:-1]
    cut = line.rfind(b"\r")
    return line if cut < 0 else line[cut + 1 :]


def scan_history(
    path: Path, end: int, run: TrainingRun, start: int = 0, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[int]:
    """Feed the final update of every line in ``[start, end)`` of `path` to `run` (`start` is a line start).

    A generator: it yields the offset reached after each chunk, so a caller can interleave it with other
    work or stop early. The number of lines scanned is added to ``run.scanned_lines``.
    """
    line_number = run.scanned_lines + 1
    carry = b""
    feed = run.feed_segment
    buffer = bytearray(chunk_bytes)  # reused: a fresh 8 MB object per read costs page faults
    with path.open("rb", buffering=0) as handle:
        handle.seek(start)
        position = start
        while position < end:
            wanted = min(chunk_bytes, end - position)
            got = handle.readinto(memoryview(buffer)[:wanted])
            if not got:
                break
            chunk = buffer if got == chunk_bytes else buffer[:got]
            position += got
            begin = 0
            newline = chunk.find(b"\n")
            if carry and newline >= 0:
                feed(Segment(decode(last_update(carry + chunk[:newline])), True, line_number))
                line_number += 1
                carry = b""
                begin = newline + 1
                newline = chunk.find(b"\n", begin)
            while newline >= 0:
                cut = chunk.rfind(b"\r", begin, newline - 1)
                if cut >= 0:
                    begin = cut + 1
                stop = newline - 1 if newline > begin and chunk[newline - 1] == 13 else newline
                feed(Segment(decode(chunk[begin:stop]), True, line_number))
                line_number += 1
                begin = newline + 1
                newline = chunk.find(b"\n", begin)
            if begin < len(chunk):
                carry += bytes(chunk[begin:])
                cut = carry.rfind(b"\r", 0, len(carry) - 1)
                carry = carry[cut + 1 :][-MAX_CARRY_BYTES:]
            yield position
    if carry:
        feed(Segment(decode(last_update(carry)), True, line_number))
        line_number += 1
    run.scanned_lines = line_number - 1
