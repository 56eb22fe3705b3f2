"""scripts/env_matrix.py's pure parts: which cases the full matrix holds, and which part of a printed fix it
runs (the script itself builds gigabytes of venvs and is not run here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.helpers.paths import ROOT
from tfgpu_tui.env import compat

SCRIPT = ROOT / "scripts" / "env_matrix.py"
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


def test_a_run_of_some_cases_keeps_the_earlier_rows_and_the_hand_written_sections() -> None:
    matrix = load()
    cases = {case.name: case for case in matrix.full_matrix()}
    first = matrix.Result(cases["no-tensorflow-py3.12"], exit_code=3, got={"tensorflow": "failure"})
    first.fixes = ["pip install tensorflow"]
    page = matrix.markdown([first], 92) + "\n## Runs\n\nBy hand: a stale cuDNN.\n"
    second = matrix.Result(cases["cpu-only-2.21-py3.11"], exit_code=3, got={"cpu_only_build": "warning"})
    second.problems = ["exit 1, expected 3"]
    merged = matrix.markdown([second], 92, matrix.read_earlier(page))
    assert "2 of the 92 cases" in merged
    assert "| no-tensorflow-py3.12 | 3.12 |" in merged and "| cpu-only-2.21-py3.11 | 3.11 |" in merged
    assert "- `no-tensorflow-py3.12`: `pip install tensorflow`" in merged
    assert "- `cpu-only-2.21-py3.11`: no NVML here" in merged  # its note
    assert merged.rstrip().endswith("## Runs\n\nBy hand: a stale cuDNN.")
    rerun = matrix.Result(cases["cpu-only-2.21-py3.11"], exit_code=3, got={"cpu_only_build": "warning"})
    again = matrix.markdown([rerun], 92, matrix.read_earlier(merged))
    assert again.count("| cpu-only-2.21-py3.11 |") == 1 and "expected 3" not in again
    assert again.count("## Runs") == 1


def test_a_comment_ends_the_runnable_part_so_an_alternative_after_it_is_not_run() -> None:
    runnable = load().runnable
    fix = (
        f"{PY} -m pip install 'tensorflow[and-cuda]==2.21.0'   # TF 2.13.1 predates tensorflow[and-cuda]; "
        f"or keep it: {PY} -m pip install 'nvidia-cublas-cu11==11.11.3.6' && export LD_LIBRARY_PATH=/x"
    )
    assert runnable(fix, PY) == f"{PY} -m pip install 'tensorflow[and-cuda]==2.21.0'"


def test_a_finding_is_gone_only_where_the_check_is_ok_after_the_fix() -> None:
    outcome = load().outcome_after_fix
    assert outcome({"driver_cuda": "ok"}) == ("ran; finding gone", "")
    assert outcome({"keras": "ok", "cuda_libraries": "warning"}) == (
        "ran; still cuda_libraries",
        "the fix ran but the finding stayed: cuda_libraries",
    )
    # TensorFlow broken by the fix: driver_cuda is skipped, which is no evidence the finding went away
    assert outcome({"driver_cuda": "skipped"}) == (
        "ran; driver_cuda skipped",
        "after the fix the check cannot tell: driver_cuda skipped",
    )
