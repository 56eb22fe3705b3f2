"""Causes from TensorFlow's log, stated right: TensorRT is information, a loader failure is named by the
library that decides, a host OOM is a host-memory problem, cuInit 303 is explained for the platform, and a
missing libcuda.so.1 is the cause when NVML sees GPUs."""

from __future__ import annotations

import dataclasses

import pytest

from tests.helpers.paths import FIXTURES
from tfgpu_tui.alerts import Severity
from tfgpu_tui.env import diagnoses
from tfgpu_tui.env.checks import evaluate
from tfgpu_tui.env.checks_devices import deciding_rank
from tfgpu_tui.env.diagnoses import diagnose_line, diagnose_text
from tfgpu_tui.env.facts import LibraryFile
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.recorded import load_recording
from tfgpu_tui.env.tf_inspection import InspectionOutcome, InspectionRun

FIXTURES = FIXTURES / "env"
TRT = (
    "W0000 00:00:1744212707.1 14 dso_loader.cc:64] Could not load dynamic library 'libnvinfer.so.8'; "
    "dlerror: libnvinfer.so.8: cannot open shared object file: No such file or directory"
)
CUDNN = (
    "W0000 00:00:1744212707.2 14 dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.9'; "
    "dlerror: libcudnn.so.9: cannot open shared object file: No such file or directory"
)
FALLBACK = (
    "W0000 00:00:1744212707.3 14 gpu_device.cc:2341] Cannot dlopen some GPU libraries. Please make sure"
)
HOST_OOM = (
    "ResourceExhaustedError: OOM when allocating tensor with shape[60000,28,28,64] and type float on "
    "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu"
)
CUINIT_303 = "E cuda_driver.cc:271] failed call to cuInit: UNKNOWN ERROR (303)"
GPU_OOM = (
    "ResourceExhaustedError: OOM when allocating tensor with shape[32,1024,64,64] and type float on "
    "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
)


def test_tensorrt_missing_is_information() -> None:
    found = diagnose_line(TRT)
    assert found is not None and found.id == "DSO_LOAD_FAIL_TENSORRT" and found.severity is Severity.INFO
    for line in (
        "W py_utils.cc:38] TF-TRT Warning: Could not find TensorRT",
        "Cannot dlopen some TensorRT libraries.",
    ):
        match = diagnose_line(line)
        assert match is not None and match.severity is Severity.INFO, line


def test_a_fallback_is_named_by_the_deciding_library_not_tensorrt() -> None:
    facts, recorded = load_recording(FIXTURES / "cannot_dlopen.json")
    data = dict(recorded.outcome.data or {}, physical_gpus=[], logical_gpus=[])
    run = InspectionRun(InspectionOutcome(None, "", data, "\n".join([TRT, CUDNN, FALLBACK]), 5.0, 0))
    found = {finding.id: finding for finding in evaluate(facts, run)}
    fallback = found["gpus_visible"]
    assert fallback.status is Status.FAILURE
    assert fallback.detail.endswith("(missing: libcudnn.so.9)")  # not libnvinfer (TensorRT)
    trt = found["log:DSO_LOAD_FAIL_TENSORRT"]
    assert trt.status is Status.OK and trt.informational and not trt.fix


def test_deciding_order() -> None:
    libraries = ["libnvinfer.so.8", "libcublas.so.12", "libcudnn.so.9", "libcudart.so.12", "libcuda.so.1"]
    assert sorted(libraries, key=deciding_rank) == [
        "libcuda.so.1",
        "libcudart.so.12",
        "libcudnn.so.9",
        "libcublas.so.12",
        "libnvinfer.so.8",
    ]


def test_host_oom_is_host_memory_with_host_fixes() -> None:
    host, gpu = diagnose_line(HOST_OOM), diagnose_line(GPU_OOM)
    assert host is not None and host.id == "HOST_OOM_TENSOR" and host.title == "Out of host memory"
    assert "shuffle" in host.fix and "cache(" in host.fix and "RAM" in host.fix and "probe" not in host.fix
    assert "CPU:0" in host.message and "allocator cpu" in host.message
    assert gpu is not None and gpu.id == "OOM_TENSOR" and "probe" in gpu.fix


