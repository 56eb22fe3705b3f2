"""Attack suite against a real `tfgpu-tui serve` process, over real HTTP and websockets (aiohttp's client),
driving the dashboard with the messages textual-serve's page sends and reading the screen through a
terminal emulator: the token, Host and Origin checks, the session limit, and what a visitor cannot do."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import psutil
import pytest

from tests.helpers.served import Served, WebTerminal, logged_in_client, open_session, serve

pytestmark = pytest.mark.e2e  # real child processes

SECRET = "root:x:0:0"  # the first line of /etc/passwd


@pytest.fixture(scope="module")
def public(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`serve --public` on all addresses, defaults otherwise (least privilege), --demo, a log under runs/."""
    tmp_path = tmp_path_factory.mktemp("public")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "train.log").write_text("Epoch 1/3\n")
    (runs / "passwd-link.log").symlink_to("/etc/passwd")
    env = {"TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    with serve(
        tmp_path, "--host", "0.0.0.0", "--public", "--demo", "--log", str(runs / "train.log"), env=env
    ) as s:
        yield s


def origin(served: Served, scheme: str = "http", host: str = "127.0.0.1") -> dict[str, str]:
    return {"Origin": f"{scheme}://{host}:{served.port}"}


async def handshake_status(served: Served, headers: dict[str, str], query: str = "") -> int:
    """The HTTP status a websocket handshake gets (101 when it is accepted)."""
    async with aiohttp.ClientSession() as client:
        try:
            websocket = await client.ws_connect(f"ws://127.0.0.1:{served.port}/ws{query}", headers=headers)
        except aiohttp.WSServerHandshakeError as error:
            return error.status
        await websocket.close()
        return 101


async def test_no_token_no_page_and_no_websocket(public: Served) -> None:
    async with aiohttp.ClientSession() as client:
        for path in ("/", "/static/js/textual.js", "/download/x"):
            async with client.get(f"{public.base}{path}") as response:
                assert response.status == 401, path
                assert "access token" in await response.text()
    assert await handshake_status(public, origin(public)) == 403


async def test_wrong_token_is_refused_everywhere(public: Served) -> None:
    wrong = "x" * len(public.token)
    async with aiohttp.ClientSession() as client:
        async with client.get(f"{public.base}/?token={wrong}", allow_redirects=False) as response:
            assert response.status == 401 and "Set-Cookie" not in response.headers
        async with client.get(public.base + "/", headers={"Authorization": f"token {wrong}"}) as response:
            assert response.status == 401
        cookie = {"Cookie": f"tfgpu-tui-{public.port}={'0' * 64}"}
        async with client.get(public.base + "/", headers=cookie) as response:
            assert response.status == 401
    assert await handshake_status(public, origin(public), f"?token={wrong}") == 403


async def test_token_becomes_a_cookie_that_opens_page_and_websocket(public: Served) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as client:
        async with client.get(f"{public.base}/?token={public.token}", allow_redirects=False) as response:
            assert response.status == 302 and response.headers["Location"] == "/"
            set_cookie = response.headers["Set-Cookie"]
        assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie and public.token not in set_cookie
        async with client.get(public.base + "/") as response:
            assert response.status == 200
            assert f"ws://127.0.0.1:{public.port}/ws" in await response.text()
        terminal = await open_session(client, public)
        await terminal.websocket.close()


