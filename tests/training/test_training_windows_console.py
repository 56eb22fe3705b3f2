"""Logs written through a Windows console (issue 24): UTF-16 without a byte-order mark, told by its byte
pattern (in `log` and in the follower), PowerShell's wrapping of a traceback, Keras 3 bars whose `━` passed
through code page 437; and binary files, which are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.helpers.paths import FIXTURES
from tests.helpers.waiting import wait_until
from tfgpu_tui.cli import main
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.encoding import detect_encoding, looks_binary, utf16_by_pattern
from tfgpu_tui.training.follow import LogFollower, SegmentSplitter
from tfgpu_tui.training.keras_progress import clean_segment, parse_progress
from tfgpu_tui.training.problems import ProblemId
from tfgpu_tui.training.records import FinishReason
from tfgpu_tui.training.run import TrainingRun
from tfgpu_tui.training.watch import LogWatch
from tfgpu_tui.ui.app import TfgpuApp

LOGS = FIXTURES / "logs"
NO_BOM = "powershell_tail_utf16le_without_bom.log"
CP437 = "keras3_cp437_bars_utf16le.log"
TEXT = "Epoch 1/2\r\n10/10 [==============================] - 1s 9ms/step - loss: 0.5000\r\n"


def read(path: Path) -> LogWatch:
    watch = LogWatch(path)
    watch.read_all()
    return watch


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_bom_is_told_by_its_byte_pattern(encoding):
    assert detect_encoding(TEXT.encode(encoding)) == (encoding, 0)
    assert detect_encoding(TEXT.encode("utf-8")) == ("utf-8", 0)


def test_a_hole_of_nul_bytes_is_not_utf16():
    """A log truncated while its writer kept its offset starts with NULs on both sides: UTF-8 still."""
    assert utf16_by_pattern(b"\x00" * 512 + TEXT.encode()) is None
    assert utf16_by_pattern(b"ab") is None  # too short to tell


def test_the_powershell_tail_without_bom_gives_its_epochs_and_the_error_after_fit(capsys):
    watch = read(LOGS / NO_BOM)
    run = watch.run
    assert watch.encoding == "utf-16-le"
    assert [(e.epoch, e.metrics["loss"]) for e in run.epochs] == [(3, 0.6512), (4, 0.5733)]
    problem = run.problems[ProblemId.EXCEPTION]
    assert problem.line == "AttributeError: 'History' object has no attribute 'histroy'"
    assert main(["log", "--json", str(LOGS / NO_BOM)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert any("histroy" in p["message"] for p in data["problems"] if p["id"] == "EXCEPTION")


def test_powershell_error_record_lines_are_not_taken_for_the_exception():
    lines = [
        "python : Traceback (most recent call last):",
        "At line:1 char:1",
        "+ python train.py 2>&1 > train.log",
        "+ ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        "    + CategoryInfo          : NotSpecified: (Traceback (most recent call last)::String) [], Remote",
        "    + FullyQualifiedErrorId : NativeCommandError",
        " ",
        '  File "train.py", line 3, in <module>',
        "    1 / 0",
        "ZeroDivisionError: division by zero",
    ]
    run = TrainingRun()
    run.feed_segments(SegmentSplitter().feed(("\r\n".join(lines) + "\r\n").encode()))
    assert run.problems[ProblemId.EXCEPTION].line == "ZeroDivisionError: division by zero"


def test_the_follower_reads_utf16_without_bom_as_it_grows(tmp_path):
    path = tmp_path / "train.log"
    data = (TEXT + "Epoch 2/2\r\n").encode("utf-16-le")
    path.write_bytes(b"")
    follower = LogFollower(path)
    segments = []
    try:
        for start in range(0, len(data), 37):  # odd-sized writes: half characters wait for their other half
            with path.open("ab") as handle:
                handle.write(data[start : start + 37])
            segments += follower.poll().segments
    finally:
        follower.close()
    assert follower.encoding == "utf-16-le"
    assert [s.text for s in segments if s.line_ends] == [line for line in TEXT.split("\r\n") if line] + [
        "Epoch 2/2"
    ]


def test_a_copy_that_starts_inside_a_character_still_reads(tmp_path):
    """A tail copied from an odd offset of a UTF-16 LE file has its NULs on even offsets: read as BE, its
    ASCII text comes out whole."""
    path = tmp_path / "tail.log"
    path.write_bytes(("x" + TEXT).encode("utf-16-le")[1:])
    run = read(path).run
    assert [(e.epoch, e.metrics["loss"]) for e in run.epochs] == [(1, 0.5)]


def test_keras3_bars_through_code_page_437_inside_utf16_give_every_epoch():
    run = read(LOGS / CP437).run
    assert [e.epoch for e in run.epochs] == list(range(1, 16))
    assert run.epochs[0].metrics == {"accuracy": 0.525, "loss": 1.5, "val_accuracy": 0.495, "val_loss": 1.57}
    assert run.finish_reason() is FinishReason.COMPLETED


@pytest.mark.parametrize("bar", ["ΓöüΓöüΓöüΓöü", "â”\x81â”\x81", "????????"])
def test_a_bar_drawn_with_other_characters_is_read_by_its_steps_and_values(bar):
    text = clean_segment(f"\x1b[1m7/7\x1b[0m \x1b[32m{bar}\x1b[0m 1s 9ms/step - loss: 0.25")
    update = parse_progress(text, True)
    assert update is not None and update.final and update.metrics == {"loss": 0.25}


def test_non_ascii_after_a_step_count_without_times_or_values_is_no_bar():
    assert parse_progress("3/10 ééé fertig", True) is None


def test_binary_files_are_refused_with_one_line(tmp_path, capsys):
    program = shutil.which("ls")
    assert program is not None
    assert main(["log", program]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a text log" in err
    junk = tmp_path / "model.h5"
    junk.write_bytes(bytes(range(256)) * 8)
    assert main(["log", "--follow", str(junk)]) == 2
    assert "not a text log" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")) + ["nohup_terminate_on_nan.out"])
def test_no_fixture_log_counts_as_binary(name):
    assert not looks_binary((LOGS / name).read_bytes()[:4096])


def test_a_log_starting_with_a_hole_of_nuls_is_still_text():
    assert not looks_binary(b"\x00" * 3000 + TEXT.encode())


async def test_the_training_tab_refuses_a_binary_file_with_the_reason(tmp_path):
    junk = tmp_path / "weights.h5"
    junk.write_bytes(bytes(range(256)) * 8)
    app = TfgpuApp(Settings(demo=True, log_path=junk, log_path_given=True), initial_tab="training")
    async with app.run_test(size=(120, 40)) as pilot:
        status = app.query_one("#training-status", Static)
        await wait_until(pilot, lambda: "Not opened" in str(status.render()), timeout=60)
        assert "not a text log" in str(status.render())
