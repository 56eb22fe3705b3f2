"""Short human-readable forms of GPU and process readings, with `N/A` for readings that are missing."""

from __future__ import annotations

from functools import lru_cache

from rich.text import Text

from tfgpu_tui.durations import minutes_text, running_text

NA = "N/A"
BAR_FULL = "█"
BAR_EMPTY = "░"


# Cached: a table of hundreds of processes formats the same few values every second.
@lru_cache(maxsize=4096)
def number_text(value: float | None, unit: str = "", digits: int = 0) -> str:
    """A reading with its unit ("87 %", "65 °C"), or N/A."""
    if value is None:
        return NA
    return f"{value:.{digits}f}{unit}"


duration_text = running_text  # a process's running time, as `tfgpu-tui gpus` prints it too


def zero_util_text(seconds: float | None) -> str:
    """How long a GPU has read 0 % while TensorFlow holds its memory ("for 45 s", "for 3 min"); "" if not."""
    if seconds is None:
        return ""
    return f"for {minutes_text(seconds)}"


# The looks of a load level. Plain defaults for use without an app; the Monitor sets the theme's colours
# ($success, $warning, $error) with `set_level_colors` when it mounts and when the theme changes.
LEVEL_STYLES = {"unknown": "dim", "ok": "green", "warn": "yellow", "critical": "bold red"}


def set_level_colors(ok: str, warn: str, critical: str) -> None:
    """Use these colours (Rich colour strings, e.g. a theme's hex values) for the load levels."""
    LEVEL_STYLES.update(ok=ok, warn=warn, critical=f"bold {critical}")


def level_style(percent: float | None, warn: float = 75.0, critical: float = 90.0) -> str:
    """Colour for a load figure: the theme's success colour while low, warning from `warn`, error from
    `critical`."""
    if percent is None:
        return LEVEL_STYLES["unknown"]
    if percent >= critical:
        return LEVEL_STYLES["critical"]
    if percent >= warn:
        return LEVEL_STYLES["warn"]
    return LEVEL_STYLES["ok"]


def bar(percent: float | None, width: int, style: str) -> Text:
    """A horizontal bar `width` cells wide, filled to `percent` (empty and dim when unknown)."""
    if percent is None:
        return Text(BAR_EMPTY * width, style="dim")
    filled = round(max(0.0, min(100.0, percent)) * width / 100)
    text = Text(BAR_FULL * filled, style=style)
    text.append(BAR_EMPTY * (width - filled), style="dim")
    return text
