"""scripts/env_matrix.py's pure parts: which cases the full matrix holds, and which part of a printed fix it
runs (the script itself builds gigabytes of venvs and is not run here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tfgpu_tui.env import compat

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "env_matrix.py"
PY = Path("/v/bin/python")


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("env_matrix", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_matrix_has_each_case_once_and_only_pythons_with_wheels() -> None:
    matrix = load()
    cases = matrix.full_matrix()
    assert len({case.name for case in cases}) == len(cases)
    for case in cases:
        tf = next((r for r in case.install if r.startswith(("tensorflow==", "tensorflow["))), None)
        row = compat.build_row_for(tf.split("==")[1]) if tf else None
        if row is not None:
            assert row.supports_python(compat.major_minor(case.python + ".0") or (0, 0)), case.name
        assert case.driver in matrix.DRIVERS
    names = {case.name for case in cases}
    assert {"right-2.21-py3.13", "libs-missing-2.14-py3.11", "cpu-2.13-py3.10"} <= names


def test_the_runnable_part_of_a_printed_fix() -> None:
    runnable = load().runnable
    assert runnable(f"Install it: `{PY} -m pip install 'keras==2.15.*'`, then rerun.", PY) == (
        f"{PY} -m pip install 'keras==2.15.*'"
    )
    assert runnable(
        f"{PY} -m pip install 'tf-keras~=2.18.0' && export TF_USE_LEGACY_KERAS=1   # only", PY
    ) == (f"{PY} -m pip install 'tf-keras~=2.18.0' && export TF_USE_LEGACY_KERAS=1")
    assert runnable("Upgrade the NVIDIA driver to >= 555.42.02.", PY) == ""
    assert (
        runnable("Upgrade the driver, or use TF 2.11: unset LD_LIBRARY_PATH", PY) == "unset LD_LIBRARY_PATH"
    )
