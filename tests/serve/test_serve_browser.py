"""`tfgpu-tui serve --demo` seen from a real headless Chromium: the dashboard renders in the page.

The browser is driven over the Chrome DevTools protocol on a pipe (`--remote-debugging-pipe`, stdlib only).
The page draws the terminal on a canvas, so the text is read from xterm.js's own screen buffer: the
terminal object is found through the page script's closure (`window.onresize`) and `Runtime.queryObjects`.
A screenshot is saved to `artifacts/serve_browser.png`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.devtools import Browser, chromium_missing
from tests.helpers.paths import ROOT
from tests.helpers.served import free_loopback_port, stop_process_group

ARTIFACTS = ROOT / "artifacts"
TAB_NAMES = ("Environment", "Monitor", "Training", "Batch probe")
# Reads the visible rows of the page's xterm.js terminal; `this` is the array from Runtime.queryObjects.
READ_SCREEN_JS = """function () {
  const terminal = this.map((session) => session.terminal).find((t) => t && t.buffer);
  if (!terminal) return null;
  const buffer = terminal.buffer.active, rows = [];
  for (let y = 0; y < terminal.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y);
    rows.push(line ? line.translateToString(true) : "");
  }
  return rows.join("\\n");
}"""

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.serial,  # headless Chromium: never two browsers at once on 2 cores
    pytest.mark.skipif(chromium_missing() is not None, reason=str(chromium_missing())),
]


def wait_for_http(url: str, process: subprocess.Popen, token: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"tfgpu-tui serve exited early with code {process.returncode}")
        try:
            with urllib.request.urlopen(request, timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    pytest.fail(f"tfgpu-tui serve did not answer on {url} within {timeout:.0f} s")


def wait_for_token_url(log: Path, process: subprocess.Popen, timeout: float = 60.0) -> str:
    """The URL `serve` prints at start, with its access token (the browser trades it for a cookie)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = re.search(r"tfgpu-tui: open (http://\S+/\?token=\S+)", log.read_text(errors="replace"))
        if match:
            return match.group(1)
        if process.poll() is not None:
            pytest.fail(f"tfgpu-tui serve exited early with code {process.returncode}")
        time.sleep(0.05)
    pytest.fail(f"tfgpu-tui serve printed no URL within {timeout:.0f} s:\n{log.read_text(errors='replace')}")


class DevTools(Browser):
    """tests/helpers/devtools.py's client, every request the page makes recorded and the terminal read."""

    def open_page(self, url: str, before_load: str = "") -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"})
        attached = self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        self.session_id = attached["sessionId"]
        self.call("Network.enable")  # every request the page makes is reported (self.events)
        self.call("Page.navigate", {"url": url})

    def requested_urls(self) -> list[str]:
        """The URL of every request and websocket the page has opened so far."""
        self.remote_object("0")  # read what Chromium has reported up to now
        urls = []
        for event in self.events:
            if event["method"] == "Network.requestWillBeSent":
                urls.append(event["params"]["request"]["url"])
            elif event["method"] == "Network.webSocketCreated":
                urls.append(event["params"]["url"])
        return urls

    def remote_object(self, expression: str) -> dict[str, Any]:
        """The page's answer to an expression as a DevTools remote object (its objectId kept)."""
        return self.call("Runtime.evaluate", {"expression": expression})["result"]

    def properties(self, object_id: str) -> dict[str, Any]:
        return self.call("Runtime.getProperties", {"objectId": object_id, "ownProperties": True})

    def terminal_text(self) -> str | None:
        """The terminal's visible text, or None while the page has no terminal yet."""
        resize = self.remote_object("window.onresize")
        if "objectId" not in resize:
            return None
        internals = self.properties(resize["objectId"]).get("internalProperties", [])
        scopes = next(p["value"]["objectId"] for p in internals if p["name"] == "[[Scopes]]")
        for scope in self.properties(scopes)["result"]:
            if "objectId" not in scope.get("value", {}):
                continue
            for variable in self.properties(scope["value"]["objectId"])["result"]:
                value = variable.get("value", {})
                if value.get("type") == "function" and "this.terminal=" in value.get("description", ""):
                    prototype = self.call(
                        "Runtime.callFunctionOn",
                        {
                            "objectId": value["objectId"],
                            "functionDeclaration": "function () { return this.prototype }",
                        },
                    )["result"]
                    instances = self.call(
                        "Runtime.queryObjects", {"prototypeObjectId": prototype["objectId"]}
                    )
                    text = self.call(
                        "Runtime.callFunctionOn",
                        {
                            "objectId": instances["objects"]["objectId"],
                            "functionDeclaration": READ_SCREEN_JS,
                            "returnByValue": True,
                        },
                    )["result"]
                    return text.get("value")
        raise AssertionError(
            "the page has no xterm.js terminal session object (did textual-serve's page change?)"
        )


