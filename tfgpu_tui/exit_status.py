"""How a child process ended, in words: one phrasing for every part that reports it."""

from __future__ import annotations

import signal


def describe_exit(returncode: int) -> str:
    """'exited with status 1' or 'was killed by SIGSEGV' (a negative code is a signal, as in subprocess)."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"
