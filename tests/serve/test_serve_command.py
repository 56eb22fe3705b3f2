"""`tfgpu-tui serve`: address checks, the per-session command line, and the web server's guards."""

from __future__ import annotations

import shlex
import socket
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
    load_token,
    public_warning,
    session_arguments,
    session_command,
)
from tfgpu_tui.serve.guard import Token, is_loopback
from tfgpu_tui.serve.server import DashboardServer
from tfgpu_tui.settings import Settings


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


def test_public_warning_says_who_can_see_what() -> None:
    readonly = public_warning("0.0.0.0", 8080, allow_kill=False, root=Path("/runs"))
    assert "0.0.0.0:8080" in readonly and "Whoever has the token" in readonly and "/runs" in readonly
    assert "no signals" in readonly and "ssh -L 8080:127.0.0.1:8080" in readonly
    assert "can send signals" in public_warning("0.0.0.0", 8080, allow_kill=True, root=None)


def parse(argv: list[str]):
    return build_parser().parse_args(argv)


def test_session_arguments_take_global_options_before_or_after_serve(tmp_path: Path) -> None:
    log = tmp_path / "a b.log"
    before = parse(["--demo", "--interval", "2", "--log", str(log), "--allow-kill", "serve"])
    after = parse(["serve", "--demo", "--interval", "2", "--log", str(log), "--allow-kill"])
    expected = ["--demo", "--interval", "2.0", "--log", str(log), "--least-privilege", "--allow-kill"]
    settings = Settings(log_path=log)
    assert session_arguments(before, settings) == [*expected, "--log-root", str(tmp_path.resolve())]
    assert session_arguments(after, settings) == [*expected, "--log-root", str(tmp_path.resolve())]


def test_demo_gpus_reaches_the_sessions_before_or_after_serve(tmp_path: Path) -> None:
    settings = Settings(log_root=tmp_path)
    for argv in (["--demo-gpus", "8", "serve"], ["serve", "--demo-gpus", "8"]):
        arguments = session_arguments(parse(argv), settings)
        assert arguments[:2] == ["--demo-gpus", "8"], argv


def test_demo_gpus_out_of_range_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main(["serve", "--demo-gpus", "99"])
    assert exit_status.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        line.startswith("tfgpu-tui serve: ")
        and "--demo-gpus" in line
        and "(see: tfgpu-tui serve --help)" in line
    )


def test_sessions_get_least_privilege_and_the_given_log_root(tmp_path: Path) -> None:
    arguments = session_arguments(parse(["serve", "--allow-code"]), Settings(log_root=tmp_path / "runs"))
    assert arguments == ["--least-privilege", "--allow-code", "--log-root", str(tmp_path.resolve() / "runs")]


def test_option_before_serve_is_not_reset_by_serve_defaults() -> None:
    args = parse(["--python", "/opt/py/bin/python", "--readonly", "serve", "--port", "9000"])
    assert args.python == "/opt/py/bin/python"
    assert args.readonly is True
    assert args.port == 9000


def test_relative_log_path_becomes_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    arguments = session_arguments(parse(["serve", "--log", "train.log"]))
    assert arguments[:2] == ["--log", str(tmp_path / "train.log")]


def test_session_command_is_quoted_and_round_trips() -> None:
    arguments = ["--log", "/data/my run; rm -rf ~/x.log", "--python", "/opt/$HOME/python"]
    command = shlex.join(session_command(arguments, python="/usr/bin/python 3"))
    assert shlex.split(command) == ["/usr/bin/python 3", "-m", "tfgpu_tui", *arguments]


def test_session_command_defaults_to_this_interpreter() -> None:
    assert session_command([])[:3] == [sys.executable, "-m", "tfgpu_tui"]


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


TOKEN = Token("a-test-token-of-enough-length", "test")
AUTH = {"Authorization": f"token {TOKEN.value}"}


@asynccontextmanager
async def web_client(host: str = "127.0.0.1", public_url: str | None = None) -> AsyncIterator[TestClient]:
    """A client for DashboardServer's web app (no app session is started by these requests)."""
    server = DashboardServer(["true"], host=host, port=8000, public_url=public_url, token=TOKEN)
    async with TestClient(TestServer(server.web_app())) as client:
        yield client


async def test_page_points_the_browser_back_at_the_address_it_used() -> None:
    async with web_client() as client:
        response = await client.get("/", headers={"Host": "localhost:9000", **AUTH})
        assert response.status == 200
        assert 'data-session-websocket-url="ws://localhost:9000/ws"' in await response.text()


async def test_loopback_server_refuses_foreign_host_header() -> None:
    async with web_client() as client:
        response = await client.get("/", headers={"Host": "attacker.example:8000", **AUTH})
        assert response.status == 403


async def test_websocket_from_another_site_is_refused() -> None:
    async with web_client() as client:
        headers = {"Host": "127.0.0.1:8000", "Origin": "http://attacker.example", **AUTH}
        response = await client.get("/ws", headers=headers)
        assert response.status == 403
        assert "another site" in await response.text()


async def test_fixed_public_url_is_used_and_its_host_allowed() -> None:
    async with web_client(public_url="https://gpu.example.org:8443") as client:
        response = await client.get("/", headers={"Host": "gpu.example.org:8443", **AUTH})
        assert response.status == 200
        assert 'data-session-websocket-url="wss://gpu.example.org:8443/ws"' in await response.text()


async def test_wildcard_server_accepts_ip_addresses_and_its_own_name_only() -> None:
    async with web_client(host="0.0.0.0") as client:
        for host, status in (("192.168.1.20:8000", 200), ("[fe80::1]:8000", 200), ("gpu-box.lan:8000", 403)):
            response = await client.get("/", headers={"Host": host, **AUTH})
            assert response.status == status, host
        own = socket.gethostname()
        assert (await client.get("/", headers={"Host": f"{own}:8000", **AUTH})).status == 200


async def test_the_token_becomes_a_strict_httponly_cookie() -> None:
    async with web_client() as client:
        response = await client.get(f"/?token={TOKEN.value}", allow_redirects=False)
        assert response.status == 302 and response.headers["Location"] == "/"
        cookie = response.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN.value not in cookie
        assert (await client.get("/")).status == 200  # the client now sends the cookie


def test_token_sources(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-the-file-0123456789\nsecond line\n")
    token_file.chmod(0o600)
    assert load_token(token_file, {}) == Token("from-the-file-0123456789", str(token_file))
    assert (
        load_token(None, {"TFGPU_TUI_TOKEN": "from-the-environment-0123"}).value
        == "from-the-environment-0123"
    )
    generated = load_token(None, {})
    assert generated.generated and len(generated.value) >= 40 and generated != load_token(None, {})
    token_file.write_text("short\n")
    with pytest.raises(ServeError, match="at least 16 characters"):
        load_token(token_file, {})
    with pytest.raises(ServeError, match="cannot read --token-file"):
        load_token(tmp_path / "missing", {})
