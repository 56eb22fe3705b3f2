"""Terminal hygiene: escape sequences and control characters from other processes (their argv, a log line)
never reach our stdout or the served screen. Real children, real bytes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.served import logged_in_client, open_session, serve
from tfgpu_tui.text_clean import clean_line, clean_text

pytestmark = pytest.mark.e2e  # real child processes

TITLE = "\x1b]0;PWNED-TITLE\x07"  # sets the terminal's (and tmux pane's) title
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
HOSTILE = f"marker{TITLE}-before{CLEAR}-after\x1b[31mred\x1b[0m\x07\x08\x9b2J\u202eevil"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (TITLE + "x", "x"),
        ("a\x1b]2;t\x1b\\b", "ab"),  # OSC ended by ST
        ("a\x1b]0;never ended", "a"),  # unterminated OSC: the rest is the title, dropped
        (CLEAR + "x", "x"),
        ("\x1b[38;2;255;0;0mred\x1b[0m", "red"),
        ("a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),  # DCS (sixel)
        ("a\x1bcb", "ab"),  # full reset
        ("a\x9b31mb", "ab"),  # 8-bit CSI
        ("tab\tand\nline", "tab\tand\nline"),
        ("\u202etxt.exe", "txt.exe"),  # right-to-left override
        ("plain ünïcode ✓", "plain ünïcode ✓"),
    ],
)
def test_clean_text(raw: str, clean: str) -> None:
    assert clean_text(raw) == clean


def test_clean_line_makes_one_line() -> None:
    assert clean_line("a\nb\tc\r\x1b[2Jd") == "a b cd"


@given(st.text())
def test_nothing_that_drives_a_terminal_survives(text: str) -> None:
    cleaned = clean_text(text)
    assert not any(ord(c) < 32 and c not in "\t\n" for c in cleaned)
    assert not any(0x7F <= ord(c) <= 0x9F for c in cleaned)
    assert clean_text(cleaned) == cleaned


def control_bytes(data: bytes) -> set[int]:
    """Bytes that a terminal would act on (newline and tab are fine)."""
    return {b for b in data if (b < 32 and b not in (9, 10)) or b == 127}


@pytest.fixture
def hostile_child() -> Iterator[subprocess.Popen]:
    """A real process whose argv holds escape sequences and control characters."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", HOSTILE])
    yield child
    child.kill()
    child.wait()


def fake_gpu_env(fakenvml_lib_dir: Path, scenario: Path) -> dict[str, str]:
    return {**os.environ, "LD_LIBRARY_PATH": str(fakenvml_lib_dir), "FAKE_NVML_SCENARIO": str(scenario)}


def scenario_for(tmp_path: Path, pid: int) -> Path:
    path = tmp_path / "scenario.txt"
    path.write_text(
        f'device name="NVIDIA H200" total_mib=143771\nprocess gpu=0 pid={pid} used_mib=2048 sm=50\n'
    )
    return path


def test_gpus_output_is_clean(
    fakenvml_lib_dir: Path, tmp_path: Path, hostile_child: subprocess.Popen
) -> None:
    env = fake_gpu_env(fakenvml_lib_dir, scenario_for(tmp_path, hostile_child.pid))
    out = subprocess.run(
        [sys.executable, "-m", "tfgpu_tui", "gpus"], env=env, capture_output=True, timeout=60
    ).stdout
    assert str(hostile_child.pid).encode() in out and b"marker" in out, out.decode(errors="replace")
    assert b"-before-after" in out  # the text around the sequences stays
    assert control_bytes(out) == set() and b"PWNED" not in out and "\u202e".encode() not in out


def test_log_output_is_clean(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(
        (
            f"Epoch 1/2\n{TITLE}{CLEAR}\n"
            f"10/10 - 1s 5ms/step - loss: 0.5000{CLEAR}\n"
            "Epoch 2/2\nResourceExhaustedError: OOM when allocating tensor with shape[32,1024] and type "
            f"float on /device:GPU:0 by allocator GPU_0_bfc{TITLE}{CLEAR}-tail\n"
        ).encode()
    )
    for extra in ([], ["--json"]):
        run = subprocess.run(
            [sys.executable, "-m", "tfgpu_tui", "log", str(log), *extra], capture_output=True, timeout=60
        )
        assert b"[32,1024]" in run.stdout, run.stdout.decode(errors="replace")  # the hostile line was read
        assert control_bytes(run.stdout) == set() and b"PWNED" not in run.stdout
        assert b"\\u001b" not in run.stdout  # JSON: not even escaped


async def test_served_screen_is_clean(
    fakenvml_lib_dir: Path, tmp_path: Path, hostile_child: subprocess.Popen
) -> None:
    """The Monitor lists the hostile process and the Training tab follows a hostile log, in a real web
    session: the terminal (pyte, as xterm.js would) never gets a title, and the screen is never cleared
    by them."""
    runs = tmp_path / "runs"
    runs.mkdir()
    log = runs / "train.log"
    log.write_text(f"Epoch 1/3\nsome line {TITLE}{CLEAR}-logline-after\n")
    env = fake_gpu_env(fakenvml_lib_dir, scenario_for(tmp_path, hostile_child.pid))
    with serve(tmp_path, "--log", str(log), env=env) as served:
        client = await logged_in_client(served)
        try:
            terminal = await open_session(client, served)
            await terminal.send_keys("2")
            await terminal.wait_for_text(str(hostile_child.pid), "-before-after")
            for _ in range(5):
                await terminal.send_keys("3")
                await terminal.pump(2)
                if "logline" in terminal.text():
                    break
            await terminal.wait_for_text("some line-logline-after")
            assert "PWNED" not in terminal.screen.title  # (Textual itself sends OSC 22 for the pointer)
            assert b"PWNED" not in terminal.received_bytes
            await terminal.websocket.close()
        finally:
            await client.close()
        await asyncio.sleep(0)
