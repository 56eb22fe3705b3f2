"""Fitting text to a width without cutting a word in two: a line's words that fit, then " …"; a path too
long for a line broken before a "/".

Pure functions, no I/O.
"""

from __future__ import annotations

import re

from rich.cells import cell_len

ELLIPSIS = "…"


def whole_words(text: str, limit: int) -> str:
    """`text` when it fits in `limit` cells; else its first words that fit followed by " …", so that no word
    is cut and the ellipsis stands alone. A first word longer than the whole room is cut (nothing else could
    show any of it)."""
    if cell_len(text) <= limit:
        return text
    if limit < 3:
        return ELLIPSIS[:limit]
    room = limit - 2  # the words, then a space and the ellipsis
    head = text[: room + 1]
    while cell_len(head) > room + 1:  # wide characters take two cells
        head = head[:-1]
    words = head[: head.rfind(" ")].rstrip() if " " in head else ""
    if not words.strip():
        return text[: limit - 1].rstrip() + ELLIPSIS
    return f"{words} {ELLIPSIS}"


# Before each "/" that follows a name: not inside "//" or after ":" (a URL's "https://host" stays together).
_BEFORE_A_SLASH = re.compile(r"(?<![:/])(?=/)")


def break_long_words(text: str, width: int) -> str:
    """`text` with each word longer than `width` cells (a path, mostly) broken into lines before a "/", so
    that a wrapping widget never folds it inside a name; a part with no "/" to break at stays whole.
    Whitespace (spaces, tabs, newlines) is kept as it is."""
    if width < 2:
        return text
    return "".join(_broken(part, width) for part in re.split(r"(\s+)", text))


def _broken(word: str, width: int) -> str:
    if word.isspace() or cell_len(word) <= width:
        return word
    lines, current = [], ""
    for part in filter(None, _BEFORE_A_SLASH.split(word)):  # "/root/venv" -> "/root", "/venv"
        if current and cell_len(current + part) > width:
            lines.append(current)
            current = ""
        current += part
    return "\n".join([*lines, current])
