"""Usage errors and options of the command line, run as a user runs it (a subprocess per command line)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # real child processes

HANG_GUARD_SECONDS = 60  # only against a hang: no assertion depends on how long anything takes


def tfgpu(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TFGPU_TUI_CONFIG": os.devnull}
    return subprocess.run(
        [sys.executable, "-m", "tfgpu_tui", *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SECONDS,
        env=env,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    ("argv", "command", "says"),
    [
        (["gpus", "--jsn"], "gpus", "unrecognized arguments: --jsn"),
        (["log", "a", "b"], "log", "unrecognized arguments: b"),
        (["gpus", "--interval", "0"], "gpus", "argument --interval"),
        (["gpus", "--demo-gpus", "20"], "gpus", "must be between 2 and 16 (got 20)"),
        (["check", "--nope"], "check", "unrecognized arguments: --nope"),
    ],
)
def test_a_usage_error_in_a_subcommand_is_one_line_naming_its_help(
    argv: list[str], command: str, says: str
) -> None:
    result = tfgpu(*argv)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"tfgpu-tui {command}: ")
    assert says in lines[0]
    assert lines[0].endswith(f"(see: tfgpu-tui {command} --help)")


def test_a_top_level_usage_error_names_the_top_level_help() -> None:
    result = tfgpu("--demo-gpus", "1", "gpus")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "tfgpu-tui: argument --demo-gpus: must be between 2 and 16 (got 1) (see: tfgpu-tui --help)"
    ]


@pytest.mark.parametrize(
    "argv", [["gpus", "--demo-gpus", "3", "--json"], ["--demo-gpus", "3", "gpus", "--json"]]
)
def test_demo_gpus_is_accepted_before_and_after_the_subcommand(argv: list[str]) -> None:
    result = tfgpu(*argv, "--json", "--window", "0")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["devices"]) == 3


class LineReader:
    """Lines of a child's text stream, read by a thread so that none is lost in Python's buffer.

    A selector on the descriptor would miss lines that one `readline` already pulled into the
    stream's buffer (on a loaded machine the child's lines arrive in one chunk).
    """

    def __init__(self, stream) -> None:  # type: ignore[no-untyped-def]
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:  # type: ignore[no-untyped-def]
        for line in stream:
            self.lines.put(line)

    def next(self, what: str) -> str:
        """The next line, failing (not hanging) when none comes."""
        try:
            return self.lines.get(timeout=HANG_GUARD_SECONDS)
        except queue.Empty:
            pytest.fail(f"no {what}")


def test_log_follow_waits_for_a_missing_file_and_summarises_only_the_file_that_appeared(
    tmp_path: Path,
) -> None:
    log = tmp_path / "train.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "tfgpu_tui", "log", str(log), "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TFGPU_TUI_CONFIG": os.devnull},
    )
    stdout, stderr = LineReader(process.stdout), LineReader(process.stderr)
    try:
        assert "waiting for" in stderr.next("waiting line")
        log.write_text("Epoch 1/3\n10/10 [==============================] - 1s 100ms/step - loss: 0.5000\n")
        assert f"{log} appeared at " in stderr.next("appeared line")
        summary = [stdout.next("summary") for _ in range(2)]
        assert summary[0].strip() == str(log)
        rest = ""
        while "Problems" not in rest:
            rest += stdout.next("summary")
        assert "loss" in rest  # the file's epoch: the summary is of the file that appeared
    finally:
        process.kill()
        process.wait()


def test_check_help_reads_right() -> None:
    """It said "inspected by a inspection run"."""
    done = subprocess.run(
        [sys.executable, "-m", "tfgpu_tui", "check", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "a inspection" not in done.stdout
    assert "inspected in a child process of the target interpreter" in " ".join(done.stdout.split())
