"""Shared test setup: private settings per test; fakenvml fixtures for the real NVML path."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import FAKENVML_DIR
from tests.helpers.tensorflow_missing import tensorflow_missing_reason

# A test that takes one of these fixtures drives a real outside component: it is an `e2e` test.
E2E_FIXTURES = frozenset({"fakenvml_lib_dir", "fakenvml", "scenario", "jupyter"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the `tf` tests, with the reason, where TensorFlow is not installed; mark the tests that take a
    real outside component's fixture `e2e`; put the `serial` tests on one xdist worker."""
    installed = importlib.util.find_spec("tensorflow") is not None
    reason = tensorflow_missing_reason(installed, (sys.version_info.major, sys.version_info.minor))
    for item in items:
        if reason is not None and item.get_closest_marker("tf") is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
        if E2E_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("serial") is not None:
            item.add_marker(pytest.mark.xdist_group("serial"))


@pytest.fixture(autouse=True)
def _private_config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config-home")))
    monkeypatch.delenv("TFGPU_TUI_CONFIG", raising=False)
    # notify's status file (read by the header) and state file: never a notify the user runs on this machine
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path_factory.mktemp("runtime")))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state-home")))
    monkeypatch.delenv("TFGPU_TUI_NOTIFY", raising=False)


NO_DRIVER = "error init=LIBRARY_NOT_FOUND\n"


@pytest.fixture
def quick_simulated_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's probe trials without their pause (0.4 s each, so a person sees the table fill): for the
    tests that need a whole simulated probe's result, not its pace."""
    from tfgpu_tui.probe import simulated

    monkeypatch.setattr(simulated, "TRIAL_SECONDS", 0.0)


@pytest.fixture(scope="session")
def fakenvml_lib_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build fakenvml into a temporary directory (for child processes: put it on LD_LIBRARY_PATH)."""
    if not (FAKENVML_DIR / "build.sh").exists():
        pytest.skip(f"fakenvml not found at {FAKENVML_DIR} (set TFGPU_FAKENVML_DIR)")
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build fakenvml")
    out = tmp_path_factory.mktemp("fakenvml")
    subprocess.run(["sh", str(FAKENVML_DIR / "build.sh"), str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="session")
def fakenvml(fakenvml_lib_dir: Path) -> Path:
    """fakenvml loaded into this test process before pynvml looks for libnvidia-ml.so.1."""
    import pynvml

    if pynvml.nvmlLib is not None:
        pytest.skip("a real libnvidia-ml is already loaded in this process")
    out = fakenvml_lib_dir
    ctypes.CDLL(str(out / "libnvidia-ml.so.1"))
    no_driver = out / "no_driver.txt"
    no_driver.write_text(NO_DRIVER)
    os.environ["FAKE_NVML_SCENARIO"] = str(no_driver)
    return out


@pytest.fixture
def scenario(fakenvml: Path, tmp_path: Path):
    """Write a scenario (text) and point fakenvml at it; afterwards later tests see 'no driver' again."""
    path = tmp_path / "scenario.txt"

    def write(text: str) -> Path:
        path.write_text(text)
        os.environ["FAKE_NVML_SCENARIO"] = str(path)
        return path

    yield write
    os.environ["FAKE_NVML_SCENARIO"] = str(fakenvml / "no_driver.txt")


@pytest.fixture
def sleepers():
    """Real processes for scenarios to hold GPU memory."""
    started: list[subprocess.Popen] = []

    def spawn(count: int) -> list[subprocess.Popen]:
        new = [subprocess.Popen(["sleep", "60"]) for _ in range(count)]
        started.extend(new)
        return new

    yield spawn
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """A real Jupyter server with one idle notebook kernel (tests/jupyter_fixture.py), one per test module."""
    from tests.helpers.jupyter_fixture import idle_notebook_session

    yield from idle_notebook_session(tmp_path_factory.mktemp("jupyter"))
