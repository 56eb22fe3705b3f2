"""Waiting helpers shared by the test modules: poll a condition instead of sleeping a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot


async def wait_until(pilot: Pilot, condition: Callable[[], object], timeout: float = 5.0) -> None:
    """Let the app run until `condition()` is true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)


def wait_for(condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Block (outside any app) until `condition()` is true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)
