"""A Linux terminal driver whose input thread sleeps until there is input.

Textual's `LinuxDriver` polls the terminal ten times a second (`select` with a 0.1 s timeout), for two
reasons: its parser turns a lone Esc into the Escape key only once `ESCDELAY` has passed with nothing after
it, and the thread must notice when the driver stops. On a virtual machine a wake-up costs 0.2-0.35 ms of
CPU, so an idle dashboard spent 0.4-0.6 % of a core on those ten polls alone (per-thread `schedstat`, 2-core
VM), more than all the rest while another tab is shown. This driver polls only while an escape sequence can
still time out (the escape delay after the last input); otherwise it blocks until input arrives or the
driver stops, which wakes it through a pipe. Everything else is Textual's driver, unchanged.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from codecs import getincrementaldecoder
from collections.abc import Callable
from time import monotonic

from textual import constants
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

POLL_SECONDS = 0.1  # Textual's own polling period, kept while an escape sequence may be pending
READ_BYTES = 4096


class InputWaits:
    """How long the input thread may block: until input arrives (None), unless input came recently enough
    that the parser may still have to time out an escape sequence, in which case it polls."""

    def __init__(self, escape_delay: float, poll: float = POLL_SECONDS) -> None:
        self.escape_delay = escape_delay
        self.poll = poll
        self._last_input = -float("inf")

    def input_at(self, now: float) -> None:
        """Input was read at `now` (monotonic seconds)."""
        self._last_input = now

    def timeout(self, now: float) -> float | None:
        """The select timeout at `now`. The parser is ticked after every select, so once a select returns more
        than escape_delay + poll after the last input, any sequence that input began has timed out."""
        return self.poll if now - self._last_input <= self.escape_delay + self.poll else None


class WakingEvent(threading.Event):
    """The driver's exit event: setting it also writes to a pipe, which wakes a blocked input thread."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        with contextlib.suppress(OSError):  # closed, or full of wake-ups nobody read yet: it wakes anyway
            os.write(self._wake_fd, b"x")


class QuietLinuxDriver(LinuxDriver):
    """Textual's Linux driver with an input thread that blocks while there is nothing to read."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.exit_event = WakingEvent(self._wake_write)

    def run_input_thread(self) -> None:
        """Read the terminal and hand its events to the app until the driver stops."""
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        waits = InputWaits(constants.ESCAPE_DELAY)
        with selectors.PollSelector() as selector:  # epoll refuses regular files and /dev/null as stdin
            selector.register(self.fileno, selectors.EVENT_READ, "input")
            selector.register(self._wake_read, selectors.EVENT_READ, "wake")
            self._drain_wakes()
            while not self.exit_event.is_set():
                ready = {key.data for key, _ in selector.select(waits.timeout(monotonic()))}
                if "wake" in ready:
                    self._drain_wakes()
                if "input" in ready:
                    self._read_input(selector, parser, decode, waits)
                for event in parser.tick():
                    self.process_message(event)
        with contextlib.suppress(EOFError, ParseError):  # ends the parser; what it still held is dropped
            for _event in parser.feed(""):
                pass

    def _read_input(
        self,
        selector: selectors.BaseSelector,
        parser: XTermParser,
        decode: Callable[[bytes], str],
        waits: InputWaits,
    ) -> None:
        """Read what the terminal has and pass its events on; stop watching a terminal that has closed."""
        data = os.read(self.fileno, READ_BYTES)
        if not data:  # end of input (stdin was not a terminal): nothing more will come
            selector.unregister(self.fileno)
            return
        waits.input_at(monotonic())
        for event in parser.feed(decode(data)):
            self.process_message(event)

    def _drain_wakes(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_read, READ_BYTES):
                pass

    def close(self) -> None:
        super().close()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)


def driver_for(stock: type[Driver]) -> type[Driver]:
    """The driver the dashboard runs with: this one where Textual would pick its Linux driver, else `stock`
    (Windows, the web driver of `serve`, a driver named in TEXTUAL_DRIVER)."""
    return QuietLinuxDriver if stock is LinuxDriver else stock
