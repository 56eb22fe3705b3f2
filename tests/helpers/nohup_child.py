"""A training job as users start it: `nohup python SCRIPT ARGS > LOG 2>&1 &` from a shell."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path


def start_nohup(script: Path, log: Path, *args: str, env: dict[str, str] | None = None) -> int:
    """Start `script` with `nohup`, its output to `log`, in the background of a shell; returns its PID."""
    words = " ".join(shlex.quote(word) for word in (sys.executable, str(script), *args))
    line = f"nohup {words} > {shlex.quote(str(log))} 2>&1 & echo $!"
    started = subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, check=True)
    return int(started.stdout.strip())
