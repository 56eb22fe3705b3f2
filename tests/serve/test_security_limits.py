"""Limits: a child's output is bounded (the last 64 KB kept, the rest counted), `check --timeout` holds for
an interpreter that hangs, and a local dashboard with --least-privilege behaves like a web session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.monitor_helpers import record_notifications
from tests.helpers.waiting import wait_until
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.trial_runner import TrialRunner
from tfgpu_tui.proc.spawn import TAIL_BYTES, BoundedCapture
from tfgpu_tui.serve.policy import WRITES_REFUSED
from tfgpu_tui.settings import Settings

pytestmark = pytest.mark.e2e  # real child processes

MB = 1024 * 1024


def test_capture_keeps_head_and_tail_and_counts_the_rest() -> None:
    capture = BoundedCapture(limit=10, head_limit=4)
    for chunk in (b"HEAD", b"0123456789" * 3, b"END"):
        capture.feed(chunk)
    assert capture.head == b"HEAD" and capture.tail == b"3456789END" and capture.dropped == 23
    assert capture.data() == b"HEAD\n[... 23 bytes of output left out ...]\n3456789END"


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


# The peak is /proc/self/status's VmHWM, this process's own address space: ru_maxrss would also count the
# parent's peak, which Linux carries across the fork/vfork + exec that started us.
MEASURE = """
import json, sys
import tfgpu_tui.ui.app  # the dashboard's own weight
from tfgpu_tui.env.tf_inspection import run_inspection
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.trial_runner import TrialRunner

outcome = run_inspection(sys.argv[1], 120)
trial = TrialRunner(ProbeRequest(budget_mb=100.0), sys.argv[2]).run_trial(8)
status = open("/proc/self/status").read()
peak_kb = int(status.split("VmHWM:", 1)[1].split()[0])
print(json.dumps({
    "peak_rss_mb": peak_kb / 1024,
    "probe_stderr_chars": len(outcome.stderr), "probe_note": "bytes of output left out" in outcome.stderr,
    "trial_message_chars": len(trial.message), "trial_note": "bytes of output left out" in trial.message,
    "trial_message_end": trial.message[-200:],
}))
"""


def test_a_child_printing_200_mb_costs_the_dashboard_little(tmp_path: Path) -> None:
    """The env check's interpreter prints 200 MB on stdout (and 200 MB on stderr); a batch probe trial's
    child writes 300 MB to stderr. The measuring process imports the dashboard first."""
    flood = executable(
        tmp_path / "flooding-python",
        "#!/bin/sh\nhead -c 200000000 /dev/zero | tr '\\0' x\nhead -c 200000000 /dev/zero | tr '\\0' y >&2\n",
    )
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import sys\nfor _ in range(300):\n    sys.stderr.write('E' * (1 << 20))\nsys.exit(3)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", MEASURE, str(flood), str(worker)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    print(figures)  # the peak is the figure the issue asks about
    assert figures["peak_rss_mb"] < 100
    assert figures["probe_stderr_chars"] <= 2 * TAIL_BYTES + 100
    assert figures["probe_note"] and figures["trial_note"]
    assert figures["trial_message_chars"] <= TAIL_BYTES + 200 and "EEEE" in figures["trial_message_end"]


def test_trial_message_says_how_much_was_left_out(tmp_path: Path) -> None:
    worker = tmp_path / "worker.py"
    worker.write_text("import sys\nsys.stderr.write('x' * (1 << 20) + '\\nlast line\\n')\nsys.exit(3)\n")
    trial = TrialRunner(ProbeRequest(budget_mb=100.0), worker).run_trial(8)
    assert "last line" in trial.message and len(trial.message) <= TAIL_BYTES + 200


def test_check_timeout_holds_for_a_hanging_interpreter(tmp_path: Path) -> None:
    import re

    hanging = executable(tmp_path / "hanging-python", "#!/bin/sh\nexec sleep 600\n")
    run = subprocess.run(
        [sys.executable, "-m", "tfgpu_tui", "check", "--python", str(hanging), "--timeout", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in run.stderr and run.returncode == 3  # a failed check
    assert "did not answer within 2 s" in run.stdout
    # every wait the check reports is within --timeout (it used to wait 20 s for the facts, + the probe's):
    # the limits it used, not the seconds the run took on this machine
    waits = [float(seconds) for seconds in re.findall(r"within ([\d.]+) s", run.stdout)]
    assert waits and max(waits) <= 2, waits


async def test_local_least_privilege_refuses_outside_logs_and_writes(tmp_path: Path, monkeypatch) -> None:
    from textual.widgets import Input

    from tfgpu_tui.ui.app import TfgpuApp

    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    log = runs / "train.log"
    log.write_text("Epoch 1/2\n")
    settings = Settings(demo=True, log_path=log, log_path_given=True, least_privilege=True)
    app = TfgpuApp(settings, initial_tab="training")
    async with app.run_test(size=(140, 45)) as pilot:
        shown = record_notifications(app)
        await pilot.pause()
        await pilot.press("o")
        field = app.query_one("#training-path", Input)
        await wait_until(pilot, lambda: field.has_focus)
        field.value = "/etc/passwd"
        await pilot.press("enter")
        await wait_until(pilot, lambda: "outside the log root" in str(field.border_subtitle))
        await pilot.press("escape")
        await pilot.press("1")
        await wait_until(pilot, lambda: app.query_one("EnvironmentTab").report is not None, timeout=60)
        await pilot.press("s")
        await wait_until(pilot, lambda: any(WRITES_REFUSED in message for _, message in shown))
    assert not list(tmp_path.glob("tfgpu-env-report-*"))


async def test_pick_list_lists_only_logs_under_the_root(tmp_path: Path, monkeypatch) -> None:
    from textual.widgets import OptionList

    from tfgpu_tui.proc.log_writers import LogCandidate
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.training import TrainingTab

    runs = tmp_path / "runs"
    runs.mkdir()
    mine = runs / "mine.log"
    mine.write_text("Epoch 1/2\n")
    theirs = tmp_path / "other-user" / "secret-job.log"
    found = [
        LogCandidate(101, "python secret.py", theirs, "stdout"),
        LogCandidate(102, "python mine.py", mine, "stdout"),
    ]
    monkeypatch.setattr(TrainingTab, "log_finder", staticmethod(lambda: found))
    settings = Settings(log_path=runs / "train.log", least_privilege=True)
    app = TfgpuApp(settings, initial_tab="training")
    async with app.run_test(size=(150, 45)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        options = app.query_one("#training-pick-list", OptionList)
        await wait_until(pilot, lambda: options.option_count == 1)
        assert "PID 102" in str(options.get_option_at_index(0).prompt)
        assert "secret" not in str(options.get_option_at_index(0).prompt)