@pytest.mark.parametrize(
    ("system", "release", "words"),
    [
        ("Linux", "6.8.0-45-generic", "reboot"),
        ("Linux", "5.15.153.1-microsoft-standard-WSL2", "wsl --update"),
        ("Windows", "10", "Reinstall the NVIDIA driver"),
    ],
)
def test_cuinit_303_is_explained_for_the_platform(
    monkeypatch: pytest.MonkeyPatch, system: str, release: str, words: str
) -> None:
    """The inspection ran on this machine: its platform decides."""
    monkeypatch.setattr(diagnoses.platform, "system", lambda: system)
    monkeypatch.setattr(diagnoses.platform, "release", lambda: release)
    diagnoses.this_platform.cache_clear()
    try:
        [found] = diagnose_text(CUINIT_303, platform_name=diagnoses.this_platform())
    finally:
        diagnoses.this_platform.cache_clear()
    assert found.id == "CUINIT_303" and words in found.fix and "{" not in found.fix + found.message


@pytest.mark.parametrize(
    ("earlier", "platform", "not_there"),
    [
        ("I dso_loader.cc:53] Successfully opened dynamic library cudart64_110.dll", "Windows", "On Linux"),
        ("W dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'", "Linux", "wsl --update"),
        ("I gpu_device.cc] found /usr/lib/wsl/lib/libcuda.so.1", "WSL2", "Reinstall the NVIDIA driver"),
    ],
)
def test_cuinit_303_in_a_log_is_explained_for_the_platform_that_wrote_it(
    earlier: str, platform: str, not_there: str
) -> None:
    """A log read here may come from another machine: its own lines name the platform, not the reader's."""
    [found] = diagnose_text(earlier + "\n" + CUINIT_303)
    assert f"on {platform}," in found.message and not_there not in found.fix


def test_cuinit_303_in_a_log_that_names_no_platform_gives_each_fix() -> None:
    [found] = diagnose_text(CUINIT_303)
    assert "the machine that wrote this log" in found.message
    assert all(f"On {name}:" in found.fix for name in ("Linux", "WSL2", "Windows"))


def test_libcuda_missing_is_the_cause_with_the_container_fix() -> None:
    facts, recorded = load_recording(FIXTURES / "cannot_dlopen.json")
    interpreter = dataclasses.replace(
        facts.interpreter, libcuda_loaded=False, libcuda_error="libcuda.so.1: cannot open", in_container=True
    )
    facts = dataclasses.replace(facts, interpreter=interpreter)
    found = {finding.id: finding for finding in evaluate(facts, recorded)}
    for check_id in ("libcuda", "gpus_visible"):
        assert found[check_id].status is Status.FAILURE
        assert "libcuda.so.1 cannot be loaded" in found[check_id].detail
        assert (
            "--gpus all" in found[check_id].fix
            and "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in found[check_id].fix
        )
    machine = dataclasses.replace(facts, interpreter=dataclasses.replace(interpreter, in_container=False))
    fix = {finding.id: finding for finding in evaluate(machine, recorded)}["libcuda"].fix
    assert "libnvidia-compute-" in fix


@pytest.mark.parametrize(
    "line",
    [
        "ImportError: `keras.optimizers.legacy` is not supported in Keras 3. When using `tf.keras`, ...",
        "ValueError: File format not supported: filepath=saved/. Keras 3 only supports V3 `.keras` files, "
        "legacy H5 format files (`.h5` extension).",
        "ValueError: A KerasTensor cannot be used as input to a TensorFlow function. A KerasTensor is ...",
        "ModuleNotFoundError: No module named 'keras.engine'",
    ],
)
def test_keras2_code_on_keras3_names_tf_keras(line: str) -> None:
    diagnosis = diagnose_line(line)
    assert diagnosis is not None and diagnosis.signature.id == "KERAS2_CODE_ON_KERAS3"
    assert diagnosis.severity is Severity.CRITICAL
    assert "heuristic" in diagnosis.message
    assert "tf-keras~=2.X.0" in diagnosis.signature.fix and "TF_USE_LEGACY_KERAS=1" in diagnosis.signature.fix


def test_keras_check_offers_tf_keras_for_a_keras2_program_on_216_plus() -> None:
    facts, inspection = load_recording(FIXTURES / "all_good.json")  # TF 2.18, Keras 3, no tf-keras
    keras = {finding.id: finding for finding in evaluate(facts, inspection)}["keras"]
    assert keras.status is Status.OK and keras.informational
    python = facts.interpreter.python
    assert keras.fix.startswith(f"{python} -m pip install 'tf-keras~=2.18.0' && export TF_USE_LEGACY_KERAS=1")


