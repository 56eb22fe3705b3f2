"""TensorFlow-free facts: libraries on disk, LD_LIBRARY_PATH, the target interpreter, nvcc, NVML."""

from __future__ import annotations

import os
import platform
import stat
import sys
from pathlib import Path

import pytest

from tests.helpers.gpu_fake_pynvml import FakeGpu, FakePynvml
from tfgpu_tui.env.facts import (
    collect_facts,
    interpreter_facts,
    ld_library_path_libraries,
    library_from_path,
    nvcc_facts,
    parse_ldconfig,
)
from tfgpu_tui.env.nvml_facts import read_nvml_facts
from tfgpu_tui.env.targets import too_old_text
from tfgpu_tui.gpu.nvml import NvmlSource

LDCONFIG = """\
3 libs found in cache `/etc/ld.so.cache'
\tlibcudnn.so.8 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.8
\tlibcublasLt.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/lib64/libcublasLt.so.12
\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1
"""


def test_parse_ldconfig_keeps_cuda_libraries_only() -> None:
    found = parse_ldconfig(LDCONFIG)
    assert [(lib.stem, lib.version, lib.origin) for lib in found] == [
        ("libcudnn", (8,), "ldconfig"),
        ("libcublasLt", (12,), "ldconfig"),
    ]


def test_version_comes_from_the_resolved_symlink(tmp_path: Path) -> None:
    real = tmp_path / "libcudnn.so.9.1.0"
    real.write_bytes(b"")
    (tmp_path / "libcudnn.so.9").symlink_to(real.name)
    library = library_from_path(str(tmp_path / "libcudnn.so.9"), "LD_LIBRARY_PATH")
    assert library is not None and library.version == (9, 1, 0)
    assert library_from_path(str(tmp_path / "libfoo.so.1"), "ldconfig") is None


def test_ld_library_path_in_search_order(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "libcudart.so.11.0").write_bytes(b"")
    (second / "libcudnn.so.8").write_bytes(b"")
    found = ld_library_path_libraries(f"{first}::/does/not/exist:{second}")
    assert [(lib.stem, lib.origin) for lib in found] == [
        ("libcudart", "LD_LIBRARY_PATH"),
        ("libcudnn", "LD_LIBRARY_PATH"),
    ]


def test_interpreter_facts_of_this_python() -> None:
    facts = interpreter_facts(sys.executable)
    assert facts.error == ""
    assert facts.version == platform.python_version()
    assert facts.kind == (
        "venv" if sys.prefix != sys.base_prefix else facts.kind in ("system", "conda") and facts.kind
    )
    assert "pytest" not in facts.packages  # only TF/NVIDIA-related distributions are listed


def test_interpreter_facts_of_bad_interpreters(tmp_path: Path) -> None:
    assert "No Python interpreter" in interpreter_facts(str(tmp_path / "missing")).error
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho boom >&2\nexit 1\n")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    assert "not a working Python 3 interpreter (boom)" in interpreter_facts(str(broken)).error


def test_nvcc_version_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    facts = nvcc_facts()
    assert (facts.path, facts.release) == (str(nvcc), "12.4.131")


def test_nvml_facts_from_the_gpu_core() -> None:
    fake = FakePynvml([FakeGpu(name="NVIDIA Fake H100", compute=[(4242, 20480)])])
    facts = read_nvml_facts(NvmlSource(nvml=fake))
    assert facts.error is None and facts.driver is not None
    assert [device.name for device in facts.devices] == ["NVIDIA Fake H100"]
    assert [(p.gpu_index, p.pid, p.memory_mib) for p in facts.processes] == [(0, 4242, 20480)]


def test_nvml_unavailable_is_a_reason_not_a_crash() -> None:
    facts = read_nvml_facts(NvmlSource(nvml=FakePynvml(init_error=12)))
    assert facts.error is not None and facts.error.kind == "library_not_found"
    assert facts.devices == []


def test_a_driver_that_lists_no_gpu_gives_its_version_with_the_error() -> None:
    facts = read_nvml_facts(NvmlSource(nvml=FakePynvml(gpus=[])))
    assert facts.error is not None and facts.error.kind == "no_devices"
    assert facts.driver is not None and facts.driver.driver_version == "550.54.15"
    assert facts.devices == []


def test_collect_facts_reads_the_given_environment(tmp_path: Path) -> None:
    facts = collect_facts(sys.executable, {"CUDA_VISIBLE_DEVICES": "", "LD_LIBRARY_PATH": str(tmp_path)})
    assert facts.env_vars == {"CUDA_VISIBLE_DEVICES": "", "LD_LIBRARY_PATH": str(tmp_path)}
    assert facts.ld_library_dirs == [str(tmp_path)]
    assert facts.interpreter.error == ""
    numpy = pytest.importorskip("numpy")  # the fixes read its version (TensorFlow before 2.18 needs NumPy 1)
    assert facts.interpreter.packages["numpy"] == numpy.__version__


def test_an_old_python_target_is_too_old_not_broken(tmp_path: Path) -> None:
    """A Python 2.7 cannot run the facts script; it is named by its version (asked in 2.7 syntax)."""
    old = tmp_path / "python2.7"
    old.write_text(
        '#!/bin/sh\ncase "$2" in *json*) echo "SyntaxError" >&2; exit 1;; esac\necho 2.7.18\necho -\n'
    )
    old.chmod(0o755)
    facts = interpreter_facts(str(old))
    assert facts.error == f"{old} {too_old_text('2.7.18')}."
    assert "3.9 or newer" in facts.error
    assert facts.version == "2.7.18"
