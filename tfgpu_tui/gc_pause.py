"""The garbage collector paused while the dashboard starts.

Start-up allocates objects that live as long as the program (modules, classes, styles, widgets), so the
collector's passes over them free next to nothing; they cost about 30 ms of the first frame (some 190 young
and 15 middle passes and a full one, measured at 8 GPUs x 64 processes). Paused until the first frame is on
screen, then one full pass frees what start-up left behind, and what survives is frozen (`gc.freeze`): later
full passes no longer walk the thousands of objects that start-up made.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop automatic collection until `resume` (start-up only)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Collect once, freeze the survivors, collect automatically again; nothing unless `pause` stopped it."""
    global _paused
    if _paused:
        _paused = False
        gc.collect()
        gc.freeze()
        gc.enable()