LIBCUDA_LINE = (
    "I external/local_tsl/tsl/platform/default/dso_loader.cc:63] Could not load dynamic library "
    "'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such file or directory"
)
CUDNN_MISMATCH = (
    "E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:445] Loaded runtime CuDNN library: 9.1.0 "
    "but source was compiled with: 9.3.0.  CuDNN library needs to have matching major version and equal or "
    "higher minor version."
)


def _with_log(recording: str, *lines: str) -> InspectionRun:
    """The recording's inspection with `lines` as TensorFlow's stderr."""
    _, recorded = load_recording(FIXTURES / recording)
    outcome = dataclasses.replace(recorded.outcome, stderr="\n".join(lines))
    return InspectionRun(outcome)


def test_a_missing_libcuda_in_the_log_is_folded_into_the_libcuda_check() -> None:
    """tensorflow[and-cuda] installed, libcuda.so.1 missing: the log line says the same as the check and
    its fix never installs tensorflow[and-cuda] (installed already)."""
    facts, _ = load_recording(FIXTURES / "all_good.json")
    interpreter = dataclasses.replace(
        facts.interpreter, libcuda_loaded=False, libcuda_error="libcuda.so.1: cannot open", in_container=True
    )
    facts = dataclasses.replace(facts, interpreter=interpreter)
    findings = evaluate(facts, _with_log("all_good.json", LIBCUDA_LINE))
    found = {finding.id: finding for finding in findings}
    assert "log:DSO_LOAD_FAIL" not in found
    assert found["libcuda"].status is Status.FAILURE
    assert "TensorFlow's log says the same:" in found["libcuda"].detail and "'libcuda.so.1'" in (
        found["libcuda"].detail
    )
    assert not any("tensorflow[and-cuda]" in finding.fix for finding in findings)


def test_a_libcuda_log_line_the_check_did_not_see_gets_the_driver_fix() -> None:
    """Where the libcuda check passed (the interpreter loads it) the line stays a finding of its own, and
    its fix is the driver's library, not a pip install."""
    facts, _ = load_recording(FIXTURES / "all_good.json")
    found = {finding.id: finding for finding in evaluate(facts, _with_log("all_good.json", LIBCUDA_LINE))}
    assert found["libcuda"].status is not Status.FAILURE
    assert "pip install" not in found["log:DSO_LOAD_FAIL"].fix
    assert "libnvidia-compute-" in found["log:DSO_LOAD_FAIL"].fix or "--gpus all" in (
        found["log:DSO_LOAD_FAIL"].fix
    )


def test_a_cudnn_mismatch_in_the_log_is_folded_into_the_library_check() -> None:
    """cuDNN 9.1 found first under TF 2.18 (9.3): one failure, the library check's, with the log's line."""
    facts, _ = load_recording(FIXTURES / "all_good.json")
    stale = LibraryFile("libcudnn", (9, 1, 0), "/opt/cudnn-9.1/lib/libcudnn.so.9", "LD_LIBRARY_PATH")
    facts = dataclasses.replace(facts, ld_library_path=[stale], ld_library_dirs=["/opt/cudnn-9.1/lib"])
    found = {finding.id: finding for finding in evaluate(facts, _with_log("all_good.json", CUDNN_MISMATCH))}
    assert "log:CUDNN_VERSION_MISMATCH" not in found
    libraries = found["cuda_libraries"]
    assert libraries.status is Status.FAILURE and "Loaded runtime CuDNN library: 9.1.0" in libraries.detail
    assert libraries.fix == "unset LD_LIBRARY_PATH"


def test_a_log_line_about_another_library_than_the_checks_is_not_folded() -> None:
    """The library check names a stale cuDNN; a line about libcufft is news, not "the same": it stays."""
    facts, _ = load_recording(FIXTURES / "all_good.json")
    stale = LibraryFile("libcudnn", (9, 1, 0), "/opt/cudnn-9.1/lib/libcudnn.so.9", "LD_LIBRARY_PATH")
    facts = dataclasses.replace(facts, ld_library_path=[stale], ld_library_dirs=["/opt/cudnn-9.1/lib"])
    cufft = CUDNN.replace("libcudnn.so.9", "libcufft.so.11")
    found = {finding.id: finding for finding in evaluate(facts, _with_log("all_good.json", cufft))}
    assert "log:DSO_LOAD_FAIL" in found and "TensorFlow's log says" not in found["cuda_libraries"].detail
