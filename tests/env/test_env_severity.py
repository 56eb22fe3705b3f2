"""docs/environment-checks.md's severity table against the code: each named case is built from a recorded
environment (tests/fixtures/env/), evaluated, and must get the status the table gives it."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.paths import FIXTURES, ROOT
from tfgpu_tui.env.checks import REPORT_ORDER, evaluate
from tfgpu_tui.env.findings import EnvReport, Finding, Status
from tfgpu_tui.env.recorded import facts_from_dict, inspection_from_dict

ROOT = ROOT
FIXTURES = FIXTURES / "env"
ROW = re.compile(r"^\| `(?P<check>[a-z_]+)` \| `(?P<case>[a-z0-9_]+)` \| (?P<status>ok|warning|failure) \|$")
EXIT_ROW = re.compile(r"^\| (?P<worst>ok|skipped|warning|failure) \| (?P<exit>\d+) \|$")

Data = dict[str, Any]


def _fixture(name: str) -> Data:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def _changed(name: str, change: Callable[[Data], None]) -> Callable[[], Data]:
    def build() -> Data:
        data = copy.deepcopy(_fixture(name))
        change(data)
        return data

    return build


def _no_devices(data: Data) -> None:
    data["nvml"].update(
        error={
            "kind": "no_devices",
            "message": "The NVIDIA driver is running but reports no GPUs.",
            "fix": "Check `nvidia-smi -L`; in a container pass `--gpus all`.",
        },
        driver=None,
        devices=[],
    )


def _not_loaded(data: Data) -> None:
    data["nvml"].update(
        error={"kind": "driver_not_loaded", "message": "The NVIDIA driver is not loaded.", "fix": "reboot"},
        driver=None,
        devices=[],
    )


def _libcuda_missing(data: Data) -> None:
    data["interpreter"].update(
        libcuda_loaded=False, libcuda_path=None, libcuda_error="libcuda.so.1: cannot open", in_container=True
    )
    data["inspection"]["physical_gpus"] = []
    data["inspection"]["logical_gpus"] = []


def _system_python(data: Data) -> None:
    data["interpreter"]["kind"] = "system"


def _broken_interpreter(data: Data) -> None:
    data["interpreter"]["error"] = "/nowhere/python cannot be run: No such file or directory"


def _processes(data: Data) -> None:
    data["nvml"]["processes"] = [{"gpu_index": 0, "pid": 48211, "memory_mib": 18432.0}]


def _python_313(data: Data) -> None:
    data["inspection"]["python"]["version"] = "3.13.1"


def _not_installed(data: Data) -> None:
    data["inspection"]["tensorflow"] = {"installed": False, "error": "No module named 'tensorflow'"}
    data["interpreter"]["packages"].pop("tensorflow")


def _half_removed(data: Data) -> None:
    # `pip uninstall tensorflow-cpu` beside `tensorflow`: pip still lists tensorflow, its files are gone.
    data["inspection"]["tensorflow"].update(version=None, git_version=None)
    data["inspection"]["inspection_errors"] = ["device_facts: AttributeError: no attribute 'sysconfig'"]


def _import_raises(data: Data) -> None:
    data["inspection"]["tensorflow"].update(
        version=None,
        git_version=None,
        error="cannot import name 'pywrap_tensorflow'",
        error_type="ImportError",
    )


def _numpy2_under_214(data: Data) -> None:
    # pip's own outcome of `pip install tensorflow-cpu==2.14.0` (it asks only numpy>=1.23.5): NumPy 2
    _import_raises(data)
    data["inspection"]["tensorflow"].update(
        error="Unable to convert function return value to a Python type! The signature was\n\t() -> handle",
        error_type="TypeError",
    )
    data["interpreter"]["packages"].update({"tensorflow": "2.14.0", "numpy": "2.4.6"})


def _timeout(data: Data) -> None:
    data["inspection"] = None
    data["inspection_error"] = {"kind": "timeout", "message": "The TensorFlow inspection did not finish."}


def _two_distributions(data: Data) -> None:
    data["interpreter"]["packages"]["tensorflow-cpu"] = "2.18.0"


def _cpu_without_gpu(data: Data) -> None:
    _no_devices(data)


def _keras3_under_215(data: Data) -> None:
    data["interpreter"]["packages"]["tensorflow"] = "2.15.1"
    data["inspection"]["tensorflow"]["version"] = "2.15.1"


def _without_nccl(data: Data) -> None:
    libraries = data["interpreter"]["pip_libraries"]
    data["interpreter"]["pip_libraries"] = [item for item in libraries if item["stem"] != "libnccl"]


def _cufft_missing(data: Data) -> None:
    libraries = data["interpreter"]["pip_libraries"]
    data["interpreter"]["pip_libraries"] = [item for item in libraries if item["stem"] != "libcufft"]


def _ld_library_path_shadow(data: Data) -> None:
    path = "/usr/local/cuda/lib64/libcudnn.so.9"
    data["ld_library_path"] = [
        {"stem": "libcudnn", "version": [9, 5, 1], "path": path, "origin": "LD_LIBRARY_PATH"}
    ]
    data["ld_library_dirs"] = ["/usr/local/cuda/lib64"]


CASES: dict[str, Callable[[], Data]] = {
    "all_good": lambda: _fixture("all_good"),
    "driver_lists_no_gpu": _changed("all_good", _no_devices),
    "driver_not_loaded": _changed("all_good", _not_loaded),
    "system_python": _changed("all_good", _system_python),
    "libcuda_missing_in_container": _changed("all_good", _libcuda_missing),
    "interpreter_broken": _changed("all_good", _broken_interpreter),
    "cuda_visible_devices_empty": lambda: _fixture("cuda_visible_devices_empty"),
    "gpu_process_holding_memory": _changed("all_good", _processes),
    "python_outside_tested_range": _changed("all_good", _python_313),
    "tensorflow_not_installed": _changed("all_good", _not_installed),
    "half_removed_tensorflow": _changed("all_good", _half_removed),
    "inspection_timeout": _changed("all_good", _timeout),
    "tensorflow_import_raises": _changed("all_good", _import_raises),
    "numpy2_under_tf214": _changed("all_good", _numpy2_under_214),
    "tensorflow_and_tensorflow_cpu": _changed("all_good", _two_distributions),
    "cpu_build_on_gpu": lambda: _fixture("cpu_build_on_gpu"),
    "cpu_build_without_gpu": _changed("cpu_build_on_gpu", _cpu_without_gpu),
    "keras3_under_tf215": _changed("all_good", _keras3_under_215),
    "driver_too_old": lambda: _fixture("driver_too_old"),
    "cudnn8_needs_9": lambda: _fixture("cudnn8_needs_9"),
    "cufft_missing": _changed("all_good", _cufft_missing),
    "nccl_missing": _changed("all_good", _without_nccl),
    "ld_library_path_shadows_pip": _changed("all_good", _ld_library_path_shadow),
    "cannot_dlopen": lambda: _fixture("cannot_dlopen"),
    "cc61_mixed_precision": lambda: _fixture("cc61_mixed_precision"),
}


def _section(title: str) -> list[str]:
    text = (ROOT / "docs" / "environment-checks.md").read_text(encoding="utf-8")
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0].splitlines()


def _table() -> list[tuple[str, str, str]]:
    return [(m["check"], m["case"], m["status"]) for line in _section("Severity") if (m := ROW.match(line))]


def _findings(case: str) -> dict[str, Finding]:
    data = CASES[case]()
    return {finding.id: finding for finding in evaluate(facts_from_dict(data), inspection_from_dict(data))}


def test_every_check_has_a_row_and_every_case_a_builder() -> None:
    rows = _table()
    assert {check for check, _, _ in rows} == set(REPORT_ORDER)
    assert {case for _, case, _ in rows} <= set(CASES)


@pytest.mark.parametrize(("check", "case", "status"), _table())
def test_documented_severity(check: str, case: str, status: str) -> None:
    finding = _findings(case)[check]
    assert finding.status is Status(status), f"{check} in {case}: {finding.detail}"
    if finding.status in (Status.WARNING, Status.FAILURE):
        assert finding.fix, f"{check} in {case} has no fix"


def test_exit_status_table() -> None:
    rows = {m["worst"]: int(m["exit"]) for line in _section("Severity") if (m := EXIT_ROW.match(line))}
    assert rows == {"ok": 0, "skipped": 0, "warning": 1, "failure": 3}
    for worst, code in rows.items():
        assert EnvReport([Finding("a", Status(worst), "A", "")]).exit_code() == code


def test_half_removed_fix_reinstalls_what_pip_lists() -> None:
    finding = _findings("half_removed_tensorflow")["tensorflow"]
    assert "half-removed" in finding.detail
    assert finding.fix.endswith("-m pip install --force-reinstall --no-deps 'tensorflow==2.18.0'")


def test_import_failure_fix_reinstalls_the_installed_release() -> None:
    """Not an unpinned `tensorflow[and-cuda]`, which would change the release (and, beside tensorflow-cpu,
    add a second distribution)."""
    finding = _findings("tensorflow_import_raises")["tensorflow"]
    assert finding.fix.split("   #")[0].endswith("-m pip install --force-reinstall 'tensorflow==2.18.0'")


def test_numpy2_under_a_numpy1_build_is_named_with_the_numpy_fix() -> None:
    finding = _findings("numpy2_under_tf214")["tensorflow"]
    assert "NumPy 2.4.6 is installed, and tensorflow 2.14.0 was built against NumPy 1" in finding.detail
    assert finding.fix.endswith("-m pip install 'numpy<2'")
    # NumPy 1 installed: the same failure is not blamed on NumPy
    data = CASES["numpy2_under_tf214"]()
    data["interpreter"]["packages"]["numpy"] = "1.26.4"
    tensorflow = next(
        f for f in evaluate(facts_from_dict(data), inspection_from_dict(data)) if f.id == "tensorflow"
    )
    assert "NumPy" not in tensorflow.detail and "--force-reinstall 'tensorflow==2.14.0'" in tensorflow.fix


def test_keras3_fix_names_the_keras2_release() -> None:
    assert _findings("keras3_under_tf215")["keras"].fix.endswith(
        "install 'keras==2.15.*'   # the Keras 2 release of TensorFlow 2.15"
    )
