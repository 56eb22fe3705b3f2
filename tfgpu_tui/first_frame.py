"""What the dashboard suspends while it starts, until its first frame is on screen.

- Garbage collection. Start-up allocates objects that live as long as the program (modules, classes,
  styles, widgets), so the collector's passes over them free next to nothing; they cost about 30 ms of the
  first frame (some 190 young and 15 middle passes and a full one, at 8 GPUs x 64 processes). Once the frame
  is on screen, one full pass frees what start-up left behind, and what survives is frozen (`gc.freeze`):
  later full passes no longer walk the thousands of objects that start-up made.
- The interpreter's thread switch interval, 5 ms, is 0.5 ms meanwhile: Textual hands each frame to a writer
  thread, which otherwise waits up to 5 ms for the interpreter while the event loop lays out the next one
  (the first frame reached the terminal 8 ms sooner in a median of 9 starts; 0.343 -> 0.335 s in another
  A/B of 15: a small gain, within the noise of one run).
"""

from __future__ import annotations

import gc
import sys

START_SWITCH_SECONDS = 0.0005

_held: tuple[bool, float] | None = None  # (collection was enabled, the switch interval) while held


def hold() -> None:
    """Suspend both until `release`."""
    global _held
    if _held is None:
        _held = (gc.isenabled(), sys.getswitchinterval())
        gc.disable()
        sys.setswitchinterval(START_SWITCH_SECONDS)


def release() -> None:
    """Collect once, freeze the survivors and restore both; nothing unless `hold` suspended them."""
    global _held
    if _held is not None:
        collecting, interval = _held
        _held = None
        sys.setswitchinterval(interval)
        if collecting:
            gc.collect()
            gc.freeze()
            gc.enable()
