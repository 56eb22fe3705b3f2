"""Fitting a line of text to a width without cutting a word in two: the words that fit, then " …".

Pure functions, no I/O.
"""

from __future__ import annotations

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
