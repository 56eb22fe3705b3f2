"""Exit statuses: the ones tfgpu-tui's commands return, and how a child process ended, in words (one
phrasing for every part that reports it)."""

from __future__ import annotations

import signal

EXIT_OK = 0
EXIT_USAGE = (
    2  # argparse's code for a bad command line; also an option's file or interpreter that is unusable
)
EXIT_CHECK_WARNINGS = 1  # `check`: a warning, no failure
EXIT_CHECK_FAILED = 3  # `check`: a failed check (2 stays a bad command line)


def describe_exit(returncode: int) -> str:
    """'exited with status 1' or 'was killed by SIGSEGV' (a negative code is a signal, as in subprocess)."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"
