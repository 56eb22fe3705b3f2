"""A real terminal for the end-to-end tests: a private tmux server with one window running a command, read
back with `tmux capture-pane`."""

from __future__ import annotations

import os
import subprocess
import uuid

from tests.helpers.waiting import wait_for

NO_TMUX = "tmux is not installed (apt install tmux)"


class Terminal:
    """One tmux server of its own, one 80x24 window running the command."""

    def __init__(self, command: list[str], env: dict[str, str], width: int = 80, height: int = 24) -> None:
        self.socket = f"tfgpu-test-{uuid.uuid4().hex[:8]}"
        self.env = env
        line = " ".join(_quote(part) for part in command)
        self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), "-s", "app", line)

    def tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, "-f", os.devnull, *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=10,
        )
        return result.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "app")

    def lines(self) -> list[str]:
        return self.screen().splitlines()

    def press(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "app", *keys)

    def size(self) -> tuple[int, int]:
        shown = self.tmux("display-message", "-p", "-t", "app", "#{pane_width} #{pane_height}")
        width, height = shown.split()
        return int(width), int(height)

    def wait_for(self, *texts: str, timeout: float = 60.0) -> str:
        """Wait until every text is on the screen; the screen then."""
        try:
            wait_for(lambda: all(text in self.screen() for text in texts), timeout)
        except AssertionError:
            raise AssertionError(f"not on screen: {texts}\n{self.screen()}") from None
        return self.screen()

    def close(self) -> None:
        self.tmux("kill-server")


def _quote(part: str) -> str:
    return "'" + part.replace("'", "'\\''") + "'"
