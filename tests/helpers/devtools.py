"""A small Chrome DevTools protocol client for tests: headless Chromium on a debugging pipe (stdlib only).

Chromium reads commands on fd 3 and writes replies on fd 4 (`--remote-debugging-pipe`), each a JSON text
ended by a NUL byte. `Browser.call` sends one command to the attached page and returns its result;
events that arrive meanwhile are kept in `Browser.events`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
)


def chromium_missing() -> str | None:
    """Why no headless browser can start here, or None."""
    if not Path(CHROMIUM).exists():
        return f"no headless browser: {CHROMIUM} not installed (apt-get install chromium)"
    return None


class Browser:
    """One headless Chromium, its own profile folder, one page once `open_page` has run."""

    def __init__(self, profile: Path, window: tuple[int, int] = (1400, 900)) -> None:
        to_browser_read, self._write_fd = os.pipe()
        self._read_fd, from_browser_write = os.pipe()

        def wire_pipes() -> None:  # in the child: fd 3 = commands in, fd 4 = replies out
            commands, replies = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(commands, 3)
            os.dup2(replies, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--window-size={window[0]},{window[1]}", f"--user-data-dir={profile}"],
            preexec_fn=wire_pipes,
            close_fds=False,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._pending = b""
        self._last_id = 0
        self.session_id: str | None = None
        self.events: list[dict[str, Any]] = []

    def call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        """Send one command (to the attached page, once attached) and return its result."""
        self._last_id += 1
        message: dict[str, Any] = {"id": self._last_id, "method": method, "params": params or {}}
        if self.session_id is not None:
            message["sessionId"] = self.session_id
        os.write(self._write_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._pending:
                raw, self._pending = self._pending.split(b"\0", 1)
                reply = json.loads(raw)
                if "method" in reply:
                    self.events.append(reply)
                elif reply.get("id") == self._last_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"Chromium did not answer {method} within {timeout} s")
            if select.select([self._read_fd], [], [], remaining)[0]:
                chunk = os.read(self._read_fd, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed the debugging pipe")
                self._pending += chunk

    def open_page(self, url: str, before_load: str = "") -> None:
        """A new tab attached to this client; `before_load` runs in every document before its own scripts."""
        target = self.call("Target.createTarget", {"url": "about:blank"})
        attached = self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        self.session_id = attached["sessionId"]
        self.call("Page.enable")
        if before_load:
            self.call("Page.addScriptToEvaluateOnNewDocument", {"source": before_load})
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited); raises on a thrown error."""
        reply = self.call(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            raise RuntimeError(details.get("exception", {}).get("description") or details.get("text"))
        return reply["result"].get("value")

    def set_viewport(self, width: int, height: int) -> None:
        """Resize the page as a browser window resize would (the page sees `resize`)."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def press(
        self, key: str, code: str = "", key_code: int = 0, text: str | None = None, ctrl: bool = False
    ) -> None:
        """One key press and release, as typed on a keyboard, to the focused element."""
        common = {"key": key, "code": code, "windowsVirtualKeyCode": key_code, "modifiers": 2 if ctrl else 0}
        down: dict[str, Any] = {"type": "keyDown", **common}
        if text is not None and not ctrl:
            down["text"] = text
        self.call("Input.dispatchKeyEvent", down)
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", **common})

    def press_ctrl(self, letter: str) -> None:
        """ctrl+letter, as the keyboard sends it."""
        self.press(letter, f"Key{letter.upper()}", ord(letter.upper()), ctrl=True)

    def press_escape(self) -> None:
        self.press("Escape", "Escape", 27)

    def type_text(self, text: str) -> None:
        """Each character as a key press (Enter for a newline)."""
        for char in text:
            if char == "\n":
                self.press("Enter", "Enter", 13, "\r")
            else:
                self.press(char, "", ord(char.upper()) if char.isalnum() else 0, char)

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            )

    def drag(self, start: tuple[float, float], end: tuple[float, float], shift: bool = False) -> None:
        """Press the left button at `start`, move to `end` and release there (shift held if asked)."""
        modifiers = 8 if shift else 0
        steps = [("mousePressed", start), ("mouseMoved", end), ("mouseReleased", end)]
        for kind, (x, y) in steps:
            event = {"type": kind, "x": x, "y": y, "button": "left", "modifiers": modifiers, "clickCount": 1}
            self.call("Input.dispatchMouseEvent", event)

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        for fd in (self._write_fd, self._read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
                return
