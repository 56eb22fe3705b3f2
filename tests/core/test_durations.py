"""One running-time style in the Monitor and `tfgpu-tui gpus`; one span style for training times."""

from __future__ import annotations

import dataclasses

import pytest

from tfgpu_tui.commands.gpus import process_line
from tfgpu_tui.durations import running_text, span_text
from tfgpu_tui.gpu.model import HostState, ProcessRow
from tfgpu_tui.ui.widgets.gpu_format import duration_text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (59.9, "59s"),
        (60, "1m"),
        (125, "2m"),
        (3599, "59m"),
        (3600, "1h 00m"),
        (3 * 3600 + 2 * 60 + 59, "3h 02m"),
        (86399, "23h 59m"),
        (3 * 86400 + 4 * 3600 + 59 * 60, "3d 04h"),
        (-5, "0s"),
    ],
)
def test_running_text(seconds: float, text: str) -> None:
    assert running_text(seconds) == text


def test_the_monitor_and_gpus_print_the_same_running_time() -> None:
    seconds = 3725.0  # 1:02:05 from `gpus` before, 1h 02m in the TUI
    row = ProcessRow(4242, 0, 2048.0, 50.0, HostState.OK, user="ana", command="python train.py")
    line = process_line(dataclasses.replace(row, running_seconds=seconds))
    assert duration_text(seconds) == "1h 02m" and " 1h 02m  python train.py" in line
    assert running_text(None) == "N/A" and "       -  python train.py" in process_line(row)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (0.012, "12ms"),
        (0, "0s"),
        (45.4, "45s"),
        (185, "3m 05s"),
        (7380, "2h 03m"),
        (90000, "1d 01h"),
    ],
)
def test_span_text(seconds: float | None, text: str) -> None:
    assert span_text(seconds) == text


def test_minutes_text_says_seconds_for_two_minutes_then_minutes() -> None:
    from tfgpu_tui.durations import minutes_text

    assert minutes_text(45) == "45 s" and minutes_text(119) == "119 s" and minutes_text(180) == "3 min"
    assert minutes_text(45, words=True) == "45 seconds" and minutes_text(600, words=True) == "10 minutes"
