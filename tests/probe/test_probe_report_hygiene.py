"""A probe child's report is JSON: its escapes (``\\u001b``) decode to controls that cleaning the encoded line
cannot see, so its strings are cleaned after decoding, keys too."""

from __future__ import annotations

import json

from tfgpu_tui.probe import worker
from tfgpu_tui.probe.trial_runner import parse_report

TITLE_AND_CLEAR = "\x1b]0;pwned\x07\x1b[2J"


def test_a_reports_escaped_controls_do_not_survive_decoding() -> None:
    report = {"error": f"{TITLE_AND_CLEAR}OOM", "trials": [{"message": f"x{TITLE_AND_CLEAR}y"}], "peak": 3}
    line = worker.RESULT_MARKER + json.dumps({**report, f"k{TITLE_AND_CLEAR}": 1})
    assert "\x1b" not in line  # json.dumps escaped them: the line itself looks clean
    parsed = parse_report(f"noise\n{line}\n")
    assert parsed == {"error": "OOM", "trials": [{"message": "xy"}], "peak": 3, "k": 1}


def test_a_report_that_is_not_an_object_is_none() -> None:
    assert parse_report(worker.RESULT_MARKER + "[1, 2]") is None
    assert parse_report(worker.RESULT_MARKER + "{broken") is None
