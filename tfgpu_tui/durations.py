"""Durations as text, one style per kind, shared by the TUI and the commands so they always agree.

``running_text``: how long a process has run (the Monitor's TIME column, the kill dialog, ``gpus``).
``span_text``: a duration in a sentence (epoch times, ETAs, checkpoint ages, stall times).
``idle_text``: how long something sat idle, to the minute.
``minutes_text``: how long a rule's condition has held (alerts, notify's messages): seconds, then minutes.
"""

from __future__ import annotations

from functools import lru_cache

NA = "N/A"


def running_text(seconds: float | None, missing: str = NA) -> str:
    """Elapsed time: "45s" (seconds) in the first minute, "12m" under an hour, "1h 02m" under a day, then
    "3d 04h". Past its first minute a process's seconds tell nothing, and a cell that changes every second
    for every process repaints the whole table at each refresh."""
    if seconds is None:
        return missing
    total = max(0, int(seconds))
    return _running(total if total < 60 else total - total % 60)


# A table of hundreds of processes formats the same few values every second: one string per minute of
# running time, and 60 for the first minute.
@lru_cache(maxsize=512)
def _running(total: int) -> str:
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m" if minutes else f"{secs}s"


def span_text(seconds: float | None, missing: str = "-") -> str:
    """``45s``, ``3m 05s``, ``2h 03m``, ``3d 04h``; sub-second as ``12ms``; `missing` for None."""
    if seconds is None:
        return missing
    if 0 < seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    total = int(round(seconds))
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m {total % 60:02d}s"
    if total < 86400:
        return f"{total // 3600}h {total % 3600 // 60:02d}m"
    return f"{total // 86400}d {total % 86400 // 3600:02d}h"


def idle_text(seconds: float) -> str:
    """How long something has sat idle, to the minute: ``12m``, ``5h 22m``, ``3d 04h``."""
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


def minutes_text(seconds: float, words: bool = False) -> str:
    """How long a condition has held: ``45 s`` for two minutes, then ``3 min``; with `words` (a message
    sent as a sentence) ``45 seconds``, ``3 minutes``."""
    if seconds >= 120:
        return f"{seconds / 60:.0f} {'minutes' if words else 'min'}"
    return f"{seconds:.0f} {'seconds' if words else 's'}"
