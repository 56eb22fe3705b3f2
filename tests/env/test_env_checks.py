"""Findings from recorded GPU-machine environments (tests/fixtures/env/*.json): each finding and its fix."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.helpers.paths import FIXTURES
from tfgpu_tui.env.check_run import full_report
from tfgpu_tui.env.checks import CHECKS, evaluate
from tfgpu_tui.env.facts import EnvFacts, LibraryFile, interpreter_kind
from tfgpu_tui.env.findings import EnvReport, Finding, Status
from tfgpu_tui.env.recorded import demo_recording, facts_from_dict, load_recording, recording_dict
from tfgpu_tui.env.report_formats import report_markdown, report_text
from tfgpu_tui.env.targets import too_old_text
from tfgpu_tui.env.tf_inspection import InspectionOutcome, InspectionRun
from tfgpu_tui.gpu.model import NvmlUnavailable

FIXTURES = FIXTURES / "env"
PY = "/home/ana/venvs/tf/bin/python"


def findings_for(name: str) -> dict[str, Finding]:
    facts, inspection = load_recording(FIXTURES / f"{name}.json")
    return {finding.id: finding for finding in evaluate(facts, inspection)}


def test_all_good_is_all_ok() -> None:
    facts, inspection = load_recording(FIXTURES / "all_good.json")
    report = full_report(facts, inspection)
    assert {f.id: f.status for f in report.findings if f.status is not Status.OK} == {}
    assert report.exit_code() == 0
    found = {finding.id: finding for finding in report.findings}
    assert "GPU:0" in found["placement"].detail and "0.41 ms" in found["placement"].detail
    assert "native kernels" in found["compute_capability"].detail
    assert "mixed_bfloat16 both fast" in found["mixed_precision"].detail
    assert (
        "Found in pip /home/ana/venvs/tf/lib/python3.11/site-packages/nvidia: "
        in found["cuda_libraries"].detail
    )


def test_driver_too_old_for_tf_cuda() -> None:
    found = findings_for("driver_too_old")
    driver = found["driver_cuda"]
    assert driver.status is Status.FAILURE
    assert "470.82.01" in driver.detail and ">= 525" in driver.detail
    assert "Upgrade the NVIDIA driver to >= 555.42.02" in driver.fix
    # TF 2.11 (CUDA 11.2) is the newest this driver runs, but it has no wheel for Python 3.11: both ways out
    assert (
        "No TensorFlow release both runs on driver 470.82.01 and has a wheel for Python 3.11.9" in driver.fix
    )
    assert "or use Python 3.7-3.10 with TF 2.11.0" in driver.fix
    fallback = found["gpus_visible"]
    assert fallback.status is Status.FAILURE and "driver" in fallback.detail.lower()
    assert found["log:DRIVER_INSUFFICIENT"].status is Status.FAILURE


def test_a_driver_that_lists_no_gpu_is_still_compared_with_tf_cuda() -> None:
    no_gpu = NvmlUnavailable("no_devices", "The NVIDIA driver is running but reports no GPUs.", "-")
    for name, want in (("all_good", Status.OK), ("driver_too_old", Status.FAILURE)):
        facts, inspection = load_recording(FIXTURES / f"{name}.json")
        facts = _with(facts, nvml=dataclasses.replace(facts.nvml, error=no_gpu, devices=[], readings=[]))
        found = {finding.id: finding for finding in evaluate(facts, inspection)}
        assert found["driver"].status is Status.WARNING
        assert found["driver_cuda"].status is want, found["driver_cuda"].detail
    assert "Driver 470.82.01 is older than CUDA" in found["driver_cuda"].detail
    # NVML not started at all: nothing to compare
    facts = _with(facts, nvml=dataclasses.replace(facts.nvml, driver=None))
    found = {finding.id: finding for finding in evaluate(facts, inspection)}
    assert found["driver_cuda"].status is Status.SKIPPED


def test_cudnn8_where_tf_needs_9() -> None:
    found = findings_for("cudnn8_needs_9")
    libraries = found["cuda_libraries"]
    assert libraries.status is Status.FAILURE
    assert "no libcudnn.so.9" in libraries.detail and "9.3+" in libraries.detail
    # the whole set the build pins (cuFFT, cuSOLVER, cuSPARSE... too), not the one library that is missing
    assert (
        libraries.fix == f"{PY} -m pip install 'tensorflow[and-cuda]==2.18.0'   # adds the CUDA packages only"
    )
    fallback = found["gpus_visible"]
    assert "missing: libcudnn.so.9" in fallback.detail  # from the loader's VLOG(1) lines
    assert fallback.fix.startswith(f"{PY} -m pip install 'tensorflow[and-cuda]==2.18.0'")


def test_cpu_only_build_on_gpu_machine() -> None:
    found = findings_for("cpu_build_on_gpu")
    build = found["cpu_only_build"]
    assert build.status is Status.FAILURE
    assert "tensorflow-cpu 2.18.0" in build.detail and "1 NVIDIA GPU" in build.detail
    assert build.fix == (
        f"{PY} -m pip uninstall -y tensorflow-cpu && {PY} -m pip install 'tensorflow[and-cuda]==2.18.0'"
    )
    assert found["gpus_visible"].status is Status.SKIPPED
    assert found["cuda_libraries"].status is Status.SKIPPED


def test_cuda_visible_devices_empty() -> None:
    found = findings_for("cuda_visible_devices_empty")
    cvd = found["cuda_visible_devices"]
    assert cvd.status is Status.FAILURE
    assert 'CUDA_VISIBLE_DEVICES=""' in cvd.detail
    assert cvd.fix.startswith("unset CUDA_VISIBLE_DEVICES")
    fallback = found["gpus_visible"]
    assert fallback.status is Status.FAILURE and "NVML sees 2 GPU(s)" in fallback.detail
    assert fallback.fix.startswith("unset CUDA_VISIBLE_DEVICES")


def test_compute_capability_61_and_mixed_precision() -> None:
    found = findings_for("cc61_mixed_precision")
    mixed = found["mixed_precision"]
    assert mixed.status is Status.WARNING
    assert "cc 6.1" in mixed.detail
    assert "set_global_policy('float32')" in mixed.fix
    assert found["compute_capability"].status is Status.OK  # sm_60 kernels run on 6.1
    persistence = found["persistence_mode"]
    assert (
        persistence.status is Status.OK
        and persistence.informational
        and "nvidia-smi -pm 1" in persistence.fix
    )


def test_cannot_dlopen_fallback_names_library_and_symlink_fix() -> None:
    found = findings_for("cannot_dlopen")
    fallback = found["gpus_visible"]
    assert fallback.status is Status.FAILURE
    assert "Silent CPU fallback" in fallback.detail
    assert "missing: libcudnn.so.8, libcublas.so.12" in fallback.detail  # the deciding library first
    assert "ln -svf ../nvidia/*/lib/*.so* ." in fallback.fix  # the libraries are there, TF 2.16 misses them
    assert found["log:CANNOT_DLOPEN_GPU_LIBS"].status is Status.WARNING


def _with(facts: EnvFacts, **changes: object) -> EnvFacts:
    return dataclasses.replace(facts, **changes)


@pytest.mark.parametrize(
    ("value", "status", "words"),
    [
        ("-1", Status.FAILURE, "hides every GPU"),
        ("1", Status.FAILURE, "GPU 1 does not exist"),
        ("0,5", Status.FAILURE, "GPU 5 does not exist"),
        ("0", Status.OK, "CUDA_VISIBLE_DEVICES=0"),
        ("GPU-5c1f0a2e", Status.OK, "GPU-5c1f0a2e"),
        ("GPU-deadbeef", Status.FAILURE, "no GPU has UUID"),
        ("first", Status.FAILURE, "not a GPU index"),
    ],
)
def test_cuda_visible_devices_values(value: str, status: Status, words: str) -> None:
    facts, inspection = load_recording(FIXTURES / "all_good.json")
    found = {f.id: f for f in evaluate(_with(facts, env_vars={"CUDA_VISIBLE_DEVICES": value}), inspection)}
    assert found["cuda_visible_devices"].status is status
    assert words in found["cuda_visible_devices"].detail


def test_stale_ld_library_path_is_named_with_its_fix() -> None:
    facts, inspection = load_recording(FIXTURES / "all_good.json")
    stale = LibraryFile("libcudnn", (9, 1, 0), "/opt/cudnn-9.1/lib/libcudnn.so.9", "LD_LIBRARY_PATH")
    facts = _with(
        facts, ld_library_path=[stale], ld_library_dirs=["/opt/cudnn-9.1/lib", "/usr/local/nvidia/lib64"]
    )
    libraries = {f.id: f for f in evaluate(facts, inspection)}["cuda_libraries"]
    assert libraries.status is Status.FAILURE
    assert "libcudnn 9.1.0 from LD_LIBRARY_PATH /opt/cudnn-9.1/lib is found first" in libraries.detail
    assert "older than the 9.3 TF 2.18.0 needs" in libraries.detail
    assert libraries.fix == "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64"


def test_same_version_shadow_is_a_warning() -> None:
    facts, inspection = load_recording(FIXTURES / "all_good.json")
    shadow = LibraryFile("libcudnn", (9, 5, 1), "/usr/local/cuda/lib64/libcudnn.so.9", "LD_LIBRARY_PATH")
    facts = _with(facts, ld_library_path=[shadow], ld_library_dirs=["/usr/local/cuda/lib64"])
    libraries = {f.id: f for f in evaluate(facts, inspection)}["cuda_libraries"]
    assert libraries.status is Status.WARNING
    assert "/usr/local/cuda/lib64" in libraries.detail and libraries.fix == "unset LD_LIBRARY_PATH"


def test_gpu_processes_link_to_monitor() -> None:
    facts, inspection = demo_recording()
    processes = {f.id: f for f in evaluate(facts, inspection)}["gpu_processes"]
    assert processes.status is Status.WARNING
    assert "PID 48211 on GPU 0 (18432 MiB)" in processes.detail
    assert processes.link_tab == "monitor"


def test_python_outside_tested_range_warns() -> None:
    data = json.loads((FIXTURES / "all_good.json").read_text())
    data["inspection"]["python"]["version"] = "3.13.1"
    facts, inspection = facts_from_dict(data), load_recording(FIXTURES / "all_good.json")[1]
    inspection.outcome.data = data["inspection"]
    tensorflow = {f.id: f for f in evaluate(facts, inspection)}["tensorflow"]
    assert tensorflow.status is Status.WARNING and "3.9-3.12" in tensorflow.detail


def test_arch_below_build_minimum_fails_and_newer_needs_ptx() -> None:
    data = json.loads((FIXTURES / "all_good.json").read_text())
    data["nvml"]["devices"][0]["compute_capability"] = [5, 2]
    found = {f.id: f for f in evaluate(facts_from_dict(data), load_recording(FIXTURES / "all_good.json")[1])}
    assert found["compute_capability"].status is Status.FAILURE
    assert "below the lowest compiled architecture 6.0" in found["compute_capability"].detail
    data["nvml"]["devices"][0]["compute_capability"] = [12, 0]
    found = {f.id: f for f in evaluate(facts_from_dict(data), load_recording(FIXTURES / "all_good.json")[1])}
    assert (
        found["compute_capability"].status is Status.WARNING and "PTX" in found["compute_capability"].detail
    )


def test_pending_until_probe_then_every_check_once() -> None:
    facts, inspection = load_recording(FIXTURES / "all_good.json")
    fast = evaluate(facts)
    pending = {f.id for f in fast if f.status is Status.PENDING}
    assert pending == {c.id for c in CHECKS if c.needs_inspection}
    assert {"driver", "cuda_visible_devices", "cuda_libraries", "mixed_precision"}.isdisjoint(pending)
    assert [f.id for f in evaluate(facts, inspection)][: len(CHECKS)] == [c.id for c in CHECKS]
    assert len(CHECKS) >= 14


def test_no_gpu_log_lines_are_informational() -> None:
    data = json.loads((FIXTURES / "cannot_dlopen.json").read_text())
    data["nvml"] = {"error": None, "driver": None, "devices": [], "processes": []}
    facts, inspection = facts_from_dict(data), load_recording(FIXTURES / "cannot_dlopen.json")[1]
    logs = [f for f in evaluate(facts, inspection) if f.id.startswith("log:")]
    assert logs and all(f.status is Status.OK and f.informational for f in logs)


def test_inspection_failures_become_findings() -> None:
    facts, _ = load_recording(FIXTURES / "all_good.json")
    hung = InspectionRun(
        InspectionOutcome("timeout", "The TensorFlow inspection did not finish within 2 s.", None, "", 2.0)
    )
    found = {f.id: f for f in evaluate(facts, hung)}
    assert found["tensorflow"].status is Status.FAILURE and "--timeout" in found["tensorflow"].fix
    assert found["gpus_visible"].status is Status.SKIPPED


def test_exit_codes() -> None:
    ok = Finding("a", Status.OK, "A", "")
    assert EnvReport([ok, Finding("b", Status.SKIPPED, "B", "")]).exit_code() == 0
    assert EnvReport([ok, Finding("b", Status.WARNING, "B", "")]).exit_code() == 1
    assert (
        EnvReport([Finding("c", Status.FAILURE, "C", ""), Finding("b", Status.WARNING, "B", "")]).exit_code()
        == 3
    )


def test_markdown_and_text_reports_carry_the_fix() -> None:
    facts, inspection = load_recording(FIXTURES / "cpu_build_on_gpu.json")
    report = full_report(facts, inspection)
    markdown = report_markdown(report)
    assert markdown.startswith("# tfgpu-tui environment report")
    assert (
        "## Needs attention" in markdown and "```\n" + f"{PY} -m pip uninstall -y tensorflow-cpu" in markdown
    )
    assert '"tf_version": "2.18.0"' in markdown
    text = report_text(report)
    assert "fix: " in text and text.rstrip().splitlines()[-1].startswith("Result: failure")


def test_recording_round_trip() -> None:
    facts, inspection = load_recording(FIXTURES / "cannot_dlopen.json")
    again = recording_dict(facts, inspection)
    facts2 = facts_from_dict(again)
    assert facts2 == dataclasses.replace(facts, collect_seconds=0.0)
    assert again["retry_stderr"] == inspection.retry.stderr


def test_a_python_older_than_the_minimum_is_too_old_and_nothing_is_installed_in_it() -> None:
    """`check --python` on a 3.6: too old (the one minimum); no TF 2.6 with CUDA 11 wheels is offered."""
    facts, inspection = load_recording(FIXTURES / "all_good.json")
    python = "/home/ana/.pyenv/versions/3.6.15/bin/python"
    interpreter = dataclasses.replace(
        facts.interpreter, python=python, version="3.6.15", error=f"{python} {too_old_text('3.6.15')}."
    )
    found = {f.id: f for f in evaluate(_with(facts, interpreter=interpreter), inspection)}
    assert found["python_env"].status is Status.FAILURE
    assert "too old" in found["python_env"].detail and "Python 3.9 or newer" in found["python_env"].detail
    assert "venv from a Python 3.9 or newer" in found["python_env"].fix
    assert found["tensorflow"].status is Status.SKIPPED
    assert not any("tensorflow==2.6" in f.fix or "cu11" in f.fix for f in found.values())


@pytest.mark.parametrize(
    ("prefix", "kind", "words"),
    [
        ("/home/ana/.pyenv/versions/3.12.1", "pyenv", "a pyenv-built Python's own interpreter"),
        ("/usr", "system", "the system Python"),
        ("/opt/python/3.12", "installation", "a Python installation's own interpreter"),
    ],
)
def test_an_interpreter_that_is_no_environment_is_named_for_what_it_is(
    prefix: str, kind: str, words: str
) -> None:
    assert interpreter_kind({"prefix": prefix, "base_prefix": prefix}) == kind
    facts, inspection = load_recording(FIXTURES / "all_good.json")
    interpreter = dataclasses.replace(facts.interpreter, kind=kind, prefix=prefix)
    python_env = {f.id: f for f in evaluate(_with(facts, interpreter=interpreter), inspection)}["python_env"]
    assert python_env.status is Status.WARNING and f" is {words} (no venv or conda env)" in python_env.detail
