"""The dashboard process imports asyncio without ssl (OpenSSL, 4.3 MiB resident), and ssl still loads, whole,
for what needs it afterwards. Each check runs in a fresh interpreter: this one has asyncio loaded already."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

FRESH_IMPORT = """
import sys
from tfgpu_tui.asyncio_without_tls import import_asyncio_without_tls
assert import_asyncio_without_tls()
assert not import_asyncio_without_tls()  # once only: asyncio is loaded now
import tfgpu_tui.ui.app  # Textual and the UI
assert "ssl" not in sys.modules, "ssl loaded with the UI"
import asyncio.base_events
assert asyncio.base_events.ssl is None
import http.client, ssl, urllib.request
assert hasattr(http.client, "HTTPSConnection") and urllib.request.HTTPSHandler
ssl.create_default_context()
print("ok")
"""

# The dashboard itself (headless driver, demo source): once its first frame is out, ssl is still not loaded.
DASHBOARD = """
import os, sys, threading, time
def watch():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        frame = sys.modules.get("tfgpu_tui.first_frame")
        if "tfgpu_tui.ui.monitor" in sys.modules and frame is not None and frame._held is None:
            print("ssl loaded" if "ssl" in sys.modules else "no ssl", flush=True)
            os._exit(0)
        time.sleep(0.02)
    print("no first frame", flush=True)
    os._exit(1)
threading.Thread(target=watch, daemon=True).start()
from tfgpu_tui.cli import main
main(["--demo"])
"""


def run_fresh(code: str) -> str:
    env = dict(os.environ, TEXTUAL_DRIVER="textual.drivers.headless_driver:HeadlessDriver")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_asyncio_loads_without_ssl_and_ssl_still_loads_for_the_rest() -> None:
    assert run_fresh(FRESH_IMPORT) == "ok"


def test_the_dashboard_shows_its_first_frame_without_loading_ssl() -> None:
    assert run_fresh(DASHBOARD) == "no ssl"