async def test_foreign_host_is_refused_even_with_the_token(public: Served) -> None:
    auth = {"Authorization": f"token {public.token}"}
    async with aiohttp.ClientSession() as client:
        for host in (f"attacker.example:{public.port}", f"rebound.attacker.example:{public.port}"):
            async with client.get(public.base + "/", headers={"Host": host, **auth}) as response:
                assert response.status == 403, host
        async with client.get(public.base + "/", headers=auth) as response:
            assert response.status == 200
    host = {"Host": f"attacker.example:{public.port}", "Origin": f"http://attacker.example:{public.port}"}
    assert await handshake_status(public, {**host, **auth}) == 403


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://attacker.example"},  # another site
        {},  # no Origin: a local non-browser client
        {"Origin": "https://127.0.0.1:{port}"},  # https page, http server
        {"Origin": "http://127.0.0.1:1"},  # another port of the same host
    ],
    ids=["foreign", "missing", "https-on-http", "other-port"],
)
async def test_websocket_needs_the_served_origin(public: Served, headers: dict[str, str]) -> None:
    headers = {name: value.format(port=public.port) for name, value in headers.items()}
    auth = {"Authorization": f"token {public.token}"}
    assert await handshake_status(public, {**headers, **auth}) == 403


def session_processes(served: Served) -> list[psutil.Process]:
    """The dashboard processes the server runs for its sessions (and what they started)."""
    return psutil.Process(served.process.pid).children(recursive=True)


def sessions(served: Served) -> set[int]:
    """PIDs of the server's direct children: one per session (their own short-lived children not counted)."""
    return {child.pid for child in psutil.Process(served.process.pid).children()}


def named(processes: list[psutil.Process], name: str) -> list[psutil.Process]:
    """The processes called `name`; one that exits while we look is skipped."""
    found = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            if process.name() == name:
                found.append(process)
    return found


async def test_session_limit_and_a_session_ends_with_its_connection(tmp_path: Path) -> None:
    """Two sessions at most; closing one ends its dashboard and the child it started (the Environment
    check runs an interpreter that hangs, in a process group of its own)."""
    hanging = tmp_path / "hanging-python"
    hanging.write_text("#!/bin/sh\nexec sleep 600\n")
    hanging.chmod(0o755)
    with serve(tmp_path, "--max-sessions", "2", "--python", str(hanging)) as served:
        client = await logged_in_client(served)
        try:
            first = await open_session(client, served)
            await show_tab(first, "1", "r Re-run")  # the check starts when its tab is first shown
            deadline = time.monotonic() + 20
            while not (sleeping := named(session_processes(served), "sleep")):
                assert time.monotonic() < deadline, "the environment check never started its child"
                await asyncio.sleep(0.1)
            second = await open_session(client, served)
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await open_session(client, served)
            assert refused.value.status == 503
            before = sessions(served)
            await first.websocket.close()
            deadline = time.monotonic() + 15
            while any(p.is_running() for p in sleeping) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert not any(p.is_running() for p in sleeping), "the closed session's child lives on"
            deadline = time.monotonic() + 10
            while len(sessions(served)) >= len(before):  # its dashboard ends once it has stopped its children
                assert time.monotonic() < deadline, "the closed session's process lives on"
                await asyncio.sleep(0.1)
            deadline = time.monotonic() + 10
            while True:  # the slot is free again once the session has been cleaned up
                try:
                    third = await open_session(client, served)
                    break
                except aiohttp.WSServerHandshakeError:
                    assert time.monotonic() < deadline, "the closed session still counts"
                    await asyncio.sleep(0.2)
            await asyncio.gather(second.websocket.close(), third.websocket.close())
        finally:
            await client.close()


async def press(terminal: WebTerminal, keys: str, settle: float = 0.3) -> None:
    await terminal.send_keys(keys)
    await terminal.pump(settle)


async def show_tab(terminal: WebTerminal, key: str, marker: str) -> None:
    """Press the tab's number key until its footer (`marker`) shows: a key sent while the session is still
    starting up can be lost, as in a browser."""
    for _ in range(5):
        await press(terminal, key)
        try:
            await terminal.wait_for_text(marker, timeout=4)
            return
        except AssertionError:
            continue
    await terminal.wait_for_text(marker, timeout=1)


async def clear_field(terminal: WebTerminal) -> None:
    """ctrl+u and ctrl+k, one key at a time as a keyboard sends them: the focused input is emptied."""
    await press(terminal, "\x15")
    await press(terminal, "\x0b")


