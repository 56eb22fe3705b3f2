"""Child processes for the Training tests: a sleeper whose output can be redirected, killed afterwards."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

SLEEPER = [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"]


def started_children() -> Iterator[list[subprocess.Popen]]:
    """For a fixture: yields a list the test appends its children to; kills and reaps them afterwards."""
    started: list[subprocess.Popen] = []
    yield started
    for child in started:
        child.kill()
        child.wait()
