"""Short human-readable forms of GPU and process readings, with `N/A` for readings that are missing."""

from __future__ import annotations

from functools import lru_cache

from rich.text import Text

NA = "N/A"
BAR_FULL = "█"
BAR_EMPTY = "░"


# The formatters are cached: a table of hundreds of processes formats the same few values every second.
@lru_cache(maxsize=4096)
def mib_text(mib: float | None) -> str:
    """Memory in MiB below 10 GiB, in GiB above: "512 MiB", "20.0 GiB"."""
    if mib is None:
        return NA
    if mib < 10240:
        return f"{mib:.0f} MiB"
    return f"{mib / 1024:.1f} GiB"


@lru_cache(maxsize=4096)
def number_text(value: float | None, unit: str = "", digits: int = 0) -> str:
    """A reading with its unit ("87 %", "65 °C"), or N/A."""
    if value is None:
        return NA
    return f"{value:.{digits}f}{unit}"


def duration_text(seconds: float | None) -> str:
    """Elapsed time: "4:05" (minutes and seconds) under an hour, then to the minute - "1h 02m" - and to the
    hour from a day on ("3d 04h"). Past an hour the seconds tell nothing, and a cell that changes every
    second for every long-running process repaints the whole table each refresh."""
    if seconds is None:
        return NA
    total = max(0, int(seconds))
    return _duration(total if total < 3600 else total - total % 60)


@lru_cache(maxsize=4096)
def _duration(total: int) -> str:
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}:{secs:02d}"


def level_style(percent: float | None, warn: float = 75.0, critical: float = 90.0) -> str:
    """Colour for a load figure: green while low, yellow from `warn`, red from `critical`."""
    if percent is None:
        return "dim"
    if percent >= critical:
        return "bold red"
    if percent >= warn:
        return "yellow"
    return "green"


def bar(percent: float | None, width: int, style: str) -> Text:
    """A horizontal bar `width` cells wide, filled to `percent` (empty and dim when unknown)."""
    if percent is None:
        return Text(BAR_EMPTY * width, style="dim")
    filled = round(max(0.0, min(100.0, percent)) * width / 100)
    text = Text(BAR_FULL * filled, style=style)
    text.append(BAR_EMPTY * (width - filled), style="dim")
    return text
