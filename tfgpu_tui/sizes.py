"""Memory sizes as text, one style per use, shared by the TUI, the checks, the alerts and the commands.
The figures come in MiB, as NVML gives them."""

from __future__ import annotations

from functools import lru_cache

NA = "N/A"


def gib_figure(mib: float | None, missing: str = NA) -> str:
    """The figure alone, in GiB with one decimal (``12.3``), where the unit is printed once beside it."""
    return missing if mib is None else f"{mib / 1024:.1f}"


def gib_text(mib: float | None, missing: str = NA) -> str:
    """``12.3 GiB``."""
    return missing if mib is None else f"{gib_figure(mib)} GiB"


def used_of_total_text(used_mib: float, total_mib: float) -> str:
    """``12.3/80.0 GiB``."""
    return f"{gib_figure(used_mib)}/{gib_text(total_mib)}"


def size_text(mib: float) -> str:
    """In a sentence: ``512 MiB`` below 1 GiB, ``1.5 GiB`` from there."""
    return gib_text(mib) if mib >= 1024 else f"{mib:.0f} MiB"


# Cached: a table of hundreds of processes formats the same few values every second.
@lru_cache(maxsize=4096)
def mib_text(mib: float | None) -> str:
    """A table's memory column: MiB below 10 GiB, GiB above (``512 MiB``, ``20.0 GiB``)."""
    if mib is None:
        return NA
    return f"{mib:.0f} MiB" if mib < 10240 else gib_text(mib)
