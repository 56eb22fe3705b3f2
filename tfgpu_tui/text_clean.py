"""Terminal hygiene for text from outside (command lines, user names, notebook and file names, log lines,
child output): escape sequences and control characters are removed before the text reaches a widget or
stdout, so no other process can set a window title, clear the screen or move the cursor through us.

Pure functions, no I/O; safe on any str.
"""

from __future__ import annotations

import re
from typing import Any

# ESC-introduced sequences (7-bit) and their 8-bit C1 forms:
# CSI ... final byte; OSC/DCS/SOS/PM/APC ... up to BEL or ST (or the end of the text when unterminated);
# any other ESC + intermediate bytes + final byte.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates
# ("trojan source": text that displays in another order than it reads).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAK = re.compile(r"[\t\n]")


def clean_text(text: str) -> str:
    """`text` without escape sequences and control characters; tabs and newlines are kept."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub("", _SEQUENCE.sub("", text))


def clean_line(text: str) -> str:
    """`text` as one line: cleaned as by `clean_text`, tabs and newlines become spaces."""
    text = clean_text(text)
    return _LINE_BREAK.sub(" ", text) if ("\n" in text or "\t" in text) else text


def clean_words(words: list[str]) -> list[str]:
    """Each word of a command line cleaned by `clean_line`."""
    return [clean_line(word) for word in words]


def clean_json(value: Any) -> Any:
    """A decoded JSON value with every string in it (keys too) cleaned by `clean_text`: JSON escapes
    (``\u001b``) decode to the very controls that cleaning the encoded text cannot see."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_json(item) for item in value]
    if isinstance(value, dict):
        return {clean_text(str(key)): clean_json(item) for key, item in value.items()}
    return value
