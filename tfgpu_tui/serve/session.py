"""One browser session of `serve`: a dashboard process run by Textual's web driver, and the packets between
it and the browser.

The process runs with `TEXTUAL_DRIVER=textual.drivers.web_driver:WebDriver`, Textual's documented way to
run an app for a web front end, and talks over its standard streams. It writes `__GANGLION__\\n` once, then
packets of one type byte, a 4-byte big-endian length and a payload:

- `D`: screen output, passed to the browser's terminal as it is;
- `M`: a JSON object: `exit`, `open_url`, `deliver_file_start` (a file offered as a download);
- `P`: a bencoded tuple, `("deliver_chunk", key, chunk)`: one chunk of a download.

It reads packets of the same shape on stdin: `D` (keys, as typed) and `M` (`resize`, `focus`, `blur`,
`quit`, `deliver_chunk_request`).

The process starts in a session (process group) of its own, without the server's token in its environment,
and `stop` ends it with every process it started.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import logging
import os
import re
import signal
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

import psutil
from aiohttp import web

from tfgpu_tui.serve.guard import TOKEN_ENV_VAR
from tfgpu_tui.text_clean import clean_line

log = logging.getLogger("tfgpu-tui.serve")
WEB_DRIVER = "textual.drivers.web_driver:WebDriver"
READY_LINE = b"__GANGLION__\n"
READY_LINES_MAX = 10  # lines the process may print before it says it is ready
MAX_PACKET_BYTES = 16 * 1024 * 1024  # far above a full screen at the largest size a browser may ask for
CHUNK_BYTES = 64 * 1024
CHUNK_TIMEOUT_SECONDS = 10.0
MAX_OFFERED_DOWNLOADS = 8  # per session: an older offer is dropped when a newer one comes
STDERR_TAIL_BYTES = 4096
QUIT_GRACE_SECONDS = 3.0
TERM_GRACE_SECONDS = 2.0
SAFE_FILE_NAME = re.compile(r"[^A-Za-z0-9._-]")
MIME_TYPE = re.compile(r"[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+")
CHARSET = re.compile(r"[A-Za-z0-9_-]{1,40}")


def session_environment(width: int, height: int) -> dict[str, str]:
    """The server's environment without its token, with Textual's web driver and the browser's size."""
    environment = {name: value for name, value in os.environ.items() if name != TOKEN_ENV_VAR}
    environment.update(
        TEXTUAL_DRIVER=WEB_DRIVER,
        TEXTUAL_COLOR_SYSTEM="truecolor",
        COLUMNS=str(width),
        ROWS=str(height),
    )
    return environment


def packet(kind: bytes, payload: bytes) -> bytes:
    """One packet of the web driver's protocol."""
    return kind + len(payload).to_bytes(4, "big") + payload


def decode_chunk(payload: bytes) -> tuple[str, bytes | str] | None:
    """`(key, chunk)` from a `P` packet holding `("deliver_chunk", key, chunk)`, bencoded as the web driver
    does (`t` ... `e` around `sN:` text and `N:` bytes); None for anything else."""
    if not (payload.startswith(b"t") and payload.endswith(b"e")):
        return None
    items: list[bytes | str] = []
    position, end = 1, len(payload) - 1
    while position < end:
        is_text = payload[position : position + 1] == b"s"
        position += is_text
        colon = payload.find(b":", position, end)
        size = payload[position:colon]
        if colon < 0 or not size.isdigit() or len(size) > 10 or colon + 1 + int(size) > end:
            return None
        value = payload[colon + 1 : colon + 1 + int(size)]
        items.append(value.decode("utf-8", "replace") if is_text else value)
        position = colon + 1 + int(size)
    if len(items) == 3 and items[0] == "deliver_chunk" and isinstance(items[1], str):
        return items[1], items[2]
    return None


def _is_codec(name: str) -> bool:
    try:
        codecs.lookup(name)
    except LookupError:
        return False
    return True


