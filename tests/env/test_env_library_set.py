"""The library set a TensorFlow build needs, the versions read from real files (headers, pip metadata) and
which copy the loader finds first: checks_libraries on trees built in tmp_path, no TensorFlow."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.helpers.paths import FIXTURES
from tfgpu_tui.env import compat, fixes
from tfgpu_tui.env.checks_libraries import check_cuda_libraries
from tfgpu_tui.env.facts import EnvFacts, ld_library_path_libraries, library_from_path
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.library_set import PACKAGE_LIBRARIES, lower_bound, needed_libraries
from tfgpu_tui.env.library_versions import HEADERS
from tfgpu_tui.env.recorded import load_recording

FIXTURES = FIXTURES / "env"
CUDNN_86_HEADER = "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 0\n"


def pip_tree(site: Path, tf_version: str, leave_out: tuple[str, ...] = ()) -> dict[str, str]:
    """Lay out site-packages/nvidia/* as `pip install tensorflow[and-cuda]==tf_version` does (library files
    and dist-info directories, empty); returns the installed packages."""
    packages = {"tensorflow": tf_version}
    for package, spec in compat.pins_for(tf_version).items():
        base = package.rsplit("-cu", 1)[0]
        version = lower_bound(spec)
        if base not in PACKAGE_LIBRARIES or package in leave_out or version is None:
            continue
        packages[package] = compat.format_version(version)
        lib = site / "nvidia" / base.removeprefix("nvidia-").replace("-", "_") / "lib"
        lib.mkdir(parents=True, exist_ok=True)
        for stem in PACKAGE_LIBRARIES[base]:
            (lib / f"{stem}.so.{version[0]}").write_bytes(b"")
        dist = package.replace("-", "_") + "-" + compat.format_version(version) + ".dist-info"
        (site / dist).mkdir()
    return packages


def facts_for(tmp_path: Path, tf_version: str, ld_dirs: list[str], **tree: tuple[str, ...]) -> EnvFacts:
    facts, _ = load_recording(FIXTURES / "all_good.json")
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    packages = pip_tree(site, tf_version, **tree)
    paths = sorted(str(path) for path in site.glob("nvidia/*/lib/lib*.so*"))
    pip_libraries = [library for library in map(lambda p: library_from_path(p, "pip"), paths) if library]
    interpreter = dataclasses.replace(facts.interpreter, packages=packages, pip_libraries=pip_libraries)
    return dataclasses.replace(
        facts,
        interpreter=interpreter,
        ld_library_path=ld_library_path_libraries(":".join(ld_dirs)),
        ld_library_dirs=ld_dirs,
    )


def stale_cudnn_86(tmp_path: Path) -> str:
    """A CUDA 11 cuDNN 8.6 tree (pip nvidia-cudnn-cu11 layout): libcudnn.so.8 and its header."""
    root = tmp_path / "old" / "nvidia" / "cudnn"
    (root / "lib").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "lib" / "libcudnn.so.8").write_bytes(b"")
    (root / "include" / "cudnn_version.h").write_text(CUDNN_86_HEADER)
    return str(root / "lib")


def test_versions_are_read_from_the_header_and_the_pip_metadata(tmp_path: Path) -> None:
    library = library_from_path(stale_cudnn_86(tmp_path) + "/libcudnn.so.8", "LD_LIBRARY_PATH")
    assert library is not None and library.version == (8, 6, 0)
    assert library.version_source == "cudnn_version.h"
    site = tmp_path / "site"
    pip_tree(site, "2.21.0")
    cufft = library_from_path(str(site / "nvidia" / "cufft" / "lib" / "libcufft.so.11"), "pip")
    assert cufft is not None and cufft.version == (11, 2, 3, 61)
    assert cufft.version_source == "package nvidia-cufft-cu12"


def test_cudart_header_and_a_dist_of_the_other_major(tmp_path: Path) -> None:
    lib = tmp_path / "nvidia" / "cuda_runtime" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcudart.so.11.0").write_bytes(b"")
    (tmp_path / "nvidia_cuda_runtime_cu12-12.5.82.dist-info").mkdir()  # another major: not this file's
    library = library_from_path(str(lib / "libcudart.so.11.0"), "pip")
    assert library is not None and library.version == (11, 0) and library.version_source == "file name"
    (tmp_path / "nvidia" / "cuda_runtime" / "include").mkdir()
    (tmp_path / "nvidia" / "cuda_runtime" / "include" / "cuda_runtime_api.h").write_text(
        "#define CUDART_VERSION 11080\n"
    )
    library = library_from_path(str(lib / "libcudart.so.11.0"), "pip")
    assert library is not None and library.version == (11, 8)


