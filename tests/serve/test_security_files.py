"""Only regular files are followed: FIFOs, devices, sockets and directories are refused at once with what
the path is; a symlink loop is named as such. The access policy's log root and model rules."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tfgpu_tui.safe_files import special_file_refusal
from tfgpu_tui.serve.policy import (
    AccessPolicy,
    log_refusal,
    model_refusal,
    policy_from_settings,
    visible_logs,
)
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.follow import LogFollower
from tfgpu_tui.training.watch import LogWatch

pytestmark = pytest.mark.e2e  # real child processes


@pytest.fixture
def specials(tmp_path: Path) -> Iterator[dict[str, tuple[Path, str]]]:
    """Each kind of path that is not a regular file, and the words its refusal must use."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop-a"
    loop.symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(loop)
    directory = tmp_path / "a-directory"
    directory.mkdir()
    sock_path = tmp_path / "socket"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    yield {
        "fifo": (fifo, "is a FIFO (named pipe)"),
        "dev-zero": (Path("/dev/zero"), "is a character device"),
        "directory": (directory, "is a directory"),
        "symlink-loop": (loop, "is a symlink loop"),
        "socket": (sock_path, "is a socket"),
    }
    server.close()


KINDS = ["fifo", "dev-zero", "directory", "symlink-loop", "socket"]


def within(seconds: float, action) -> object:
    """Run `action` in a thread; fail if it has not returned after `seconds` (a FIFO open blocks forever)."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(action()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    return result[0]


@pytest.mark.parametrize("kind", KINDS)
def test_special_files_are_named(specials: dict[str, tuple[Path, str]], kind: str) -> None:
    path, words = specials[kind]
    refusal = within(1.0, lambda: special_file_refusal(path))
    assert refusal is not None and words in refusal and str(path) in refusal


def test_regular_and_missing_files_are_fine(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text("x\n")
    assert special_file_refusal(tmp_path / "train.log") is None
    assert special_file_refusal(tmp_path / "not-yet.log") is None  # followed once it appears


@pytest.mark.parametrize("kind", KINDS)
def test_the_follower_never_reads_them(specials: dict[str, tuple[Path, str]], kind: str) -> None:
    path, words = specials[kind]
    follower = LogFollower(path)
    update = within(1.0, follower.poll)
    assert update.bytes_read == 0 and follower.refused is not None and words in follower.refused

    def watch_once() -> None:  # what the Training tab's worker does (an OSError becomes its message)
        try:
            watch = LogWatch(path)
        except OSError:
            return
        watch.poll()
        watch.close()

    within(1.0, watch_once)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("follow", [False, True])
def test_log_command_refuses_at_once(specials: dict[str, tuple[Path, str]], kind: str, follow: bool) -> None:
    path, words = specials[kind]
    argv = [sys.executable, "-m", "tfgpu_tui", "log", str(path), *(["--follow"] if follow else [])]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=30)  # it used to never return
    assert run.returncode == 2
    assert words in run.stderr and "Traceback" not in run.stderr and "does not exist" not in run.stderr


def test_log_root_resolves_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    (root / "train.log").write_text("x\n")
    (root / "escape.log").symlink_to("/etc/passwd")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "link-in").symlink_to(root / "train.log")
    policy = AccessPolicy(allow_kill=False, allow_code=False, log_root=root.resolve(), allow_writes=False)
    assert log_refusal(policy, root / "train.log") is None
    assert log_refusal(policy, root / "later.log") is None  # may appear later
    assert log_refusal(policy, tmp_path / "elsewhere" / "link-in") is None  # resolves into the root
    for outside in (Path("/etc/passwd"), root / "escape.log", root / ".." / "elsewhere", tmp_path / "runs2"):
        refusal = log_refusal(policy, outside)
        assert refusal is not None and ("outside the log root" in refusal or "directory" in refusal)


def test_least_privilege_policy_from_settings(tmp_path: Path) -> None:
    local = policy_from_settings(Settings())
    assert local == AccessPolicy(True, True, None, True)
    web = policy_from_settings(Settings(least_privilege=True, log_path=tmp_path / "runs" / "train.log"))
    assert web == AccessPolicy(False, False, (tmp_path / "runs").resolve(), False)
    loosened = policy_from_settings(
        Settings(least_privilege=True, allow_kill=True, allow_code=True, log_root=tmp_path)
    )
    assert loosened == AccessPolicy(True, True, tmp_path.resolve(), False)
    assert not policy_from_settings(Settings(least_privilege=True, allow_kill=True, readonly=True)).allow_kill


def test_model_rules(tmp_path: Path) -> None:
    (tmp_path / "model.keras").write_bytes(b"PK")
    (tmp_path / "notes.txt").write_text("x")
    least = AccessPolicy(False, False, tmp_path.resolve(), False)
    assert model_refusal(least, "builtin:cnn") is None
    assert model_refusal(least, str(tmp_path / "model.keras")) is None
    assert "run code" in (model_refusal(least, "tempfile:mkdtemp") or "")
    assert "only under" in (model_refusal(least, "/etc/model.keras") or "")
    assert "not a saved model" in (model_refusal(least, str(tmp_path / "notes.txt")) or "")
    assert model_refusal(AccessPolicy(False, True, tmp_path, False), "tempfile:mkdtemp") is None


class Candidate:
    def __init__(self, path: Path) -> None:
        self.path = path


def test_pick_list_shows_only_logs_under_the_root(tmp_path: Path) -> None:
    (tmp_path / "mine.log").write_text("x")
    policy = AccessPolicy(False, False, tmp_path.resolve(), False)
    candidates = [Candidate(tmp_path / "mine.log"), Candidate(Path("/home/other/secret-job.log"))]
    assert [c.path for c in visible_logs(policy, candidates)] == [tmp_path / "mine.log"]
