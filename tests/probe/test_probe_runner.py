"""The probe runner: one child per trial, classification of what the child did, timeouts, cancellation."""

from __future__ import annotations

import json
import stat
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers.paths import FIXTURES
from tfgpu_tui.probe import trial_runner as runner
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.rule_of_thumb import ModelFacts
from tfgpu_tui.probe.trial import ERROR, FITS, OOM, TIMEOUT
from tfgpu_tui.probe.trial_runner import TrialRunner, run_probe

FIXTURES = FIXTURES / "probe"
FAKE_WORKER = FIXTURES / "fake_worker.py"


def fake_request(**changes: object) -> ProbeRequest:
    fields: dict[str, object] = {
        "model": "builtin:cnn",
        "device": "CPU",
        "budget_mb": 100.0,
        "max_batch": 4096,
    }
    fields.update(changes)
    return ProbeRequest(**fields)  # type: ignore[arg-type]


@pytest.fixture
def fake_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Set the fake worker's behaviour; returns the file its pid is written to."""
    pidfile = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_PROBE_PIDFILE", str(pidfile))

    def set_mode(mode: str) -> Path:
        monkeypatch.setenv("FAKE_PROBE_MODE", mode)
        return pidfile

    return set_mode


def child_is_gone(pidfile: Path) -> bool:
    pid = int(pidfile.read_text())
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_full_probe_with_fake_worker(fake_mode) -> None:
    fake_mode("linear")  # peak = 10 + 0.5 * batch: the limit for 100 MB is 180
    started: list[int] = []
    done: list[int] = []
    result = run_probe(
        fake_request(),
        TrialRunner(fake_request(), FAKE_WORKER),
        on_trial_start=started.append,
        on_trial_done=lambda trial: done.append(trial.batch_size),
    )
    assert started == done == [t.batch_size for t in result.trials]
    assert 171 <= result.max_batch <= 180
    assert result.recommended_batch is not None and 10 + 0.5 * result.recommended_batch < 90
    data = result.as_dict()
    assert data["max_batch"] == result.max_batch and data["device"] == "CPU" and data["budget_mb"] == 100
    assert {t["result"] for t in data["trials"]} <= {"fits", "oom"}
    assert data["snippet"] == f"batch_size = {result.recommended_batch}"


def test_crashing_child_is_an_error_with_its_stderr(fake_mode) -> None:
    fake_mode("crash")
    result = run_probe(fake_request(), TrialRunner(fake_request(), FAKE_WORKER))
    assert len(result.trials) == 1 and result.trials[0].result == ERROR
    assert "exited with status 3" in result.error and "the fake worker crashed" in result.error
    assert result.summary_lines()[0].startswith("Probe stopped:")


@pytest.mark.parametrize("mode", ["sigkill", "oom_stderr", "oom_exception"])
def test_out_of_memory_in_its_forms(fake_mode, mode: str) -> None:
    fake_mode(mode)
    trial = TrialRunner(fake_request(), FAKE_WORKER).run_trial(64)
    assert trial.result == OOM, trial.message


def test_hanging_child_times_out_and_is_killed(fake_mode) -> None:
    pidfile = fake_mode("hang")
    request = fake_request(trial_timeout_seconds=0.5)
    started = time.monotonic()
    trial = TrialRunner(request, FAKE_WORKER).run_trial(8)
    assert trial.result == TIMEOUT and "0.5 s" in trial.message
    # killed, not waited out: it ended before the hanging child would have on its own (it sleeps 60 s); an
    # order of two events rather than a small number of seconds a loaded machine can overrun
    assert time.monotonic() - started < 60
    assert child_is_gone(pidfile)


def test_cancel_stops_the_running_child(fake_mode) -> None:
    pidfile = fake_mode("hang")
    request = fake_request()
    trial_runner = TrialRunner(request, FAKE_WORKER)
    results = []
    thread = threading.Thread(target=lambda: results.append(run_probe(request, trial_runner)))
    thread.start()
    deadline = time.monotonic() + 10
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    trial_runner.cancel()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert results[0].cancelled and results[0].trials == []
    assert child_is_gone(pidfile)


def test_tensorflow_missing_in_the_target_interpreter(tmp_path: Path) -> None:
    # The real worker, run by an interpreter that cannot see site-packages (so no TensorFlow).
    python = tmp_path / "python-without-tf"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    request = fake_request(python=str(python))
    result = run_probe(request)
    assert len(result.trials) == 1
    assert "TensorFlow is missing in the target interpreter" in result.error
    assert str(python) in result.error or "tensorflow" in result.error


def test_interpreter_that_does_not_exist() -> None:
    trial = TrialRunner(fake_request(python="/nonexistent/python3")).run_trial(2)
    assert trial.result == ERROR and "cannot start /nonexistent/python3" in trial.message


def test_child_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)
    env = runner.child_environment("CPU")
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["TF_ENABLE_ONEDNN_OPTS"] == "1"
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    assert runner.child_environment("CPU")["TF_ENABLE_ONEDNN_OPTS"] == "0"
    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    gpu = runner.child_environment("GPU:0")
    assert "TF_FORCE_GPU_ALLOW_GROWTH" not in gpu and gpu["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_gpu_trial_passes_the_budget_to_the_child_cpu_does_not() -> None:
    gpu = json.loads(TrialRunner(fake_request(device="GPU:1", budget_mb=5000)).command(32)[-1])
    cpu = json.loads(TrialRunner(fake_request()).command(32)[-1])
    assert gpu["budget_mb"] == 5000 and gpu["device"] == "GPU:1" and gpu["batch_size"] == 32
    assert cpu["budget_mb"] is None


@pytest.mark.tf
def test_real_cnn_on_cpu_with_a_small_budget() -> None:
    request = fake_request(budget_mb=12.0, max_batch=512, trial_timeout_seconds=120)
    result = run_probe(request)
    assert not result.error, result.error
    best = next(t for t in result.trials if t.batch_size == result.max_batch)
    assert best.result == FITS and best.peak_mb is not None and best.peak_mb <= 12.0
    above = [t for t in result.trials if t.batch_size > best.batch_size]
    assert above, "the search tried a size above the one it reports"
    assert next(t for t in sorted(above, key=lambda t: t.batch_size)).result == OOM
    # The child counts the model as by hand (see test_probe_rule_of_thumb): Adam's slots from its variables.
    assert result.facts == ModelFacts(
        225_034, 225_034, "Adam", 2.0, "variables", "float32", "float32", 38_122
    )
    assert result.as_dict()["rule_of_thumb"]["batch_size"] == result.max_batch


@pytest.mark.tf
def test_real_model_function_that_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)
    request = fake_request(model="failing_model:build").resolved()
    result = run_probe(request)
    assert len(result.trials) == 1
    assert "RuntimeError while building the model" in result.error
    assert "/data/imagenet is missing" in result.error


@pytest.mark.tf
def test_real_model_with_an_unknown_input_dimension_says_what_to_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(FIXTURES)
    trial = TrialRunner(fake_request(model="failing_model:variable_length")).run_trial(4)
    assert trial.result == ERROR
    assert "unknown dimension (None, None, 8)" in trial.message and "keras.Input(shape=" in trial.message
