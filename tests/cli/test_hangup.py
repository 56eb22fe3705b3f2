"""A closed terminal or browser tab is a hang-up (issue 30 item 8): SIGHUP, and SIGTERM from `kill`, leave
exactly what `q` leaves. `tfgpu-tui --demo` runs in tmux with its own TMPDIR, so the demo's folder
(`tfgpu-tui-demo-*`) is the only thing it creates there."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from tests.helpers.tmux_terminal import NO_TMUX, Terminal
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("tmux") is None, reason=NO_TMUX)]


def pid_alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.parametrize("ending", ["q", "SIGHUP", "SIGTERM"])
def test_every_ending_removes_the_demo_folder(tmp_path: Path, ending: str) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    command = ["exec", "env", f"TMPDIR={temp}", sys.executable, "-m", "tfgpu_tui", "--demo"]
    terminal = Terminal(command, env)
    try:
        terminal.wait_for("SIMULATED", "Processes")
        wait_for(lambda: list(temp.glob("tfgpu-tui-demo-*")), 60)
        pid = int(terminal.tmux("display-message", "-p", "-t", "app", "#{pane_pid}").strip())
        assert "tfgpu_tui" in Path(f"/proc/{pid}/cmdline").read_text(), "the pane runs something else"
        if ending == "q":
            terminal.press("q")
        elif ending == "SIGHUP":
            terminal.tmux("kill-server")  # tmux hangs up the pane's terminal, as a closed tab does
        else:
            os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not pid_alive(pid), 60)
        assert list(temp.iterdir()) == [], f"left behind after {ending}: {list(temp.iterdir())}"
    finally:
        terminal.close()
