"""The exporter's web config (exporter-toolkit format): TLS and basic auth with bcrypt hashes, through the
real command, a client, the fleet reader, and a real Prometheus scraping over HTTPS with basic auth."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import bcrypt
import pytest

from tests.helpers.fleet_helpers import prometheus_version, query, start_prometheus, stop, wait_scrapes
from tfgpu_tui.export.web_config import WebConfigError, load_web_config
from tfgpu_tui.fleet.readers import DirectReader

pytestmark = pytest.mark.e2e  # real child processes

PASSWORD = "correct horse"


def make_cert(tmp: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def web_config(tmp: Path, tls: bool) -> Path:
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    text = f"basic_auth_users:\n  alice: {hashed}\n"
    if tls:
        cert, key = make_cert(tmp)
        text += f"tls_server_config:\n  cert_file: {cert.name}\n  key_file: {key.name}\n"
    path = tmp / "web.yml"
    path.write_text(text)
    return path


@pytest.fixture
def children():
    started: list[subprocess.Popen] = []
    yield started
    for child in started:
        stop(child)


def start_demo_exporter(config: Path, children: list) -> str:
    child = subprocess.Popen(
        [sys.executable, "-m", "tfgpu_tui", "export", "--demo", "--port", "0", "--hostname", "secure",
         "--web-config", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    children.append(child)
    line = child.stdout.readline() if child.stdout else ""
    assert "serving" in line, child.stderr.read() if child.stderr else ""
    return line.split("serving ", 1)[1].split()[0]  # the URL, before any note


def get(url: str, user: str | None = None, password: str = "", context: ssl.SSLContext | None = None) -> int:
    request = urllib.request.Request(url)
    if user is not None:
        request.add_header(
            "Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        )
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as reply:
            assert b"tfgpu_up" in reply.read()
            return reply.status
    except urllib.error.HTTPError as error:
        assert error.headers["WWW-Authenticate"] == 'Basic realm="tfgpu-tui"'
        return error.code


def test_tls_and_basic_auth(tmp_path: Path, children: list) -> None:
    config = web_config(tmp_path, tls=True)
    url = start_demo_exporter(config, children)
    assert url.startswith("https://127.0.0.1:")
    context = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
    assert get(url, context=context) == 401
    assert get(url, "alice", "wrong", context) == 401
    assert get(url, "bob", PASSWORD, context) == 401
    assert get(url, "alice", PASSWORD, context) == 200
    with pytest.raises(urllib.error.URLError) as refused:  # a client that does not trust the certificate
        urllib.request.urlopen(url, timeout=5)
    assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)
    plain = url.replace("https://", "http://")
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(plain, timeout=5)


def test_fleet_reader_sends_basic_auth_from_the_url(tmp_path: Path, children: list) -> None:
    url = start_demo_exporter(web_config(tmp_path, tls=False), children)
    address = url.split("://", 1)[1].removesuffix("/metrics")
    good = DirectReader([f"http://alice:{PASSWORD.replace(' ', '%20')}@{address}"])
    bad = DirectReader([f"http://alice:nope@{address}"])
    try:
        (host,) = good.read().hosts
        assert host.up and host.hostname == "secure" and host.key == address
        (refused,) = bad.read().hosts
        assert not refused.up and refused.reason == "HTTP 401 Unauthorized"
    finally:
        good.close()
        bad.close()


@pytest.mark.skipif(
    prometheus_version() is None, reason="Prometheus is not installed (apt install prometheus)"
)
def test_prometheus_scrapes_over_tls_with_basic_auth(tmp_path: Path, children: list) -> None:
    url = start_demo_exporter(web_config(tmp_path, tls=True), children)
    target = url.split("://", 1)[1].removesuffix("/metrics")
    extra = (
        "    scheme: https\n"
        f"    tls_config:\n      ca_file: {tmp_path / 'cert.pem'}\n"
        f"    basic_auth:\n      username: alice\n      password: {json.dumps(PASSWORD)}\n"
    )
    prometheus = start_prometheus(tmp_path, [target], children, extra=extra)
    wait_scrapes(prometheus, 2)
    (up,) = query(prometheus, "up")
    assert up["value"][1] == "1"
    assert query(prometheus, 'DCGM_FI_DEV_GPU_UTIL{Hostname="secure"}')


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.key\n", "not a readable file"),
        ("tls_server_config:\n  cert_file: x\n", "needs both cert_file and key_file"),
        ("basic_auth_users:\n  alice: secret\n", "not a bcrypt hash"),
        ("http_server_config:\n  http2: true\n", "unsupported keys"),
        ("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: []\n", "unknown keys"),
        ("- a list\n", "must be a mapping"),
        ("basic_auth_users: [\n", "not valid YAML"),
    ],
)
def test_bad_web_configs_are_refused_with_the_reason(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "web.yml"
    path.write_text(text)
    with pytest.raises(WebConfigError, match=why):
        load_web_config(path)


def test_empty_web_config_means_no_auth_and_no_tls(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text("")
    config = load_web_config(path)
    assert not config.tls and config.authorized(None)


def test_an_unknown_user_is_checked_against_a_hash_of_the_users_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that does not exist costs a bcrypt check as a wrong password does (exporter-toolkit's rule):
    a reply's time does not tell which user names exist."""
    hashed = bcrypt.hashpw(b"right", bcrypt.gensalt(rounds=5))
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  alice: {hashed.decode()}\n")
    config = load_web_config(path)
    checked: list[bytes] = []
    checkpw = bcrypt.checkpw
    monkeypatch.setattr(
        bcrypt, "checkpw", lambda password, against: checked.append(against) or checkpw(password, against)
    )

    def header(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    assert config.known(header("mallory", "right")) is None  # not answered at once: checked like alice's
    assert not config.authorized(header("mallory", "right"))
    assert not config.authorized(header("alice", "wrong")) and config.authorized(header("alice", "right"))
    stand_in, alices = checked[0], checked[1:]
    assert stand_in != hashed and stand_in.startswith(b"$2b$05$") and alices == [hashed, hashed]
