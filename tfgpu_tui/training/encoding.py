"""What a log's first bytes say about it: its encoding (UTF-8, or UTF-16 LE/BE with or without a byte-order
mark) and whether it is text at all. Pure functions over a sample of bytes, plus one that reads the sample."""

from __future__ import annotations

from pathlib import Path

#: How much of the start of a file the checks read.
SNIFF_BYTES = 4096
BOMS = ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"), (b"\xef\xbb\xbf", "utf-8"))
# UTF-16 without a BOM: mostly-ASCII text has a NUL in every other byte. At least this share of the code
# units must show it, and the other half of the bytes may hold at most 1/8 as many NULs.
UTF16_MIN_NUL_SHARE = 0.3
UTF16_MAX_OTHER_RATIO = 1 / 8
MIN_UTF16_UNITS = 4
# A sample whose characters are more than this share control bytes or invalid UTF-8 is not a text log.
BINARY_SHARE = 0.1
TEXT_CONTROLS = frozenset("\t\n\r\b\f\v\x1b")


def utf16_by_pattern(sample: bytes) -> str | None:
    """``utf-16-le`` / ``utf-16-be`` for UTF-16 text without a byte-order mark, told by where its NUL bytes
    fall (odd offsets in LE, even ones in BE); None for anything else. A run of NULs on both sides (the hole
    a truncated log leaves) is not UTF-16."""
    units = len(sample) // 2
    if units < MIN_UTF16_UNITS:
        return None
    even = sample[0 : units * 2 : 2].count(0)
    odd = sample[1 : units * 2 : 2].count(0)
    for nuls, other, encoding in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if nuls >= UTF16_MIN_NUL_SHARE * units and other <= UTF16_MAX_OTHER_RATIO * nuls:
            return encoding
    return None


def detect_encoding(head: bytes) -> tuple[str, int]:
    """(encoding, BOM length) from a file's first bytes: UTF-16 LE/BE or UTF-8 by their byte-order mark,
    else UTF-16 by its byte pattern (`utf16_by_pattern`, BOM length 0), else UTF-8."""
    for bom, encoding in BOMS:
        if head.startswith(bom):
            return encoding, len(bom)
    return utf16_by_pattern(head) or "utf-8", 0


def looks_binary(sample: bytes) -> bool:
    """Whether a file's first bytes are not a text log: in neither UTF-16 nor mostly UTF-8 text (control
    bytes and invalid sequences over `BINARY_SHARE`). NUL bytes alone do not count: a log truncated while
    its writer kept its offset starts with a hole of them."""
    if detect_encoding(sample)[0] != "utf-8":
        return False
    text = sample.replace(b"\x00", b"").decode("utf-8", "replace")
    text = text[:-3] + text[-3:].rstrip("\ufffd")  # a character cut by the end of the sample
    if not text:
        return False
    odd = sum(1 for char in text if char == "\ufffd" or (char < " " and char not in TEXT_CONTROLS))
    return odd > BINARY_SHARE * len(text)


def read_head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    """The first `size` bytes of a regular file (b"" when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def binary_refusal(path: Path) -> str | None:
    """Why `path` is not followed as a training log (it holds binary data), or None. Call it only for a
    regular file (`safe_files.special_file_refusal` first): it reads the file's start."""
    if looks_binary(read_head(path)):
        return f"{path} is not a text log (it holds binary data: a program, an archive, an image ...)"
    return None
