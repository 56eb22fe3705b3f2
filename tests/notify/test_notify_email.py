"""notify's e-mail: a real SMTP exchange with a local aiosmtpd server (plain SMTP with AUTH, Apprise's
mailto://), and the password in its URL appears in nothing notify writes."""

from __future__ import annotations

import email
import os
import signal
import socket
import subprocess
import sys
from email.message import Message
from pathlib import Path

import pytest

from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e  # real child processes

PASSWORD = "m4il-S3CRET"
FINISHED = (
    "Epoch 1/2\n10/10 [==============================] - 1s 100ms/step - loss: 0.5000\n"
    "Epoch 2/2\n10/10 [==============================] - 1s 100ms/step - loss: 0.2500\n"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def smtp():
    """A local SMTP server accepting user ana with PASSWORD; yields (port, received messages)."""
    controller_module = pytest.importorskip("aiosmtpd.controller", reason="aiosmtpd is in the test extra")
    from aiosmtpd.smtp import AuthResult

    received: list[Message] = []

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
            received.append(email.message_from_bytes(envelope.content))
            return "250 OK"

    def authenticate(server, session, envelope, mechanism, auth_data) -> AuthResult:
        return AuthResult(success=auth_data.login == b"ana" and auth_data.password == PASSWORD.encode())

    port = free_port()
    controller = controller_module.Controller(
        Handler(), hostname="127.0.0.1", port=port, authenticator=authenticate, auth_require_tls=False
    )
    controller.start()
    try:
        yield port, received
    finally:
        controller.stop()


def test_an_event_arrives_by_e_mail_and_the_password_is_never_written(smtp, tmp_path: Path) -> None:
    port, received = smtp
    url = f"mailto://ana:{PASSWORD}@127.0.0.1:{port}?to=ana@example.org&from=notify@example.org&mode=insecure"
    log = tmp_path / "train.log"
    log.write_text(FINISHED)
    url_file = tmp_path / "urls"
    url_file.write_text(url + "\n")
    state = tmp_path / "state.json"
    args = ["--to-file", str(url_file), "--log", str(log), "--state", str(state), "--interval", "0.5"]
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    child = subprocess.Popen(
        [sys.executable, "-m", "tfgpu_tui", "notify", *args, "--hostname", "box"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_for(lambda: received, timeout=120)
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    [message] = received
    assert message["Subject"] == "Training finished on box" and message["To"] == "ana@example.org"
    text = "".join(
        part.get_payload(decode=True).decode() for part in message.walk() if not part.is_multipart()
    )
    assert "epoch 2/2" in text and str(log) in text
    assert "mailto://127.0.0.1" in err and child.returncode == 0
    assert PASSWORD not in out + err + state.read_text()
