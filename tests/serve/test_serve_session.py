"""`serve`'s sessions: a real Textual app under Textual's web driver, behind the real server (in process), and
the parts of the driver's protocol the server reads. The attack suite (test_security_serve.py) drives the
real dashboard the same way."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import aiohttp
import psutil
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.served import logged_in_client, open_session, serve
from tfgpu_tui.serve.guard import TOKEN_ENV_VAR, Token
from tfgpu_tui.serve.server import DashboardServer
from tfgpu_tui.serve.session import WEB_DRIVER, Download, decode_chunk, session_environment

pytestmark = pytest.mark.e2e  # real child processes

TOKEN = Token("a-test-token-of-enough-length", "test")
# A small app that, once on screen, asks to open two URLs and offers a file saying whether it can see the
# server's token.
OFFERING_APP = """
import io
import os
from textual.app import App
from textual.widgets import Static

class Offering(App):
    def compose(self):
        yield Static("offering app ready")

    def on_mount(self):
        self.open_url("javascript:alert(1)")
        self.open_url("https://example.org/docs")
        seen = os.environ.get("TFGPU_TUI_TOKEN", "no token")
        report = io.StringIO(f"{seen}\\n")
        self.deliver_text(report, save_filename="../../etc/report\\r\\n.md", mime_type="text/markdown")

Offering().run()
"""


def test_session_environment_has_the_web_driver_and_size_but_not_the_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV_VAR, "the-server-token-0123456789")
    environment = session_environment(132, 43)
    assert TOKEN_ENV_VAR not in environment
    assert environment["TEXTUAL_DRIVER"] == WEB_DRIVER
    assert (environment["COLUMNS"], environment["ROWS"]) == ("132", "43")


def test_decode_chunk_reads_the_drivers_deliver_chunk() -> None:
    assert decode_chunk(b"ts13:deliver_chunks3:key6:hello\x00e") == ("key", b"hello\x00")
    assert decode_chunk(b"ts13:deliver_chunks3:keys2:hie") == ("key", "hi")
    assert decode_chunk(b"ts13:deliver_chunks3:key0:e") == ("key", b"")


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"t",
        b"te",
        b"ts13:deliver_chunke",
        b"ts5:otheres1:k1:xe",
        b"ts13:deliver_chunks3:key9:hie",
        b"ts13:deliver_chunks3:key" + b"9" * 5000 + b":hie",  # too many digits for int()
    ],
)
def test_decode_chunk_refuses_other_packets(payload: bytes) -> None:
    assert decode_chunk(payload) is None


@given(st.binary(max_size=200))
def test_decode_chunk_never_raises(payload: bytes) -> None:
    decode_chunk(payload)


def test_a_download_offer_is_made_safe() -> None:
    download = Download.from_meta(
        {"path": "/x/../.bashrc\r\nSet-Cookie: a=b", "mime_type": "text/html\r\nX: y", "encoding": "no-such"}
    )
    assert download.file_name == "bashrc__Set-Cookie__a_b"
    assert download.content_type == "application/octet-stream"
    assert Download.from_meta(
        {"path": "r.md", "mime_type": "text/markdown", "encoding": "utf-8"}
    ).content_type == ("text/markdown; charset=utf-8")


async def test_a_real_session_relays_the_app_and_its_offers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app draws in the browser; only the http(s) URL is passed on; the file comes once, as an
    attachment with a safe name, and the session never saw the server's token."""
    monkeypatch.setenv(TOKEN_ENV_VAR, TOKEN.value)
    script = tmp_path / "offering.py"
    script.write_text(OFFERING_APP)
    server = DashboardServer([sys.executable, str(script)], host="127.0.0.1", port=8000, token=TOKEN)
    headers = {"Authorization": f"token {TOKEN.value}", "Host": "127.0.0.1:8000"}
    async with TestClient(TestServer(server.web_app())) as client:
        websocket = await client.ws_connect(
            "/ws?width=100&height=30", headers={**headers, "Origin": "http://127.0.0.1:8000"}
        )
        await websocket.send_str('["stdin", "\\ud800"]')  # a lone surrogate: not UTF-8, must not end it
        screen, messages = b"", []
        while not any(message[0] == "deliver_file_start" for message in messages) or b"ready" not in screen:
            message = await websocket.receive(timeout=60)
            assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
            if message.type == aiohttp.WSMsgType.BINARY:
                screen += message.data
            else:
                messages.append(json.loads(message.data))
        assert ["open_url", {"url": "https://example.org/docs", "new_tab": True}] in messages
        assert not [m for m in messages if m[0] == "open_url" and "javascript" in json.dumps(m)]
        key = next(message[1] for message in messages if message[0] == "deliver_file_start")
        response = await client.get(f"/download/{key}", headers=headers)
        assert response.status == 200
        assert response.headers["Content-Disposition"] == "attachment; filename=report__.md"
        assert await response.text() == "no token\n"
        assert (await client.get(f"/download/{key}", headers=headers)).status == 404
        (session,) = server.sessions
        await websocket.close()
    assert session.process is not None and session.process.returncode is not None  # the app has ended
    assert os.environ[TOKEN_ENV_VAR] == TOKEN.value


async def test_a_session_that_cannot_start_is_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = DashboardServer([str(tmp_path / "no-such-python")], host="127.0.0.1", port=8000, token=TOKEN)
    headers = {
        "Authorization": f"token {TOKEN.value}",
        "Host": "127.0.0.1:8000",
        "Origin": "http://127.0.0.1:8000",
    }
    async with TestClient(TestServer(server.web_app())) as client:
        websocket = await client.ws_connect("/ws", headers=headers)
        assert (await websocket.receive(timeout=30)).type == aiohttp.WSMsgType.CLOSE
    failed = [record for record in caplog.records if "session failed" in record.getMessage()]
    assert len(failed) == 1 and "FileNotFoundError" in failed[0].getMessage() and failed[0].exc_info is None


async def test_a_closed_tab_leaves_what_q_leaves(tmp_path: Path) -> None:
    """Closing the browser tab ends its `--demo` dashboard cleanly: its process and its demo log folder go."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with serve(tmp_path, "--demo", env={"TMPDIR": str(tmp)}) as served:
        client = await logged_in_client(served)
        try:
            terminal = await open_session(client, served)
            for _ in range(20):  # the Training tab writes the demo log; a key sent while starting can be lost
                if [path for path in tmp.iterdir() if path.name.startswith("tfgpu-tui-demo-")]:
                    break
                await terminal.send_keys("3")
                await terminal.pump(0.5)
            else:
                raise AssertionError(f"no demo log folder in {tmp}:\n{terminal.text()}")
            (dashboard,) = psutil.Process(served.process.pid).children()
            await terminal.websocket.close()
        finally:
            await client.close()
        _, running = psutil.wait_procs([dashboard], timeout=30)
        assert not running, "the closed tab's dashboard lives on"
        assert not list(tmp.iterdir()), list(tmp.iterdir())
