"""Waiting helpers shared by the test modules: poll a condition instead of sleeping a fixed time. The
timeouts are hang guards (60 s by default, for a loaded 2-core machine), never the test's clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from textual.css.query import NoMatches
from textual.pilot import Pilot

T = TypeVar("T")


async def wait_until(pilot: Pilot, condition: Callable[[], T], timeout: float = 60.0) -> T:
    """Let the app run until `condition()` is true and return its value; fail after `timeout` seconds. A
    condition that queries a widget not mounted yet (`NoMatches`) is not true yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except NoMatches:
            value = None  # type: ignore[assignment]
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)


def wait_for(condition: Callable[[], T], timeout: float = 60.0, what: str = "", step: float = 0.02) -> T:
    """Block (outside any app) until `condition()` is true and return its value, polling every `step`
    seconds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what or 'condition not met'}")
        time.sleep(step)
