"""The TensorFlow inspection's child process: missing, broken, crashing, hanging interpreters: findings."""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers.paths import FIXTURES
from tests.helpers.waiting import wait_for
from tfgpu_tui.env.checks import evaluate
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.recorded import load_recording
from tfgpu_tui.env.tf_inspection import InspectionRun, inspect_tensorflow, run_inspection
from tfgpu_tui.proc.spawn import stop_all

FIXTURES = FIXTURES / "env"


def fake_tensorflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """Put a `tensorflow` package whose import runs `body` first on the child's path."""
    package = tmp_path / "fake_site" / "tensorflow"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(body)
    monkeypatch.setenv("PYTHONPATH", str(package.parent))


def script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def tf_finding(outcome_run: InspectionRun):
    facts, _ = load_recording(FIXTURES / "all_good.json")
    return {f.id: f for f in evaluate(facts, outcome_run)}["tensorflow"]


def test_missing_interpreter() -> None:
    outcome = run_inspection("/nonexistent/bin/python", 5)
    assert outcome.error_kind == "interpreter_missing"
    assert "No Python interpreter at /nonexistent/bin/python" in outcome.message
    finding = tf_finding(InspectionRun(outcome))
    assert finding.status is Status.FAILURE and "--python" in finding.fix


def test_not_executable(tmp_path: Path) -> None:
    path = tmp_path / "python"
    path.write_text("not a program")
    outcome = run_inspection(str(path), 5)
    assert outcome.error_kind == "interpreter_unusable" and "not executable" in outcome.message


def test_not_a_python(tmp_path: Path) -> None:
    fake = script(tmp_path, "python", "#!/bin/sh\necho 'this is not python' >&2\nexit 3\n")
    outcome = run_inspection(fake, 5)
    assert outcome.error_kind == "crashed"
    assert "status 3" in outcome.message and "this is not python" in outcome.message


def test_tensorflow_not_installed(tmp_path: Path) -> None:
    # The same interpreter without site-packages: a real Python without TensorFlow.
    bare = script(tmp_path, "python", f'#!/bin/sh\nexec "{sys.executable}" -S -I "$@"\n')
    run = inspect_tensorflow(bare, 30)
    assert run.outcome.ok and run.retry is None
    assert run.data["tensorflow"]["installed"] is False
    finding = tf_finding(run)
    assert finding.status is Status.FAILURE
    assert "TensorFlow is not installed in" in finding.detail
    assert "-m pip install 'tensorflow[and-cuda]==2.21.0'" in finding.fix  # the newest for Python 3.11


def test_import_error_inside_tensorflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_tensorflow(tmp_path, monkeypatch, "raise RuntimeError('module compiled against NumPy 1.x')\n")
    outcome = run_inspection(sys.executable, 30)
    assert outcome.ok and outcome.data["tensorflow"]["installed"] is True
    finding = tf_finding(InspectionRun(outcome))
    assert finding.status is Status.FAILURE and "NumPy 1.x" in finding.detail


def test_probe_that_crashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = (
        "import sys, os\n"
        "sys.stderr.write('E0000 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.1.0 but source was "
        "compiled with: 9.3.0.\\n')\nsys.stderr.flush()\nos._exit(134)\n"
    )
    fake_tensorflow(tmp_path, monkeypatch, body)
    outcome = run_inspection(sys.executable, 30)
    assert outcome.error_kind == "crashed" and "status 134" in outcome.message
    finding = tf_finding(InspectionRun(outcome))
    assert finding.status is Status.FAILURE
    assert "cuDNN" in finding.detail or "CuDNN" in finding.detail  # the log line was diagnosed
    assert "LD_LIBRARY_PATH" in finding.fix


def test_probe_that_hangs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_tensorflow(
        tmp_path, monkeypatch, "import sys, time\nsys.stderr.write('loading...\\n')\ntime.sleep(60)\n"
    )
    outcome = run_inspection(sys.executable, 1.5)
    assert outcome.error_kind == "timeout"
    assert "did not finish within 1.5 s" in outcome.message
    # stopped, not waited out: it ended before the hanging import would have on its own (it sleeps 60 s); an
    # order of two events rather than a small number of seconds a loaded machine can overrun
    assert 1.5 <= outcome.seconds < 60
    assert "--timeout" in tf_finding(InspectionRun(outcome)).fix


def test_stdout_noise_does_not_break_the_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = "print('hello from tensorflow')\n__version__ = '0.0'\n"
    fake_tensorflow(tmp_path, monkeypatch, body)
    outcome = run_inspection(sys.executable, 30)
    assert outcome.ok, outcome.message
    assert "hello from tensorflow" in outcome.stderr  # the inspection moved TF's prints to stderr
    assert outcome.data["tensorflow"]["version"] == "0.0"


def test_report_is_whole_and_shutdown_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an atexit handler stands for TensorFlow's interpreter shutdown: the child ends with os._exit after the
    # report is flushed, so the handler never runs, while prints left without a newline still arrive, from
    # Python and from native code (the C library's buffered stdout)
    body = (
        "import atexit, ctypes, sys\n"
        "atexit.register(lambda: sys.stderr.write('shutdown ran\\n'))\n"
        "print('no newline', end='')\n"
        "ctypes.CDLL(None).printf(b'native, no newline')\n"
        "__version__ = '0.0'\n"
    )
    fake_tensorflow(tmp_path, monkeypatch, body)
    outcome = run_inspection(sys.executable, 30)
    assert outcome.ok and outcome.returncode == 0, outcome.message
    assert outcome.data["tensorflow"]["version"] == "0.0"
    assert "no newline" in outcome.stderr and "native, no newline" in outcome.stderr
    assert "shutdown ran" not in outcome.stderr


def test_user_log_level_is_overridden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    fake_tensorflow(tmp_path, monkeypatch, "__version__ = '0.0'\n")
    outcome = run_inspection(sys.executable, 30)
    assert outcome.data["env"]["TF_CPP_MIN_LOG_LEVEL"] == "0"
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"


def test_stop_all_ends_a_running_probe(tmp_path: Path) -> None:
    slow = script(tmp_path, "python", "#!/bin/sh\nsleep 30\n")
    outcomes = []
    thread = threading.Thread(target=lambda: outcomes.append(run_inspection(slow, 60)))
    thread.start()
    wait_for(stop_all, timeout=60)  # until there is a child to stop (it can start late on a loaded machine)
    thread.join(25)  # the child sleeps 30 s: the inspection still running after this was not stopped
    assert not thread.is_alive()  # no elapsed-time bound: the SIGKILL below says stop_all ended it
    assert outcomes[0].error_kind == "crashed" and "was killed by SIGKILL" in outcomes[0].message


def test_one_run_collects_the_loader_messages(tmp_path: Path) -> None:
    """A CUDA build without a GPU is inspected once, with dso_loader's VLOG(1) lines on in that run."""
    calls = tmp_path / "calls"
    report = '{"inspection_version": 1, "tensorflow": {"installed": true, "version": "2.18.0"}, '
    report += '"build_info": {"is_cuda_build": true}, "physical_gpus": []}'
    fake = script(
        tmp_path,
        "python",
        f"#!/bin/sh\necho \"$TF_CPP_VMODULE $TF_CPP_MIN_LOG_LEVEL\" >> {calls}\necho '{report}'\n",
    )
    run = inspect_tensorflow(fake, 30)
    assert run.outcome.ok and run.retry is None
    assert calls.read_text().splitlines() == ["dso_loader=1 0"]
