"""The CUDA libraries TensorFlow loads: the whole set its build needs, the copy the loader would find for
each (LD_LIBRARY_PATH, pip, system), its version as read from its files, and whether TensorFlow accepts it."""

from __future__ import annotations

from dataclasses import dataclass

from tfgpu_tui.env import compat, fixes
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
from tfgpu_tui.env.library_set import NeededLibrary, needed_libraries

WHY = (
    "TensorFlow registers a GPU only when every library its build needs loads (CUDA runtime, cuBLAS and "
    "cuBLASLt, cuFFT, cuSOLVER, cuSPARSE, cuDNN, and nvJitLink for CUDA 12); one missing or unaccepted "
    "library means a silent CPU fallback. The loader takes the first file with the right soname from "
    "LD_LIBRARY_PATH, then the pip packages (TF >= 2.14 links to them by RUNPATH), then the system cache. "
    "TensorFlow accepts a cuDNN of the same major and an equal or higher minor than its build's; an older "
    "cuDNN, cuBLAS or CUDA runtime found first makes its GPU work fail, wherever that copy is."
)

# Libraries TensorFlow refuses, or fails every call of, when the copy found first is older than its build's:
# cuDNN ("Loaded runtime CuDNN library: 8.6.0 but source was compiled with: 8.9.4"), cuBLAS/cuBLASLt and the
# CUDA runtime (missing symbols, CUBLAS_STATUS_NOT_INITIALIZED). Wherever that copy is found (LD_LIBRARY_PATH,
# a conda env's lib on it, a system folder) it is a failure; the fix removes what shadows the right copy.
REFUSED_WHEN_OLDER = frozenset({"libcudnn", "libcublas", "libcublasLt", "libcudart"})


@dataclass(frozen=True)
class Resolved:
    """One needed library and the copies the loader would consider, in its search order."""

    needed: NeededLibrary
    copies: tuple[LibraryFile, ...]

    @property
    def winner(self) -> LibraryFile | None:
        return self.copies[0] if self.copies else None