def test_the_set_comes_from_the_installed_metadata_and_the_build() -> None:
    requirements = [
        'nvidia-cufft-cu12<12.0,>=11.2.3.61; extra == "and-cuda"',
        "nvidia-cublas-cu12 (==12.2.5.6) ; extra == 'and-cuda'",
        'nvidia-nccl-cu12<3.0,>=2.27.7; extra == "and-cuda"',
    ]
    found = needed_libraries(requirements, "2.21.0", "2.21.0", (12, 5), (9, 3), fixes.CUDA11_PACKAGES)
    assert "installed tensorflow 2.21.0" in found.source
    by_stem = {library.stem: library for library in found.libraries}
    assert by_stem["libcufft"].major == 11 and by_stem["libcublasLt"].for_registration
    assert not by_stem["libnccl"].for_registration
    old = needed_libraries([], None, "2.13.1", (11, 8), (8, 6), fixes.CUDA11_PACKAGES)
    assert {library.soname for library in old.libraries} >= {"libcufft.so.10", "libcudnn.so.8"}
    assert "predates [and-cuda]" in old.source


def test_a_stale_cudnn_on_ld_library_path_is_named_with_both_versions(tmp_path: Path) -> None:
    stale = stale_cudnn_86(tmp_path)
    facts = facts_for(tmp_path, "2.15.1", [stale, "/usr/local/nvidia/lib64"])
    verdict = check_cuda_libraries(facts, None)
    assert verdict.status is Status.FAILURE
    assert f"libcudnn 8.6.0 (read from cudnn_version.h) from LD_LIBRARY_PATH {stale}" in verdict.detail
    assert "older than the 8.9 TF 2.15.1 needs" in verdict.detail
    assert "libcudnn 8.9.4.25 (read from package nvidia-cudnn-cu12) from pip" in verdict.detail
    assert verdict.fix == "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64"
    # the fix run: the directory dropped from LD_LIBRARY_PATH, the pip copy is found and accepted
    fixed = facts_for(tmp_path / "fixed", "2.15.1", ["/usr/local/nvidia/lib64"])
    assert check_cuda_libraries(fixed, None).status is Status.OK


def write_headers(site: Path, older: str = "") -> None:
    """The version headers the pip NVIDIA packages ship in nvidia/<name>/include, each giving the package's
    version to the parts its macros hold (three; CUDART_VERSION two); `older`: a stem one patch older."""
    for info in site.glob("nvidia_*.dist-info"):
        name, _, version_text = info.name.removesuffix(".dist-info").partition("-")
        version = [int(part) for part in version_text.split(".")]
        base = name.rsplit("_cu", 1)[0].removeprefix("nvidia_")
        include = site / "nvidia" / base / "include"
        for stem in PACKAGE_LIBRARIES.get("nvidia-" + base.replace("_", "-"), ()):
            if stem not in HEADERS:
                continue
            header, macros = HEADERS[stem]
            parts = version[:3]
            if stem == older:
                parts[2] -= 1
            include.mkdir(exist_ok=True)
            if macros == ("CUDART_VERSION",):
                text = f"#define CUDART_VERSION {parts[0] * 1000 + parts[1] * 10}\n"
            else:
                text = "".join(f"#define {macro} {part}\n" for macro, part in zip(macros, parts, strict=True))
            (include / header).write_text(text)


def test_versions_read_from_headers_are_judged_to_the_parts_they_give(tmp_path: Path) -> None:
    # 2.15.1 pins each package exactly (cuBLAS ==12.2.5.6); the header gives 12.2.5, which meets it
    facts = facts_for(tmp_path, "2.15.1", [])
    write_headers(tmp_path / "venv" / "lib" / "python3.11" / "site-packages")
    facts = _reread(facts)
    cublas = next(library for library in facts.interpreter.pip_libraries if library.stem == "libcublas")
    assert cublas.version == (12, 2, 5) and cublas.version_source == "cublas_api.h"
    cudart = next(library for library in facts.interpreter.pip_libraries if library.stem == "libcudart")
    assert cudart.version == (12, 2) and cudart.version_source == "cuda_runtime_api.h"
    verdict = check_cuda_libraries(facts, None)
    assert verdict.status is Status.OK, verdict.detail
    # a header one patch below the pin is still older than it
    site = tmp_path / "older" / "venv" / "lib" / "python3.11" / "site-packages"
    older = facts_for(tmp_path / "older", "2.15.1", [])
    write_headers(site, older="libcusolver")
    verdict = check_cuda_libraries(_reread(older), None)
    assert verdict.status is Status.WARNING
    assert "libcusolver 11.5.1 (read from cusolver_common.h) from pip" in verdict.detail
    assert "older than the 11.5.2.141 TF 2.15.1 needs" in verdict.detail


