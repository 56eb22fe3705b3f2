"""The CUDA libraries TensorFlow loads: where (pip, LD_LIBRARY_PATH, system), which versions, shadowing."""

from __future__ import annotations

from tfgpu_tui.env import compat
from tfgpu_tui.env.check_base import (
    Verdict,
    and_cuda_install,
    check,
    is_cuda_build,
    tensorflow_version,
    tf_cuda,
    tf_cudnn,
)
from tfgpu_tui.env.facts import EnvFacts, LibraryFile
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.inspection_data import InspectionResult


@check("cuda_libraries", "CUDA libraries TensorFlow loads", order=80)
def check_cuda_libraries(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = (
        "TensorFlow dlopens libcudart, libcublas and libcudnn of its build's major versions; a missing or "
        "wrong one means a silent CPU fallback, and LD_LIBRARY_PATH is searched before the pip libraries."
    )
    cuda_build = is_cuda_build(facts, inspection)
    if facts.interpreter.error or cuda_build is None:
        return Verdict(Status.SKIPPED, "TensorFlow not found in the target interpreter.", why)
    if not cuda_build:
        return Verdict(Status.SKIPPED, "A CPU-only build loads no CUDA libraries.", why)
    version, cuda, cudnn = (
        tensorflow_version(facts, inspection),
        tf_cuda(facts, inspection),
        tf_cudnn(facts, inspection),
    )
    cuda_mm, cudnn_mm = compat.major_minor(cuda), compat.major_minor(cudnn)
    if cuda_mm is None or cudnn_mm is None:
        return Verdict(Status.SKIPPED, f"TF {version}'s CUDA/cuDNN versions are unknown.", why)
    needed = {"libcudart": (cuda_mm[0], None), "libcublas": (cuda_mm[0], None), "libcudnn": cudnn_mm}
    found_text, problems, fixes = [], [], []
    for stem, (major, minor) in needed.items():
        best = _best_library(facts, stem, major)
        if best is None:
            problems.append(f"no {stem}.so.{major} (TF {version} needs {_needed_text(stem, major, minor)})")
            fixes.append(_library_fix(facts, version, stem))
            continue
        found_text.append(f"{stem} {_lib_version(best)} ({best.origin}: {best.path})")
        if minor is not None and best.version and len(best.version) > 1 and best.version[1] < minor:
            problems.append(
                f"{stem} {_lib_version(best)} is older than the {major}.{minor} TF was built with"
            )
            from_path = best.origin == "LD_LIBRARY_PATH"
            fixes.append(_unshadow_fix(facts) if from_path else _library_fix(facts, version, stem))
    shadow = _shadowing(facts)
    loaded = inspection.data.loaded_libraries if inspection is not None else ()
    detail = "; ".join(found_text) if found_text else "none found"
    if loaded:
        detail += ". Loaded by TensorFlow: " + ", ".join(loaded)
    if problems:
        detail = " ".join(filter(None, ["; ".join(problems) + ".", shadow, f"Found: {detail}."]))
        return Verdict(Status.FAILURE, detail, why, " && ".join(dict.fromkeys(fixes)))
    if shadow:
        return Verdict(Status.WARNING, f"{shadow} Found: {detail}.", why, _unshadow_fix(facts))
    return Verdict(Status.OK, f"Found: {detail}.", why)


def _needed_text(stem: str, major: int, minor: int | None) -> str:
    return f"{stem} {major}.{minor}+" if minor is not None else f"{stem} {major}"


def _lib_version(library: LibraryFile) -> str:
    return compat.format_version(library.version) if library.version else "(unversioned)"


def _best_library(facts: EnvFacts, stem: str, major: int) -> LibraryFile | None:
    """The file the loader would find first: LD_LIBRARY_PATH, then pip (TF's RUNPATH), then ldconfig."""
    for library in facts.ld_library_path + facts.interpreter.pip_libraries + facts.system_libraries:
        if library.stem == stem and library.version and library.version[0] == major:
            return library
    return None


def _library_fix(facts: EnvFacts, tf_version: str | None, stem: str) -> str:
    """The whole set the build needs, not the one library: TensorFlow registers a GPU only when all load."""
    return and_cuda_install(facts, tf_version)


def _shadowing_libraries(facts: EnvFacts) -> list[LibraryFile]:
    """LD_LIBRARY_PATH libraries with the soname of a pip one: found first (TF links with RUNPATH)."""
    pip = {_soname_key(library) for library in facts.interpreter.pip_libraries}
    return [library for library in facts.ld_library_path if _soname_key(library) in pip]


def _soname_key(library: LibraryFile) -> tuple[str, int | None]:
    return library.stem, library.version[0] if library.version else None


def _shadowing(facts: EnvFacts) -> str:
    """A sentence naming the LD_LIBRARY_PATH directories that shadow the pip NVIDIA libraries, or ""."""
    shadows = _shadowing_libraries(facts)
    if not shadows:
        return ""
    directories = sorted({library.path.rsplit("/", 1)[0] for library in shadows})
    names = sorted({f"{library.stem} {_lib_version(library)}" for library in shadows})
    return (
        f"LD_LIBRARY_PATH directory {', '.join(directories)} holds {', '.join(names)}, which the loader "
        "picks before the pip-installed NVIDIA libraries."
    )


def _unshadow_fix(facts: EnvFacts) -> str:
    stale = {library.path.rsplit("/", 1)[0] for library in _shadowing_libraries(facts)}
    stale |= {library.path.rsplit("/", 1)[0] for library in facts.ld_library_path if not stale}
    keep = [directory for directory in facts.ld_library_dirs if directory not in stale]
    return f"export LD_LIBRARY_PATH={':'.join(keep)}" if keep else "unset LD_LIBRARY_PATH"