@dataclass
class ServedDashboard:
    url: str
    log: Path

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-25:])


@pytest.fixture
def served_dashboard(tmp_path: Path) -> Iterator[ServedDashboard]:
    """`tfgpu-tui serve --demo` on a free loopback port; the whole process group is stopped afterwards."""
    port = free_loopback_port()
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("TFGPU_TUI_CONFIG", None)
    served = ServedDashboard(f"http://127.0.0.1:{port}/", tmp_path / "serve.log")
    with served.log.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "tfgpu_tui", "serve", "--demo", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        page = served.url
        served.url = wait_for_token_url(served.log, server)
        wait_for_http(page, server, served.url.split("?token=", 1)[1])
        yield served
    finally:
        stop_process_group(server)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[DevTools]:
    devtools = DevTools(tmp_path / "chromium-profile")
    try:
        yield devtools
    finally:
        devtools.close()
        shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


def wait_for_tabs(browser: DevTools, timeout: float = 60.0) -> str | None:
    """The terminal's text once every tab name is on it (or the last text read, after `timeout`)."""
    deadline = time.monotonic() + timeout
    text = None
    while time.monotonic() < deadline:
        text = browser.terminal_text()
        if text and all(name in text for name in TAB_NAMES):
            break
        time.sleep(0.25)
    return text


def test_browser_shows_the_dashboard(served_dashboard: ServedDashboard, browser: DevTools) -> None:
    browser.open_page(served_dashboard.url)
    text = wait_for_tabs(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    browser.screenshot(ARTIFACTS / "serve_browser.png")
    (ARTIFACTS / "serve_browser.txt").write_text(text or "", encoding="utf-8")
    missing = [name for name in TAB_NAMES if name not in (text or "")]
    assert not missing, (
        f"tabs {missing} not on the served screen:\n{text}\n--- server log:\n{served_dashboard.log_tail()}"
    )
    assert "SIMULATED" in text, f"--demo did not reach the served session:\n{text}"


# The faces of the page's font that the browser has loaded (status "loaded"), by style.
LOADED_FONT_FACES_JS = """document.fonts.ready.then(() => [...document.fonts]
  .filter((face) => face.family.includes("Roboto Mono") && face.status === "loaded")
  .map((face) => face.style))"""


def test_the_page_loads_everything_from_serve_itself(
    served_dashboard: ServedDashboard, browser: DevTools
) -> None:
    """No request leaves for another host (GPU boxes are often offline, and a third party would learn who
    opens the dashboard), and the terminal's font is the one `serve` serves."""
    browser.open_page(served_dashboard.url)
    text = wait_for_tabs(browser)
    assert text and all(name in text for name in TAB_NAMES), f"the dashboard did not render:\n{text}"
    faces = browser.call(
        "Runtime.evaluate", {"expression": LOADED_FONT_FACES_JS, "awaitPromise": True, "returnByValue": True}
    )["result"]["value"]
    assert "normal" in faces, f"the Roboto Mono font was not loaded from the page's own origin: {faces}"
    origin = served_dashboard.url.split("/?", 1)[0].removesuffix("/")
    own = (origin + "/", "ws" + origin.removeprefix("http") + "/")
    urls = browser.requested_urls()
    assert any(url.startswith(own[0] + "static/fonts/") for url in urls), urls
    assert any(url.startswith(own[1]) for url in urls), f"no websocket seen: {urls}"
    foreign = [url for url in urls if not url.startswith(own) and not url.startswith("data:")]
    assert not foreign, f"the page asked other hosts for: {foreign}"


def wait_for_text(browser: DevTools, words: str, timeout: float = 60.0) -> str:
    """The terminal's text once it holds `words` (fails with the last text after `timeout`)."""
    deadline = time.monotonic() + timeout
    text = None
    while time.monotonic() < deadline:
        text = browser.terminal_text()
        if text and words in text:
            return text
        time.sleep(0.25)
    raise AssertionError(f"{words!r} not on the served screen within {timeout:.0f} s:\n{text}")


def test_the_page_takes_the_keyboard_and_a_visitor_is_offered_no_kill(
    served_dashboard: ServedDashboard, browser: DevTools
) -> None:
    """Keys work without a click: `2` opens the Monitor. The session has least privilege (serve's default):
    neither the footer nor an alert offers `k`."""
    browser.open_page(served_dashboard.url)
    text = wait_for_tabs(browser)
    assert text and all(name in text for name in TAB_NAMES), f"the dashboard did not render:\n{text}"
    browser.type_text("2")  # no click anywhere first
    text = wait_for_text(browser, "s Sort")
    assert "Processes (" in text
    assert "k Kill" not in text and "[k kill]" not in text, text
