"""`tfgpu-tui probe --pipeline` without TensorFlow: a malformed spec is refused before anything runs, and the
child machinery (timeout, cancellation, reports) works with a stand-in child."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.pipeline_report import HEALTHY_REPORT
from tfgpu_tui.cli import main
from tfgpu_tui.commands import probe as probe_command
from tfgpu_tui.commands import probe_pipeline
from tfgpu_tui.probe import pipeline_runner
from tfgpu_tui.probe.pipeline_request import PipelineRequest
from tfgpu_tui.probe.pipeline_runner import PipelineRunner
from tfgpu_tui.probe.pipeline_worker import PHASE_MARKER
from tfgpu_tui.probe.worker import RESULT_MARKER
from tfgpu_tui.proc.marks import CHILD_ENV_VAR, argv_is_child


def stand_in(tmp_path: Path, body: str) -> Path:
    """A child script that says its phases as the real one does, then runs `body`."""
    script = tmp_path / "stand_in.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, sys, time
            def phase(name):
                print({PHASE_MARKER!r} + name, flush=True)
            """
        )
        + textwrap.dedent(body)
    )
    return script


@pytest.mark.parametrize("spec", ["os;rm -rf ~:x", "../evil:make", "data:make()", "data"])
def test_a_malformed_spec_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], spec: str
) -> None:
    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("ran something for a malformed spec")

    monkeypatch.setattr(probe_command, "resolve_target", must_not_run)
    monkeypatch.setattr(pipeline_runner, "run_worker", must_not_run)
    assert main(["probe", "--pipeline", spec, "--json"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1
    assert out.err.startswith("tfgpu-tui probe: ") and "package.module:function" in out.err


def test_pipeline_and_compare_precision_do_not_combine(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["probe", "--pipeline", "data:make", "--compare-precision", "--python", sys.executable]
    assert main(argv) == 2
    assert "leave out --compare-precision" in capsys.readouterr().err


def test_the_childs_report_becomes_the_json_pipeline_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = f"print({RESULT_MARKER!r} + json.dumps({HEALTHY_REPORT!r}))\n"
    script = stand_in(tmp_path, "phase('train')\n" + report)
    monkeypatch.setattr(pipeline_runner, "PIPELINE_SCRIPT", script)
    monkeypatch.setattr(probe_pipeline, "interpreter_problem", lambda python, why: None)  # TF not needed
    code = main(["probe", "--device", "CPU", "--python", sys.executable, "--pipeline", "data:make", "--json"])
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert code == 0 and data["device"] == "CPU" and data["error"] is None
    pipeline = data["pipeline"]
    assert pipeline["samples_per_second"] == 100 and pipeline["model_samples_per_second"] == 1000
    assert pipeline["input_bound"] is True and pipeline["gpu_wait_percent"] == 90
    assert "Timing the pipeline data:make" in out.err  # progress on stderr keeps stdout JSON


def test_a_child_stuck_before_the_first_batch_ends_at_the_timeout(tmp_path: Path) -> None:
    script = stand_in(tmp_path, "phase('first_batch')\ntime.sleep(120)\n")
    request = PipelineRequest("data:make", timeout_seconds=1.0)
    started = time.monotonic()
    result = PipelineRunner(request, script).run()
    assert result.error == "stopped after 1 s (--timeout): data:make yielded no batch in that time"
    assert time.monotonic() - started < 60  # ended, not waited out (the child sleeps 120 s)


def test_cancel_ends_the_child(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    script = stand_in(tmp_path, f"open({str(marker)!r}, 'w').close()\ntime.sleep(120)\n")
    runner = PipelineRunner(PipelineRequest("data:make", timeout_seconds=120), script)
    results = []
    thread = threading.Thread(target=lambda: results.append(runner.run()))
    thread.start()
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    runner.cancel()
    thread.join(timeout=60)
    assert not thread.is_alive() and results[0].cancelled
    assert results[0].summary_lines() == ["Pipeline probe cancelled."]


def test_a_crashing_child_says_how_and_where(tmp_path: Path) -> None:
    script = stand_in(tmp_path, "phase('model')\nsys.stderr.write('Fatal: bad things\\n')\nsys.exit(3)\n")
    result = PipelineRunner(PipelineRequest("data:make"), script).run()
    assert result.error == (
        "the probe's child process exited with status 3 while building the model builtin:cnn: "
        "Fatal: bad things"
    )


def test_the_child_is_marked_as_ours_on_its_command_line_and_in_its_environment() -> None:
    runner = PipelineRunner(PipelineRequest("data:make"))
    assert argv_is_child(runner.command())
    assert pipeline_runner.pipeline_environment("CPU")[CHILD_ENV_VAR] == "1"
    assert pipeline_runner.pipeline_environment("GPU:0")["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