@dataclass
class Download:
    """A file the dashboard offers the browser (Textual's `deliver_text` / `deliver_binary`)."""

    file_name: str
    mime_type: str
    encoding: str
    name: str | None
    chunks: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    taken: bool = False

    @classmethod
    def from_meta(cls, meta: dict[str, object]) -> Download:
        """From a `deliver_file_start` packet; names and types the browser will see are made safe."""
        file_name = SAFE_FILE_NAME.sub("_", PurePath(str(meta.get("path") or "download")).name)
        mime_type = str(meta.get("mime_type") or "")
        encoding = str(meta.get("encoding") or "")
        name = meta.get("name")
        return cls(
            file_name=file_name.lstrip(".") or "download",
            mime_type=mime_type if MIME_TYPE.fullmatch(mime_type) else "application/octet-stream",
            encoding=encoding if CHARSET.fullmatch(encoding) and _is_codec(encoding) else "",
            name=name if isinstance(name, str) else None,
        )

    @property
    def content_type(self) -> str:
        return f"{self.mime_type}; charset={self.encoding}" if self.encoding else self.mime_type


class Session:
    """One browser tab's dashboard: `command` run under the web driver, its output sent to `websocket`."""

    def __init__(self, command: Sequence[str], websocket: web.WebSocketResponse) -> None:
        self.command = list(command)
        self.websocket = websocket
        self.process: asyncio.subprocess.Process | None = None
        self.downloads: dict[str, Download] = {}
        self._stderr_tail: deque[bytes] = deque(maxlen=STDERR_TAIL_BYTES // 256)
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped: asyncio.Future[None] | None = None

    async def start(self, width: int, height: int) -> None:
        """Start the dashboard at the browser's size, and relay its output."""
        self.process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=session_environment(width, height),
            start_new_session=True,
        )
        self._tasks = [asyncio.create_task(self._relay()), asyncio.create_task(self._keep_stderr())]

    # ----- to the dashboard -----
    async def _send(self, kind: bytes, payload: bytes) -> bool:
        stdin = self.process.stdin if self.process is not None else None
        if stdin is None or stdin.is_closing():
            return False
        try:
            stdin.write(packet(kind, payload))
            await stdin.drain()
        except (OSError, RuntimeError):
            return False
        return True

    async def send_keys(self, text: str) -> bool:
        """What the user typed (or a mouse report), as the terminal would send it (a lone surrogate, which
        JSON can carry, becomes U+FFFD)."""
        return await self._send(b"D", text.encode("utf-8", "replace"))

    async def send_meta(self, meta: dict[str, object]) -> bool:
        return await self._send(b"M", json.dumps(meta).encode("utf-8"))

    # ----- from the dashboard -----
    async def _relay(self) -> None:
        """Pass the dashboard's packets on until its output ends, then close the websocket."""
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        try:
            for _ in range(READY_LINES_MAX):
                line = await stdout.readline()
                if not line or line == READY_LINE:
                    break
            while True:
                header = await stdout.readexactly(5)
                size = int.from_bytes(header[1:], "big")
                if size > MAX_PACKET_BYTES:
                    log.warning("session: a packet of %d bytes from the dashboard; session ended", size)
                    break
                payload = await stdout.readexactly(size)
                with contextlib.suppress(ConnectionError, RuntimeError):  # the browser left: keep reading
                    await self._on_packet(header[:1], payload)
        except (asyncio.IncompleteReadError, ValueError):
            pass  # the output ended (or was not the driver's protocol)
        finally:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self.websocket.close()

    async def _on_packet(self, kind: bytes, payload: bytes) -> None:
        if kind == b"D":
            await self.websocket.send_bytes(payload)
        elif kind == b"M":
            await self._on_meta(json.loads(payload))
        elif kind == b"P" and (chunk := decode_chunk(payload)) is not None:
            key, data = chunk
            download = self.downloads.get(key)
            if download is not None and download.taken:
                if isinstance(data, str):
                    data = data.encode(download.encoding or "utf-8", "replace")
                await download.chunks.put(data)

    async def _on_meta(self, meta: object) -> None:
        kind = meta.get("type") if isinstance(meta, dict) else None
        if kind == "exit":
            await self.websocket.close()
        elif kind == "open_url" and isinstance(meta, dict):
            url = meta.get("url")
            if isinstance(url, str) and url.startswith(("https://", "http://")):
                await self.websocket.send_json(["open_url", {"url": url, "new_tab": True}])
        elif kind == "deliver_file_start" and isinstance(meta, dict):
            key = meta.get("key")
            if isinstance(key, str) and key:
                self._offer(key, Download.from_meta(meta))
                await self.websocket.send_json(["deliver_file_start", key])

    def _offer(self, key: str, download: Download) -> None:
        waiting = [k for k, d in self.downloads.items() if not d.taken]
        if len(waiting) >= MAX_OFFERED_DOWNLOADS:
            del self.downloads[waiting[0]]
        self.downloads[key] = download

    async def _keep_stderr(self) -> None:
        """Read the dashboard's stderr (a full pipe would block it), keeping its last lines for the log."""
        assert self.process is not None and self.process.stderr is not None
        while chunk := await self.process.stderr.read(256):
            self._stderr_tail.append(chunk)

    # ----- downloads -----
    def take_download(self, key: str) -> Download | None:
        """The download offered under `key`, once: a second request for it finds nothing."""
        download = self.downloads.get(key)
        if download is None or download.taken:
            return None
        download.taken = True
        return download

    async def download_chunks(self, key: str, download: Download) -> AsyncIterator[bytes]:
        """The file's chunks, asked of the dashboard one at a time; ends on an empty chunk."""
        try:
            while await self.send_meta(
                {"type": "deliver_chunk_request", "key": key, "size": CHUNK_BYTES, "name": download.name}
            ):
                try:
                    chunk = await asyncio.wait_for(download.chunks.get(), CHUNK_TIMEOUT_SECONDS)
                except asyncio.TimeoutError:
                    log.warning("session: the dashboard sent no part of a download in time")
                    return
                if not chunk:
                    return
                yield chunk
        finally:
            self.downloads.pop(key, None)

    # ----- the end -----
    def descendants(self) -> list[psutil.Process]:
        """Every process the dashboard started (children of children included), while it lives."""
        if self.process is None:
            return []
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.Error:
            return []

    async def stop(self) -> None:
        """End the session (once, however many callers ask)."""
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopped)

    async def _stop(self) -> None:
        """Ask the dashboard to quit; if it has not within a few seconds, end its process group; then end
        whatever it started (its probe and check children lead process groups of their own)."""
        for download in self.downloads.values():
            download.chunks.put_nowait(None)
        process = self.process
        if process is None:
            return
        started = self.descendants()
        if process.returncode is None and await self.send_meta({"type": "quit"}):
            await exited(process, QUIT_GRACE_SECONDS)
        if process.returncode is None:
            await end_group(process)
        end_processes(started + self.descendants())
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if process.returncode and self._stderr_tail:
            tail = b"".join(self._stderr_tail).decode("utf-8", "replace").strip().splitlines()[-3:]
            log.warning("session ended with code %s: %s", process.returncode, clean_line(" | ".join(tail)))


async def exited(process: asyncio.subprocess.Process, seconds: float) -> bool:
    """Whether the process exits within `seconds` (its return code, not its pipes: a process it started
    may still hold those)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while process.returncode is None and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    return process.returncode is not None


async def end_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, SIGKILL it if the process is still there after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        if await exited(process, TERM_GRACE_SECONDS):
            return


def end_processes(processes: list[psutil.Process]) -> None:
    """SIGKILL each process still running (psutil checks it is the same process, not a reused PID), and
    the group it leads."""
    for process in processes:
        with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
            if process.is_running():
                if os.getpgid(process.pid) == process.pid:
                    os.killpg(process.pid, signal.SIGKILL)
                process.kill()
