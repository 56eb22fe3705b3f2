"""The exporter's server on aiohttp: idle and half-sent connections hold up no scrape and are closed after
the timeout, concurrent scrapes, the bound on open connections, and bcrypt off the event loop."""

from __future__ import annotations

import base64
import http.client
import select
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import bcrypt
import pytest

from tests.helpers.waiting import wait_for
from tfgpu_tui.export.collector import Exporter
from tfgpu_tui.export.server import MetricsServer
from tfgpu_tui.export.web_config import load_web_config
from tfgpu_tui.settings import Settings

PASSWORD = "correct horse"


@pytest.fixture
def exporter() -> Iterator[Exporter]:
    ex = Exporter(Settings(demo=True), hostname="busy")
    ex.sample_once()
    yield ex
    ex.close()


def scrape(url: str, authorization: str | None = None) -> int:
    """The status of one GET (the body must be the exposition when it is 200)."""
    request = urllib.request.Request(url)
    if authorization:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            assert b"tfgpu_up" in reply.read()
            return reply.status
    except urllib.error.HTTPError as error:
        assert error.headers["WWW-Authenticate"] == 'Basic realm="tfgpu-tui"'
        return error.code


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed `sock` (a hang guard of 60 s, never the test's clock)."""
    sock.settimeout(60)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_idle_and_half_sent_connections_do_not_hold_up_concurrent_scrapes(exporter: Exporter) -> None:
    """The threaded server gave each connection a thread out of 32: 32 idle sockets stopped every scrape
    for 10 s. Here 100 idle ones and a client stuck mid-request are left waiting while 20 scrapes pass."""
    with MetricsServer(("127.0.0.1", 0), exporter, timeout=600.0) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(100)]
        stuck = socket.create_connection(("127.0.0.1", server.port))
        stuck.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never ends its headers
        try:
            with ThreadPoolExecutor(20) as pool:
                assert list(pool.map(scrape, [server.url] * 20)) == [200] * 20
        finally:
            for sock in [*idle, stuck]:
                sock.close()


def test_a_connection_idle_before_or_after_its_request_is_closed_after_the_timeout(
    exporter: Exporter,
) -> None:
    with MetricsServer(("127.0.0.1", 0), exporter, timeout=1.0) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as idle:
            assert closed_by_server(idle)
        with socket.create_connection(("127.0.0.1", server.port)) as stuck:
            stuck.sendall(b"GET /metrics HTTP/1.1\r\n")
            assert closed_by_server(stuck)
        kept = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        kept.request("GET", "/metrics")
        assert kept.getresponse().read().count(b"tfgpu_up") >= 1
        assert kept.sock is not None and closed_by_server(kept.sock)  # idle after its request: closed too
        kept.close()
        assert scrape(server.url) == 200


def test_connections_over_the_bound_are_closed_and_the_bound_is_given_back(exporter: Exporter) -> None:
    with MetricsServer(("127.0.0.1", 0), exporter, timeout=600.0, max_connections=8) as server:
        held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(8)]
        try:
            # the server accepts in order: this one comes after the 8 have theirs (no sleep)
            over = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            with pytest.raises((ConnectionError, http.client.RemoteDisconnected)):
                over.request("GET", "/metrics")
                over.getresponse()
        finally:
            for sock in held:
                sock.close()

        def served() -> bool:
            try:
                return scrape(server.url) == 200
            except (ConnectionError, urllib.error.URLError):
                return False  # the closed connections are not all counted out yet

        wait_for(served)


def test_basic_auth_refuses_what_is_not_a_users_password(exporter: Exporter, tmp_path: Path) -> None:
    fast = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    config = tmp_path / "web.yml"
    config.write_text(f"basic_auth_users:\n  alice: {fast}\n")
    with MetricsServer(("127.0.0.1", 0), exporter, load_web_config(config)) as server:
        assert scrape(server.url) == 401
        assert scrape(server.url, "Bearer x") == 401
        assert scrape(server.url, basic("bob", PASSWORD)) == 401  # no such user
        assert scrape(server.url, basic("alice", "wrong")) == 401
        assert scrape(server.url, basic("alice", PASSWORD)) == 200


def test_bcrypt_holds_up_no_known_scraper(exporter: Exporter, tmp_path: Path) -> None:
    """A password not seen before costs a bcrypt check (rounds 14 here: a second or more); it runs beside
    the event loop, so a scraper whose credentials were verified before is answered meanwhile."""
    slow = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=14)).decode()
    fast = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    config = tmp_path / "web.yml"
    config.write_text(f"basic_auth_users:\n  alice: {fast}\n  mallory: {slow}\n")
    with MetricsServer(("127.0.0.1", 0), exporter, load_web_config(config)) as server:
        assert scrape(server.url, basic("alice", PASSWORD)) == 200  # verified once, remembered
        with socket.create_connection(("127.0.0.1", server.port)) as guessing:
            guessing.sendall(
                b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                + f"Authorization: {basic('mallory', 'a guess')}\r\n\r\n".encode()
            )  # sent before alice's scrape: a server checking it on its event loop would answer it first
            assert scrape(server.url, basic("alice", PASSWORD)) == 200
            assert select.select([guessing], [], [], 0)[0] == []  # still in bcrypt, while alice was served
            guessing.settimeout(60)
            assert guessing.recv(4096).startswith(b"HTTP/1.1 401")
