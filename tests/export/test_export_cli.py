"""`tfgpu-tui export --log`: the same checks as `log PATH`, one line and exit 2, never a traceback; so is a
`--pids` that is no process id."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfgpu_tui.cli import main


@pytest.mark.parametrize("first_is_a_file", [False, True])
def test_a_directory_given_as_a_log_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, first_is_a_file: bool
) -> None:
    """It crashed with IsADirectoryError, also when the directory was one of several --log paths."""
    logs = [str(tmp_path / "train.log"), str(tmp_path)] if first_is_a_file else [str(tmp_path)]
    (tmp_path / "train.log").write_text("Epoch 1/3\n")
    assert main(["export", "--demo", "--port", "0", "--log", *logs]) == 2
    assert capsys.readouterr().err == f"tfgpu-tui export: --log {tmp_path} is a directory, not a log file\n"


def test_a_log_that_does_not_exist_yet_is_not_refused(tmp_path: Path) -> None:
    from argparse import Namespace

    from tfgpu_tui.commands.export import check_arguments

    args = Namespace(
        port=0, top_processes=5, public=False, host="127.0.0.1", logs=[tmp_path / "later.log"], pids=None
    )
    assert check_arguments(args) is None


def test_pids_must_be_process_ids(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--demo", "--port", "0", "--pids", "42", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "tfgpu-tui export: --pids takes process ids, which are positive (got 0)\n"
