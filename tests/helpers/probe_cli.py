"""`tfgpu-tui probe` run in-process on this test's interpreter (`--python sys.executable`): the tests never
depend on which Python the machine offers on PATH."""

from __future__ import annotations

import sys

from tfgpu_tui.cli import main


def run_probe(*args: str) -> int:
    """The exit status of ``tfgpu-tui probe --python <this interpreter> ARGS``."""
    return main(["probe", "--python", sys.executable, *args])
