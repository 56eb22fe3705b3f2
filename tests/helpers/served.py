"""Test helpers: a real `tfgpu-tui serve` process, and a websocket client that acts like textual-serve's page
(the same JSON messages) and keeps the screen in a terminal emulator (pyte), so tests read what a browser
would show."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pyte

URL_LINE = re.compile(r"tfgpu-tui: open (http://\S+)/\?token=(\S+)")
COLUMNS, ROWS = 160, 50


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_process_group(process: subprocess.Popen) -> None:
    """SIGTERM the process group, then SIGKILL what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


@dataclass
class Served:
    """A running `serve`: its base URL, the token it printed, its working directory and output."""

    process: subprocess.Popen
    base: str
    port: int
    token: str
    cwd: Path
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def serve(tmp_path: Path, *arguments: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """`python -m tfgpu_tui serve --port P *arguments` in `tmp_path/cwd`; waits for the printed URL."""
    port = free_loopback_port()
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    environment = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), **(env or {})}
    environment.pop("TFGPU_TUI_CONFIG", None)
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tfgpu_tui", "serve", "--port", str(port), *arguments],
            env=environment,
            cwd=cwd,
            start_new_session=True,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while not (match := URL_LINE.search(log.read_text(errors="replace"))):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"serve did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.05)
        yield Served(process, f"http://127.0.0.1:{port}", port, match.group(2), cwd, log)
    finally:
        stop_process_group(process)


@dataclass
class WebTerminal:
    """One browser session over the websocket: keys in, screen (pyte) and JSON messages out."""

    websocket: aiohttp.ClientWebSocketResponse
    screen: pyte.Screen = field(default_factory=lambda: pyte.Screen(COLUMNS, ROWS))
    messages: list[list] = field(default_factory=list)
    received_bytes: bytearray = field(default_factory=bytearray)

    def __post_init__(self) -> None:
        self.stream = pyte.ByteStream(self.screen)

    def text(self) -> str:
        return "\n".join(self.screen.display)

    async def send_keys(self, keys: str) -> None:
        """What xterm.js sends for typed keys (its onData): ["stdin", data]."""
        await self.websocket.send_str(json.dumps(["stdin", keys]))

    async def pump(self, seconds: float) -> None:
        """Read what arrives for `seconds`."""
        with contextlib.suppress(asyncio.TimeoutError):
            await self.wait_for(lambda: False, seconds)

    async def wait_for(self, condition: Callable[[], object], timeout: float = 60.0) -> None:
        """Read messages until `condition()` holds; raise asyncio.TimeoutError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise asyncio.TimeoutError
            try:
                message = await self.websocket.receive(timeout=min(remaining, 0.5))
            except asyncio.TimeoutError:
                continue
            if message.type == aiohttp.WSMsgType.BINARY:
                self.received_bytes += message.data
                self.stream.feed(message.data)
            elif message.type == aiohttp.WSMsgType.TEXT:
                self.messages.append(json.loads(message.data))
            elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                raise ConnectionError("the server closed the websocket")

    async def wait_for_text(self, *needles: str, timeout: float = 60.0) -> None:
        """Until every needle is on the screen (spaces squeezed, so wrapping inside a toast is tolerated)."""

        def squeezed() -> str:
            return re.sub(r"\s+", "", self.text())

        try:
            await self.wait_for(lambda: all(re.sub(r"\s+", "", n) in squeezed() for n in needles), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"{needles} not on the screen within {timeout} s:\n{self.text()}") from None


async def open_session(
    client: aiohttp.ClientSession, served: Served, headers: dict[str, str] | None = None
) -> WebTerminal:
    """Connect like the page does (its Origin, the token cookie already in `client`) and wait for the first
    screen."""
    origin = {"Origin": f"http://127.0.0.1:{served.port}"}
    websocket = await client.ws_connect(
        f"ws://127.0.0.1:{served.port}/ws?width={COLUMNS}&height={ROWS}",
        headers={**origin, **(headers or {})},
    )
    terminal = WebTerminal(websocket)
    await websocket.send_str(json.dumps(["resize", {"width": COLUMNS, "height": ROWS}]))
    await terminal.wait_for_text("Environment", "Monitor", "Training", timeout=30)
    return terminal


async def logged_in_client(served: Served) -> aiohttp.ClientSession:
    """A client holding the session cookie, obtained the way a browser does (`/?token=`, then redirected)."""
    client = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    async with client.get(f"{served.base}/?token={served.token}") as response:
        assert response.status == 200, await response.text()
    return client
