"""`tfgpu-tui check`: JSON shape, exit codes, bad interpreters; the real inspection (needs TensorFlow)."""

from __future__ import annotations

import json
import sys

import pytest

from tfgpu_tui.cli import main
from tfgpu_tui.env.check_run import run_check
from tfgpu_tui.env.checks import evaluate
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.recorded import load_recording

EXIT_FOR_STATUS = {"ok": 0, "warning": 1, "failure": 3}  # 2 is a bad command line


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["check", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_missing_interpreter_gives_findings_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "--python", "/nonexistent/python")
    assert code == 3 and data["status"] == "failure"
    found = {finding["id"]: finding for finding in data["findings"]}
    assert found["python_env"]["status"] == "failure"
    assert "No Python interpreter at /nonexistent/python" in found["tensorflow"]["detail"]
    assert set(found["driver"]) >= {"id", "status", "title", "detail", "fix"}


def test_global_python_option_is_used(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--python", "/nonexistent/python2", "check", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 3 and data["facts"]["python"] == "/nonexistent/python2"


def test_bad_timeout_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--timeout", "0"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "--timeout: must be between" in error and "(got 0)" in error


def test_a_failed_check_and_a_bad_command_line_exit_differently(
    capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    """Both were 2: a script could not tell a broken environment from a typo."""
    failed = main(["check", "--json", "--python", "/nonexistent/python"])
    assert json.loads(capsys.readouterr().out)["status"] == "failure"
    with pytest.raises(SystemExit) as usage:
        main(["check", "--no-such-option"])
    unwritable = main(
        ["check", "--python", "/nonexistent/python", "--record", str(tmp_path / "no" / "x.json")]
    )
    assert (failed, usage.value.code, unwritable) == (3, 2, 2)


def test_check_and_probe_choose_the_activated_venv_as_the_dashboard_does(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """The help said "default: the one running tfgpu-tui"; then a TensorFlow job's interpreter was checked
    by the tab while `check` and `probe` said TensorFlow was missing. All choose with env/targets.py and
    say what they chose in one line: here the activated venv, without TensorFlow."""
    import venv

    from tfgpu_tui.env import targets

    venv.create(tmp_path / "venv", with_pip=False)
    python = str(tmp_path / "venv" / "bin" / "python3")
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "venv"))
    monkeypatch.setattr(targets, "tensorflow_processes", list)  # no job of the machine's
    code = main(["check", "--timeout", "60"])
    first = capsys.readouterr().err.splitlines()[0]
    assert code == 3
    assert first == f"tfgpu-tui check: checking {python} (the activated venv ($VIRTUAL_ENV))"
    assert main(["probe", "--device", "CPU", "--budget-mb", "100"]) == 2
    refusal = capsys.readouterr().err
    assert refusal.count("\n") == 1 and f"TensorFlow is not installed in {python} " in refusal
    assert "the activated venv ($VIRTUAL_ENV)" in refusal


@pytest.fixture(scope="module")
def real_report():
    run = run_check(sys.executable, 120)
    return run.report, run.inspection


@pytest.mark.tf
def test_real_probe_cpu_build(real_report) -> None:
    report, inspection = real_report
    assert inspection.outcome.ok, inspection.outcome.message
    found = {finding.id: finding for finding in report.findings}
    assert found["tensorflow"].status is Status.OK and "TensorFlow 2." in found["tensorflow"].detail
    assert report.facts["tf_is_cuda_build"] is False  # CI installs tensorflow-cpu
    build = found["cpu_only_build"]
    assert build.status in (Status.WARNING, Status.FAILURE) and "CPU-only build" in build.detail
    assert "tensorflow[and-cuda]==" in build.fix
    assert found["placement"].status is Status.SKIPPED and "on the CPU" in found["placement"].detail
    assert found["gpus_visible"].status is Status.SKIPPED
    assert inspection.retry is None  # no VLOG re-run for a CPU build


@pytest.mark.tf
def test_real_check_json_and_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "--timeout", "120")
    assert set(data) == {"status", "counts", "findings", "facts"}
    assert code == EXIT_FOR_STATUS[data["status"]]
    statuses = {finding["status"] for finding in data["findings"]}
    assert statuses <= {"ok", "warning", "failure", "skipped"}
    assert data["status"] == (
        "failure" if "failure" in statuses else "warning" if "warning" in statuses else "ok"
    )
    facts = data["facts"]
    for key in ("driver_version", "tf_version", "tf_build_cuda", "tf_build_cudnn", "gpus_nvml", "gpus_tf"):
        assert key in facts
    assert facts["tf_version"].startswith("2.") and facts["gpus_tf"] == []


def test_record_writes_a_replayable_recording(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "env.json"
    code = main(["check", "--python", "/nonexistent/python", "--record", str(path)])
    assert code == 3 and "Result: failure" in capsys.readouterr().out
    facts, inspection = load_recording(path)
    assert facts.interpreter.error.startswith("No Python interpreter")
    assert inspection.outcome.error_kind == "interpreter_missing"
    found = {finding.id: finding for finding in evaluate(facts, inspection)}
    assert found["tensorflow"].status is Status.FAILURE