def _reread(facts: EnvFacts) -> EnvFacts:
    """The facts with the pip libraries' versions read again (after headers were written beside them)."""
    libraries = [library_from_path(library.path, "pip") for library in facts.interpreter.pip_libraries]
    interpreter = dataclasses.replace(facts.interpreter, pip_libraries=[lib for lib in libraries if lib])
    return dataclasses.replace(facts, interpreter=interpreter)


def test_a_missing_cufft_fails_with_the_whole_extra_as_fix(tmp_path: Path) -> None:
    facts = facts_for(tmp_path, "2.18.0", [], leave_out=("nvidia-cufft-cu12",))
    verdict = check_cuda_libraries(facts, None)
    assert verdict.status is Status.FAILURE
    assert "no libcufft.so.11 (libcufft 11.2.3.61+, nvidia-cufft-cu12)" in verdict.detail
    python = facts.interpreter.python
    assert (
        verdict.fix
        == f"{python} -m pip install 'tensorflow[and-cuda]==2.18.0'   # adds the CUDA packages only"
    )
    assert check_cuda_libraries(facts_for(tmp_path / "fixed", "2.18.0", []), None).status is Status.OK


def test_a_missing_nccl_is_a_warning_not_a_lost_gpu(tmp_path: Path) -> None:
    verdict = check_cuda_libraries(facts_for(tmp_path, "2.18.0", [], leave_out=("nvidia-nccl-cu12",)), None)
    assert verdict.status is Status.WARNING and "no libnccl.so.2" in verdict.detail


def test_before_214_pip_libraries_need_ld_library_path(tmp_path: Path) -> None:
    facts, _ = load_recording(FIXTURES / "all_good.json")
    site = tmp_path / "site-packages"
    lib = site / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcudnn.so.8").write_bytes(b"")
    pip_libraries = [library_from_path(str(lib / "libcudnn.so.8"), "pip")]
    interpreter = dataclasses.replace(
        facts.interpreter,
        packages={"tensorflow": "2.13.1", "nvidia-cudnn-cu11": "8.6.0.163"},
        pip_libraries=[library for library in pip_libraries if library],
    )
    verdict = check_cuda_libraries(
        dataclasses.replace(facts, interpreter=interpreter, ld_library_path=[], system_libraries=[]), None
    )
    assert verdict.status is Status.FAILURE
    assert f"{lib} are not on TF 2.13.1's search path" in verdict.detail
    assert "export LD_LIBRARY_PATH=$(" in verdict.fix


def test_an_older_cublas_in_a_conda_env_on_ld_library_path_is_a_failure(tmp_path: Path) -> None:
    """A conda env's lib folder on LD_LIBRARY_PATH (its activate script puts it there) with a cuBLAS older
    than the build's: TensorFlow's BLAS calls fail, so it is a failure whose fix drops that folder."""
    conda_lib = tmp_path / "miniconda3" / "envs" / "old" / "lib"
    conda_lib.mkdir(parents=True)
    (conda_lib / "libcublas.so.12.0.1.189").write_bytes(b"")  # the conda package's full file name
    facts = facts_for(tmp_path, "2.15.1", [str(conda_lib), "/usr/local/nvidia/lib64"])
    verdict = check_cuda_libraries(facts, None)
    assert verdict.status is Status.FAILURE, verdict.detail
    assert f"libcublas 12.0.1.189 from LD_LIBRARY_PATH {conda_lib} is found first" in verdict.detail
    assert verdict.fix == "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64"


def test_an_older_cudart_in_a_system_folder_is_a_failure_with_the_install_fix(tmp_path: Path) -> None:
    """No pip copy, an older CUDA runtime in the system's folder (the loader's cache): a failure whose fix
    installs the build's own libraries (found before the system's by TensorFlow's RUNPATH)."""
    facts = facts_for(tmp_path, "2.18.0", [], leave_out=("nvidia-cuda-runtime-cu12",))
    system = tmp_path / "usr" / "lib" / "x86_64-linux-gnu"
    system.mkdir(parents=True)
    (system / "libcudart.so.12.0.107").write_bytes(b"")
    old = library_from_path(str(system / "libcudart.so.12.0.107"), "ldconfig")
    assert old is not None
    verdict = check_cuda_libraries(dataclasses.replace(facts, system_libraries=[old]), None)
    assert verdict.status is Status.FAILURE, verdict.detail
    assert f"libcudart 12.0.107 from ldconfig {system} is found first" in verdict.detail
    assert "tensorflow[and-cuda]==2.18.0" in verdict.fix
