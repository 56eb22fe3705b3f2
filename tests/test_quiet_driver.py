"""The terminal driver's input thread (ui/quiet_driver.py): it blocks while idle instead of polling ten times
a second, yet keys, a lone Escape (the parser's escape delay) and stopping the driver work as with
Textual's."""

from __future__ import annotations

import os
import pty
import signal
import sys
import threading
import time
import tty
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual import events
from textual.drivers.linux_driver import LinuxDriver

from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.quiet_driver import POLL_SECONDS, InputWaits, QuietLinuxDriver, driver_for

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a Linux terminal driver")


def test_it_polls_only_while_an_escape_sequence_can_time_out() -> None:
    waits = InputWaits(escape_delay=0.1)
    assert waits.timeout(now=100.0) is None  # nothing read yet: block until input
    waits.input_at(100.0)
    assert waits.timeout(100.0) == POLL_SECONDS
    assert waits.timeout(100.0 + 0.1 + POLL_SECONDS) == POLL_SECONDS  # the last poll that can see it time out
    assert waits.timeout(100.0 + 0.1 + POLL_SECONDS + 0.001) is None


def test_the_dashboard_uses_it_only_in_place_of_textuals_linux_driver() -> None:
    assert driver_for(LinuxDriver) is QuietLinuxDriver
    from textual.drivers.headless_driver import HeadlessDriver

    assert driver_for(HeadlessDriver) is HeadlessDriver  # run_test, the web driver... stay as they are
    assert TfgpuApp(Settings(demo=True)).driver_class is QuietLinuxDriver


class Recording(QuietLinuxDriver):
    """Keeps the events its input thread reads instead of posting them to a running app."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.received: list[events.Event] = []

    def process_message(self, message) -> None:  # type: ignore[no-untyped-def]
        self.received.append(message)

    def keys(self) -> list[str]:
        return [event.key for event in self.received if isinstance(event, events.Key)]


@pytest.fixture
async def driver_on_a_pty() -> AsyncIterator[tuple[Recording, int, threading.Thread]]:
    """The driver's input thread reading a pseudo-terminal (the driver wants a running event loop)."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    terminal, reader = pty.openpty()
    tty.setraw(reader)  # as the driver puts a real terminal: bytes arrive without waiting for a newline
    driver = Recording(TfgpuApp(Settings(demo=True)))  # installs Ctrl+Z handlers: put back below
    driver.fileno = reader
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    try:
        yield driver, terminal, thread
    finally:
        driver.exit_event.set()
        thread.join(5)
        driver.close()
        os.close(terminal)
        os.close(reader)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def wait_until(condition, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def wake_ups(thread: threading.Thread) -> int:
    """The thread's voluntary context switches so far: one each time it blocks and wakes."""
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    switches = next(line for line in status.splitlines() if line.startswith("voluntary_ctxt_switches"))
    return int(switches.split()[1])


async def test_keys_arrive_and_a_lone_escape_times_out_into_the_escape_key(driver_on_a_pty) -> None:
    driver, terminal, _thread = driver_on_a_pty
    os.write(terminal, b"q")
    wait_until(lambda: driver.keys() == ["q"])
    os.write(terminal, b"\x1b")  # nothing follows: Escape once the escape delay has passed
    wait_until(lambda: driver.keys() == ["q", "escape"])
    os.write(terminal, b"\x1b[A")  # a whole sequence: one key
    wait_until(lambda: driver.keys() == ["q", "escape", "up"])


async def test_an_idle_input_thread_sleeps_and_stopping_wakes_it(driver_on_a_pty) -> None:
    driver, terminal, thread = driver_on_a_pty
    os.write(terminal, b"x")
    wait_until(lambda: driver.keys() == ["x"])
    time.sleep(0.1 + 2 * POLL_SECONDS + 0.1)  # past the escape delay: it blocks from here on
    before = wake_ups(thread)
    time.sleep(1.0)
    assert wake_ups(thread) - before <= 1  # Textual's driver polls: 10 a second
    driver.exit_event.set()
    thread.join(2)
    assert not thread.is_alive()


async def test_input_that_is_not_a_terminal_ends_without_spinning(tmp_path: Path) -> None:
    """stdin from /dev/null or a file (which epoll refuses): read to its end, then the thread sleeps."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    script = tmp_path / "keys"
    script.write_bytes(b"ab")
    driver = Recording(TfgpuApp(Settings(demo=True)))
    try:
        for source, keys in ((script, ["a", "b"]), (Path(os.devnull), [])):
            driver.received.clear()
            fd = os.open(source, os.O_RDONLY)
            driver.fileno = fd
            thread = threading.Thread(target=driver.run_input_thread, daemon=True)
            thread.start()
            wait_until(lambda: driver.keys() == keys)  # noqa: B023 - waited for within the iteration
            time.sleep(0.1 + 2 * POLL_SECONDS + 0.1)
            before = wake_ups(thread)
            time.sleep(0.5)
            assert wake_ups(thread) - before <= 1, source
            driver.exit_event.set()
            thread.join(2)
            assert not thread.is_alive()
            driver.exit_event.clear()
            os.close(fd)
    finally:
        driver.close()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