async def click_on(terminal: WebTerminal, text: str) -> None:
    """An SGR mouse click (what xterm.js sends) on the first place `text` is shown."""
    for y, line in enumerate(terminal.screen.display):
        x = line.find(text)
        if x >= 0:
            await press(terminal, f"\x1b[<35;{x + 2};{y + 1}M")  # the pointer moves there first
            await press(terminal, f"\x1b[<0;{x + 2};{y + 1}M")
            await press(terminal, f"\x1b[<0;{x + 2};{y + 1}m")
            return
    raise AssertionError(f"{text!r} is not on the screen:\n{terminal.text()}")


@pytest.fixture
async def visitor(public: Served) -> Iterator[WebTerminal]:
    client = await logged_in_client(public)
    terminal = await open_session(client, public)
    yield terminal
    await terminal.websocket.close()
    await client.close()


async def type_log_path(terminal: WebTerminal, path: str) -> None:
    await show_tab(terminal, "3", "o Open log")
    await press(terminal, "o")
    await terminal.wait_for_text("Enter: follow this file")
    await clear_field(terminal)
    await press(terminal, path)
    await terminal.wait_for_text(path)
    await press(terminal, "\r")


async def test_visitor_cannot_open_files_outside_the_log_root(visitor: WebTerminal, public: Served) -> None:
    await type_log_path(visitor, "/etc/passwd")
    await visitor.wait_for_text("outside the log root")
    await press(visitor, "\x1b")
    await type_log_path(visitor, str(public.cwd.parent / "runs" / "passwd-link.log"))  # a symlink out
    await visitor.wait_for_text("outside the log root")
    await visitor.pump(1.5)
    assert SECRET not in visitor.text() and SECRET.encode() not in visitor.received_bytes


async def test_visitor_cannot_run_code_through_the_batch_probe(visitor: WebTerminal, public: Served) -> None:
    await show_tab(visitor, "4", "Start probe")
    await visitor.wait_for_text("builtin:cnn")
    await click_on(visitor, "builtin:cnn")
    await clear_field(visitor)
    await press(visitor, "tempfile:mkdtemp")
    await visitor.wait_for_text("tempfile:mkdtemp")
    await press(visitor, "\x12")  # ctrl+r: start
    await visitor.wait_for_text("run code on this machine")
    made = [p.name for p in (public.cwd.parent / "tmp").iterdir() if p.name.startswith("tmp")]
    assert not made, f"mkdtemp ran on the server: {made}"


async def test_visitor_cannot_kill(visitor: WebTerminal) -> None:
    """Nothing offers kill in a least-privilege session; `k` says which option allows it."""
    await show_tab(visitor, "2", "s Sort")
    assert "k Kill" not in visitor.text() and "[k kill]" not in visitor.text()
    await press(visitor, "k")
    await visitor.wait_for_text("serve --allow-kill")
    assert "--readonly" not in visitor.text()


async def test_visitor_report_is_a_download_and_nothing_is_written(
    visitor: WebTerminal, public: Served
) -> None:
    before = {path: set(os.listdir(path)) for path in (public.cwd, public.cwd.parent / "tmp")}
    await show_tab(visitor, "1", "s Save report")
    deadline = time.monotonic() + 30
    while not any(message[0] == "deliver_file_start" for message in visitor.messages):
        assert time.monotonic() < deadline, f"no download offered:\n{visitor.text()}"
        await press(visitor, "s", settle=1.0)
    key = next(message[1] for message in visitor.messages if message[0] == "deliver_file_start")
    client = await logged_in_client(public)
    try:
        async with client.get(f"{public.base}/download/{key}") as response:
            assert response.status == 200
            body = await response.text()
            assert re.search(
                r"attachment; filename=tfgpu-env-report-\d+-\d+\.md", response.headers["Content-Disposition"]
            )
    finally:
        await client.close()
    assert "Environment" in body or "#" in body
    assert {path: set(os.listdir(path)) for path in before} == before