@check("cuda_libraries", "CUDA libraries TensorFlow loads", order=80)
def check_cuda_libraries(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    cuda_build = is_cuda_build(facts, inspection)
    if facts.interpreter.error or cuda_build is None:
        return Verdict(Status.SKIPPED, "TensorFlow not found in the target interpreter.", WHY)
    if not cuda_build:
        return Verdict(Status.SKIPPED, "A CPU-only build loads no CUDA libraries.", WHY)
    version = tensorflow_version(facts, inspection)
    cuda_mm = compat.major_minor(tf_cuda(facts, inspection))
    cudnn_mm = compat.major_minor(tf_cudnn(facts, inspection))
    if cuda_mm is None or cudnn_mm is None:
        return Verdict(Status.SKIPPED, f"TF {version}'s CUDA/cuDNN versions are unknown.", WHY)
    library_set = needed_libraries(
        facts.interpreter.and_cuda_requirements,
        facts.interpreter.packages.get("tensorflow"),
        version,
        cuda_mm,
        cudnn_mm,
        fixes.CUDA11_PACKAGES,
    )
    searched = _search_order(facts, version)
    resolved = [
        Resolved(needed, tuple(copy for copy in searched if _matches(copy, needed)))
        for needed in library_set.libraries
    ]
    failures, warnings, fixes_wanted = _judge(facts, version, resolved)
    detail = " ".join(
        filter(
            None,
            [
                "; ".join(failures + warnings) + "." if failures or warnings else "",
                _unreachable_pip_note(facts, version),
                f"Needed ({library_set.source}): "
                + ", ".join(dict.fromkeys(item.needed.soname for item in resolved))
                + ".",
                _found_text(resolved),
                _loaded_text(inspection),
            ],
        )
    )
    fix = " && ".join(dict.fromkeys(fix for fix in fixes_wanted if fix))
    if failures:
        return Verdict(Status.FAILURE, detail, WHY, fix)
    if warnings:
        return Verdict(Status.WARNING, detail, WHY, fix)
    return Verdict(Status.OK, detail, WHY)


def _search_order(facts: EnvFacts, tf_version: str | None) -> list[LibraryFile]:
    """The library files in the order the loader tries them for TensorFlow `tf_version`."""
    pip = facts.interpreter.pip_libraries if _links_to_pip(tf_version) else []
    return facts.ld_library_path + pip + facts.system_libraries


def _links_to_pip(tf_version: str | None) -> bool:
    """TF >= 2.14 finds the pip NVIDIA libraries by RUNPATH; older builds only via LD_LIBRARY_PATH."""
    return (compat.version_tuple(tf_version) or ())[:2] >= fixes.AND_CUDA_FIRST


def _matches(library: LibraryFile, needed: NeededLibrary) -> bool:
    return library.stem == needed.stem and library.version is not None and library.version[0] == needed.major


def _judge(
    facts: EnvFacts, tf_version: str | None, resolved: list[Resolved]
) -> tuple[list[str], list[str], list[str]]:
    """(failures, warnings, fixes) for the resolved libraries, by TensorFlow's compatibility rule."""
    failures: list[str] = []
    warnings: list[str] = []
    stale_dirs: list[str] = []
    install = False
    for item in resolved:
        needed, winner = item.needed, item.winner
        if winner is None:
            minimum = compat.format_version(needed.minimum)
            text = f"no {needed.soname} ({needed.stem} {minimum}+, {needed.package})"
            (failures if needed.for_registration else warnings).append(text)
            install = True
            continue
        if _accepted(winner, needed):
            continue
        later = next((copy for copy in item.copies[1:] if _accepted(copy, needed)), None)
        text = (
            f"{_version_text(winner)} from {_place(winner)} is found first and is older than the "
            f"{compat.format_version(needed.minimum)} TF {tf_version} needs"
        )
        if later is not None:
            text += f" ({_version_text(later)} from {_place(later)} comes after it)"
        (failures if needed.stem in REFUSED_WHEN_OLDER else warnings).append(text)
        if winner.origin == "LD_LIBRARY_PATH":
            stale_dirs.append(_directory(winner))
        install = install or later is None
    shadows = _shadowing(facts, resolved)
    if shadows and not stale_dirs:
        warnings.append(shadows)
        stale_dirs += [_directory(item.winner) for item in resolved if _shadows_pip(facts, item)]
    fix_list = [_without_directories(facts, stale_dirs) if stale_dirs else ""]
    if install:
        command = and_cuda_install(facts, tf_version)
        fix_list.append("" if command.startswith("Nothing to install") and fix_list[0] else command)
    return failures, warnings, fix_list


def _accepted(library: LibraryFile, needed: NeededLibrary) -> bool:
    """TensorFlow's rule: cuDNN of the same major and at least the build's minor; the other libraries at
    least the pin's lower bound, judged only where the version was read beyond the soname and only to the
    parts it was read to (a header gives three, cuda_runtime_api.h two: cuBLAS 11.11.3 read from
    cublas_api.h meets the pin 11.11.3.6, CUDA runtime 11.8 meets 11.8.89)."""
    version = library.version or ()
    if library.version_source == "file name" and len(version) < 3:
        return needed.stem != "libcudnn" or len(version) < 2 or version[:2] >= needed.minimum[:2]
    size = 2 if needed.stem == "libcudnn" else min(len(version), len(needed.minimum))
    return version[:size] >= needed.minimum[:size]


def _version_text(library: LibraryFile) -> str:
    version = compat.format_version(library.version) if library.version else "(unversioned)"
    if library.version_source != "file name":
        version += f" (read from {library.version_source})"
    return f"{library.stem} {version}"


def _place(library: LibraryFile) -> str:
    return f"{library.origin} {_directory(library)}"


def _directory(library: LibraryFile | None) -> str:
    return library.path.rsplit("/", 1)[0] if library is not None else ""


def _found_text(resolved: list[Resolved]) -> str:
    """The copies found first, grouped by place: "Found in pip .../nvidia: libcudart 12.5.82, ..."."""
    groups: dict[str, list[str]] = {}
    for item in resolved:
        if item.winner is not None:
            groups.setdefault(_place_root(item.winner), []).append(_version_text(item.winner))
    if not groups:
        return "Found: none."
    return "Found " + "; ".join(f"in {place}: {', '.join(names)}" for place, names in groups.items()) + "."


def _place_root(library: LibraryFile) -> str:
    """Where a library is, with the pip packages' per-library folders folded into their ``nvidia`` folder."""
    directory = _directory(library)
    if library.origin == "pip" and "/nvidia/" in directory:
        directory = directory.split("/nvidia/", 1)[0] + "/nvidia"
    return f"{library.origin} {directory}"


def _loaded_text(inspection: InspectionResult | None) -> str:
    loaded = inspection.data.loaded_libraries if inspection is not None else ()
    return "Loaded by TensorFlow: " + ", ".join(loaded) + "." if loaded else ""


def _shadows_pip(facts: EnvFacts, item: Resolved) -> bool:
    """Whether an LD_LIBRARY_PATH copy is found before a pip copy of the same soname."""
    winner = item.winner
    return (
        winner is not None
        and winner.origin == "LD_LIBRARY_PATH"
        and any(copy.origin == "pip" for copy in item.copies[1:])
    )


def _shadowing(facts: EnvFacts, resolved: list[Resolved]) -> str:
    """A sentence naming the LD_LIBRARY_PATH directories that shadow the pip NVIDIA libraries, or ""."""
    shadows = [item.winner for item in resolved if item.winner and _shadows_pip(facts, item)]
    if not shadows:
        return ""
    directories = sorted({_directory(library) for library in shadows})
    names = sorted({_version_text(library) for library in shadows})
    return (
        f"LD_LIBRARY_PATH directory {', '.join(directories)} holds {', '.join(names)}, which the loader "
        "picks before the pip-installed NVIDIA libraries"
    )


def _unreachable_pip_note(facts: EnvFacts, tf_version: str | None) -> str:
    """Before 2.14, pip NVIDIA libraries are found only when LD_LIBRARY_PATH names them."""
    if _links_to_pip(tf_version) or not facts.interpreter.pip_libraries:
        return ""
    reachable = {_directory(library) for library in facts.ld_library_path}
    unreachable = sorted({_directory(library) for library in facts.interpreter.pip_libraries} - reachable)
    if not unreachable:
        return ""
    return (
        f"The pip NVIDIA libraries in {', '.join(unreachable)} are not on TF {tf_version}'s search path "
        "(it predates the RUNPATH into site-packages/nvidia): they load only via LD_LIBRARY_PATH."
    )


def _without_directories(facts: EnvFacts, directories: list[str]) -> str:
    keep = [directory for directory in facts.ld_library_dirs if directory not in set(directories)]
    return f"export LD_LIBRARY_PATH={':'.join(keep)}" if keep else "unset LD_LIBRARY_PATH"
