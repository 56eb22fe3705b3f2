"""`tfgpu-tui serve`: address checks, the per-session command line, and the web server's guards."""

from __future__ import annotations

import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tfgpu_tui.cli import build_parser, main
from tfgpu_tui.commands.serve import (
    ServeError,
    check_bind,
    check_public_url,
    is_loopback,
    public_warning,
    session_arguments,
    session_command,
    session_readonly,
)
from tfgpu_tui.web_server import DashboardServer


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, 8000, public=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "example.org", "192.168.1.2"])
def test_other_addresses_need_public(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ServeError, match="--public"):
        check_bind(host, 8000, public=False)
    check_bind(host, 8000, public=True)


@pytest.mark.parametrize("port", [0, -1, 65536])
def test_port_range(port: int) -> None:
    with pytest.raises(ServeError, match="between 1 and 65535"):
        check_bind("127.0.0.1", port, public=False)


@pytest.mark.parametrize("url", ["example.org", "ftp://example.org", "https://example.org/some/path"])
def test_bad_public_url(url: str) -> None:
    with pytest.raises(ServeError, match="--public-url"):
        check_public_url(url)


def test_good_public_url() -> None:
    check_public_url("https://gpu.example.org:8443")
    check_public_url(None)


@pytest.mark.parametrize(
    ("readonly", "public", "allow_kill", "expected"),
    [
        (False, False, False, False),
        (True, False, False, True),
        (False, True, False, True),
        (False, True, True, False),
        (True, True, True, True),
    ],
)
def test_session_readonly(readonly: bool, public: bool, allow_kill: bool, expected: bool) -> None:
    assert session_readonly(readonly, public, allow_kill) is expected


def test_public_warning_says_who_can_see_what() -> None:
    readonly = public_warning("0.0.0.0", 8080, readonly=True)
    assert "0.0.0.0:8080" in readonly and "Anyone who can reach this port" in readonly
    assert "read-only" in readonly and "ssh -L 8080:127.0.0.1:8080" in readonly
    assert "any visitor can send signals" in public_warning("0.0.0.0", 8080, readonly=False)


def parse(argv: list[str]):
    return build_parser().parse_args(argv)


def test_session_arguments_take_global_options_before_or_after_serve(tmp_path: Path) -> None:
    before = parse(["--demo", "--interval", "2", "--log", str(tmp_path / "a b.log"), "serve"])
    after = parse(["serve", "--demo", "--interval", "2", "--log", str(tmp_path / "a b.log")])
    expected = ["--demo", "--interval", "2.0", "--log", str(tmp_path / "a b.log")]
    assert session_arguments(before, readonly=False) == expected
    assert session_arguments(after, readonly=False) == expected


def test_option_before_serve_is_not_reset_by_serve_defaults() -> None:
    args = parse(["--python", "/opt/py/bin/python", "--readonly", "serve", "--port", "9000"])
    assert args.python == "/opt/py/bin/python"
    assert args.readonly is True
    assert args.port == 9000


def test_relative_log_path_becomes_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    arguments = session_arguments(parse(["serve", "--log", "train.log"]), readonly=True)
    assert arguments == ["--readonly", "--log", str(tmp_path / "train.log")]


def test_session_command_is_quoted_and_round_trips() -> None:
    arguments = ["--log", "/data/my run; rm -rf ~/x.log", "--python", "/opt/$HOME/python"]
    command = session_command(arguments, python="/usr/bin/python 3")
    assert shlex.split(command) == ["/usr/bin/python 3", "-m", "tfgpu_tui", *arguments]


def test_session_command_defaults_to_this_interpreter() -> None:
    assert shlex.split(session_command([]))[:3] == [sys.executable, "-m", "tfgpu_tui"]


def test_cli_refuses_public_address_without_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    error = capsys.readouterr().err
    assert "0.0.0.0" in error and "--public" in error and "Traceback" not in error


def test_cli_reports_a_busy_port(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent-config-dir")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 1
    error = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in error


@asynccontextmanager
async def web_client(host: str = "127.0.0.1", public_url: str | None = None) -> AsyncIterator[TestClient]:
    """A client for DashboardServer's web app (no app session is started by these requests)."""
    server = DashboardServer("true", host=host, port=8000, public_url=public_url)
    async with TestClient(TestServer(await server._make_app())) as client:
        yield client


async def test_page_points_the_browser_back_at_the_address_it_used() -> None:
    async with web_client() as client:
        response = await client.get("/", headers={"Host": "localhost:9000"})
        assert response.status == 200
        assert 'data-session-websocket-url="ws://localhost:9000/ws"' in await response.text()


async def test_loopback_server_refuses_foreign_host_header() -> None:
    async with web_client() as client:
        response = await client.get("/", headers={"Host": "attacker.example:8000"})
        assert response.status == 403


async def test_websocket_from_another_site_is_refused() -> None:
    async with web_client() as client:
        headers = {"Host": "127.0.0.1:8000", "Origin": "http://attacker.example"}
        response = await client.get("/ws", headers=headers)
        assert response.status == 403
        assert "another site" in await response.text()


async def test_fixed_public_url_is_used_and_its_host_allowed() -> None:
    async with web_client(public_url="https://gpu.example.org:8443") as client:
        response = await client.get("/", headers={"Host": "gpu.example.org:8443"})
        assert response.status == 200
        assert 'data-session-websocket-url="wss://gpu.example.org:8443/ws"' in await response.text()


async def test_public_server_accepts_any_host_name() -> None:
    async with web_client(host="0.0.0.0") as client:
        response = await client.get("/", headers={"Host": "gpu-box.lan:8000"})
        assert response.status == 200
