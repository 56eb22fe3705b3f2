"""`serve`'s web face: no secret in its log, the URL only once it listens, a page that needs no other host,
and one direction of imports between the command line and the server."""

from __future__ import annotations

import ast
import re
import socket
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.helpers.paths import ROOT
from tests.helpers.served import serve
from tests.helpers.waiting import wait_for
from tfgpu_tui.cli import main
from tfgpu_tui.serve.guard import Token
from tfgpu_tui.serve.server import DashboardServer

pytestmark = pytest.mark.e2e  # real child processes

PACKAGE = ROOT / "tfgpu_tui"
TOKEN = Token("a-test-token-of-enough-length", "test")
# Where a page makes the browser fetch something: src= / href= attributes, CSS url(...) and @import.
REFERENCE = re.compile(
    r"""(?:\b(?:src|href)\s*=\s*["']([^"']+)|url\(\s*["']?([^"')]+)|@import\s+["']([^"']+))"""
)


async def test_a_wrong_token_and_the_right_one_never_reach_the_log(tmp_path: Path) -> None:
    """aiohttp's access log printed every request line, `GET /?token=... 302`, on the server's output."""
    with serve(tmp_path, "--demo") as served:
        async with aiohttp.ClientSession() as client:
            for token in ("a-wrong-guess-0123456789", served.token):
                async with client.get(f"{served.base}/?token={token}", allow_redirects=False) as response:
                    assert response.status in (302, 401)
        wait_for(lambda: served.output().count("GET / ") >= 2)  # both requests' access lines
        output = served.output()
    access = [line for line in output.splitlines() if "GET / " in line]
    assert access == [line for line in access if "?" not in line], access
    assert "a-wrong-guess-0123456789" not in output
    url_lines = [line for line in output.splitlines() if served.token in line]
    assert len(url_lines) == 1 and url_lines[0].startswith("tfgpu-tui: open "), output  # the printed URL only


def test_a_busy_port_is_one_line_and_no_url(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The URL was printed before the server knew it could listen."""
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent-config-dir")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port)]) != 0
    captured = capsys.readouterr()
    assert "open http" not in captured.out and "token" not in captured.out
    (line,) = captured.err.strip().splitlines()
    assert line.startswith(f"tfgpu-tui serve: cannot listen on 127.0.0.1:{port}: ")


def _references(text: str) -> list[str]:
    return [next(group for group in match.groups() if group) for match in REFERENCE.finditer(text)]


async def test_the_page_and_its_styles_reference_no_other_origin() -> None:
    """textual-serve's stock page loads its font from fonts.googleapis.com."""
    server = DashboardServer(["true"], host="127.0.0.1", port=8000, token=TOKEN)
    auth = {"Authorization": f"token {TOKEN.value}", "Host": "127.0.0.1:8000"}
    async with TestClient(TestServer(server.web_app())) as client:
        page = await (await client.get("/", headers=auth)).text()
        references = _references(page)
        styles = [ref for ref in references if ref.endswith(".css")]
        assert styles and any("/static/fonts/" in ref for ref in references), references
        for style in styles:
            response = await client.get(style.removeprefix("http://127.0.0.1:8000"), headers=auth)
            assert response.status == 200, style
            references += _references(await response.text())
    foreign = [
        ref
        for ref in references
        if re.match(r"[a-z]+:|//", ref) and not ref.startswith(("http://127.0.0.1:8000/", "data:"))
    ]
    assert not foreign, foreign


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_server_imports_nothing_of_the_command_line() -> None:
    """serve/server.py and commands/serve.py imported each other; now only the command line imports the
    server."""
    assert "tfgpu_tui.serve.server" in _imported_modules(PACKAGE / "commands" / "serve.py")
    assert not [
        name
        for name in _imported_modules(PACKAGE / "serve" / "server.py")
        if name.startswith("tfgpu_tui.commands")
    ]


async def test_static_files_are_not_listed_and_nothing_outside_them_is_served() -> None:
    server = DashboardServer(["true"], host="127.0.0.1", port=8000, token=TOKEN)
    auth = {"Authorization": f"token {TOKEN.value}", "Host": "127.0.0.1:8000"}
    async with TestClient(TestServer(server.web_app())) as client:
        assert (await client.get("/static/js/textual.js", headers=auth)).status == 200
        listing = await client.get("/static/", headers=auth)
        assert listing.status in (403, 404) and "textual.js" not in await listing.text()
        for path in (
            "/static/../server.py",
            "/static/%2e%2e/%2e%2e/pyproject.toml",
            "/static/..%2f..%2fx",
        ):
            response = await client.get(path, headers=auth)
            assert response.status in (403, 404), path
