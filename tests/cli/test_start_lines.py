"""What `export` and `serve` say when they start, as a user runs them: `--demo` says SIMULATED in every
start-up line, and `export` on a machine without a GPU says there is nothing to export (real processes; the
driver is fakenvml's "library not found")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers.served import free_loopback_port
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e  # real child processes


@contextmanager
def started(tmp_path: Path, args: list[str], env: dict[str, str]) -> Iterator[tuple[Path, Path]]:
    """The command running, its stdout and stderr in files; stopped with SIGTERM afterwards."""
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "tfgpu_tui", *args], stdout=stdout, stderr=stderr, env=env
        )
    try:
        yield out, err
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=60)
        finally:
            child.kill()
            child.wait()


def clean_environment(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path / "run"), XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("TFGPU_TUI_TOKEN", None)
    return env


def test_export_without_a_gpu_says_there_is_nothing_to_export(tmp_path: Path, fakenvml_lib_dir: Path) -> None:
    scenario = tmp_path / "no-library.txt"
    scenario.write_text("error init=LIBRARY_NOT_FOUND\n")
    env = dict(clean_environment(tmp_path), LD_LIBRARY_PATH=str(fakenvml_lib_dir))
    env["FAKE_NVML_SCENARIO"] = str(scenario)
    with started(tmp_path, ["export", "--port", "0"], env) as (out, _):
        wait_for(lambda: "nothing to export" in out.read_text(), timeout=60)
        lines = out.read_text().splitlines()
    assert lines[0].startswith("tfgpu-tui export: serving http://127.0.0.1:") and "SIMULATED" not in lines[0]
    assert lines[1].startswith("tfgpu-tui export: nothing to export from the GPUs: ")
    assert "libnvidia-ml.so.1" in lines[1] and "tfgpu_up 0" in lines[1] and "no --log given" in lines[1]


def test_export_demo_says_simulated_in_every_start_line(tmp_path: Path) -> None:
    with started(tmp_path, ["export", "--demo", "--port", "0"], clean_environment(tmp_path)) as (out, err):
        wait_for(lambda: "serving" in out.read_text(), timeout=60)
        lines = (out.read_text() + err.read_text()).splitlines()
    assert lines and all("SIMULATED" in line for line in lines), lines
    assert not any("nothing to export" in line for line in lines)


def test_serve_demo_says_simulated_in_every_start_line(tmp_path: Path) -> None:
    args = ["serve", "--demo", "--port", str(free_loopback_port())]
    with started(tmp_path, args, clean_environment(tmp_path)) as (out, err):
        wait_for(lambda: "sessions; Ctrl+C stops the server" in out.read_text(), timeout=60)
        lines = (out.read_text() + err.read_text()).splitlines()
    assert len(lines) >= 2 and all("SIMULATED" in line for line in lines), lines
    assert lines[0].startswith("tfgpu-tui: open http://127.0.0.1:")
