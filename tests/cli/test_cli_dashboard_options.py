"""The dashboard checks its own options before the screen opens: one line on stderr and exit 2, as the
subcommands do; without a terminal it says so instead of writing escape codes."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfgpu_tui import cli
from tfgpu_tui.settings import Settings

pytestmark = pytest.mark.e2e  # real child processes


class TerminalStdin(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def screen(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """Stands in for the dashboard: records the settings it would open with (stdin made a terminal)."""
    opened: list[Settings] = []
    monkeypatch.setattr(cli, "run_app", lambda settings: opened.append(settings) or 0)
    monkeypatch.setattr(sys, "stdin", TerminalStdin())
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    return opened


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--python", "/nonexistent/python3"], "tfgpu-tui: --python /nonexistent/python3 does not exist"),
        (["--python", "no-such-python-here"], "tfgpu-tui: --python no-such-python-here: no such interpreter"),
        (["--log", "/tmp"], "tfgpu-tui: --log /tmp is a directory"),
        (["--demo", "--log", "/dev/null"], "tfgpu-tui: --log /dev/null is a"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2_before_the_screen_opens(
    screen: list[Settings], capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(expected), line
    assert screen == []


def test_a_file_that_cannot_be_run_is_no_interpreter(
    screen: list[Settings], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = tmp_path / "python"
    text.write_text("not a program\n")
    text.chmod(0o644)
    assert cli.main(["--python", str(text)]) == 2
    assert capsys.readouterr().err == f"tfgpu-tui: --python {text} is not an executable file\n"
    assert screen == []


def test_both_problems_of_the_issue_still_stop_at_the_first(
    screen: list[Settings], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--python", "/nonexistent", "--log", "/tmp"]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1 and screen == []


def test_a_log_that_does_not_exist_yet_and_a_python_on_path_are_fine(
    screen: list[Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "not-started-yet.log"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python-on-path").symlink_to(sys.executable)  # whatever Pythons the machine has
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    assert cli.main(["--python", "python-on-path", "--log", str(log)]) == 0
    assert [settings.log_path for settings in screen] == [log]


def test_without_a_terminal_it_says_so_instead_of_drawing(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}
    env.pop("TEXTUAL_DRIVER", None)
    done = subprocess.run(
        [sys.executable, "-m", "tfgpu_tui", "--demo"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode != 0
    assert done.stdout == b"" and b"\x1b" not in done.stderr
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith("tfgpu-tui: the dashboard needs a terminal (stdin is not a tty)")


def test_serve_refuses_options_its_sessions_could_not_start_with(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--python", "/nonexistent/python3"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == "tfgpu-tui serve: --python /nonexistent/python3 does not exist"
