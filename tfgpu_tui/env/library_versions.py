"""The version of a CUDA library file, read from the files beside it rather than assumed from its name.

A file name such as ``libcudnn.so.8`` or ``libcudart.so.11.0`` carries only the soname, not the version
(cuDNN 8.6 and 8.9 both install ``libcudnn.so.8``). In order, the version comes from:

1. the resolved file name where it has three or more parts (system installs: ``libcudnn.so.8.9.7``);
2. the library's own version header in ``<lib dir>/../include`` (pip packages and toolkit trees ship it);
3. the pip package's metadata beside the ``nvidia/`` directory (``nvidia_cudnn_cu11-8.6.0.163.dist-info``).

Each source is accepted only where its major version equals the soname's. Reads are bounded and only of
regular files; nothing is loaded or executed.
"""

from __future__ import annotations

import glob
import os
import re

HEADER_BYTES = 256 * 1024
# stem -> (header file, macros giving major, minor, patch); CUDART_VERSION is one number (12050 = 12.5).
HEADERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "libcudnn": ("cudnn_version.h", ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")),
    "libcudart": ("cuda_runtime_api.h", ("CUDART_VERSION",)),
    "libcublas": ("cublas_api.h", ("CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH")),
    "libcublasLt": ("cublas_api.h", ("CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH")),
    "libcufft": ("cufft.h", ("CUFFT_VER_MAJOR", "CUFFT_VER_MINOR", "CUFFT_VER_PATCH")),
    "libcusolver": ("cusolver_common.h", ("CUSOLVER_VER_MAJOR", "CUSOLVER_VER_MINOR", "CUSOLVER_VER_PATCH")),
    "libcusparse": ("cusparse.h", ("CUSPARSE_VER_MAJOR", "CUSPARSE_VER_MINOR", "CUSPARSE_VER_PATCH")),
}
_DEFINE = re.compile(r"^\s*#\s*define\s+(?P<name>[A-Z_]+)\s+\(?(?P<value>\d+)", re.MULTILINE)
_DIST_INFO = re.compile(r"^(?P<name>nvidia_[a-z0-9_]+)-(?P<version>\d+(?:\.\d+)*)[^/]*\.dist-info$")


def read_library_version(
    path: str, stem: str, soname_version: tuple[int, ...] | None
) -> tuple[tuple[int, ...] | None, str]:
    """(version, where it was read) for the library file at `path`; the soname's numbers when nothing
    better is found, with the source "file name"."""
    major = soname_version[0] if soname_version else None
    resolved = _numbers(os.path.basename(os.path.realpath(path)))
    if resolved and len(resolved) >= 3 and (major is None or resolved[0] == major):
        return resolved, "file name"
    directory = os.path.dirname(os.path.realpath(path))
    header = HEADERS.get(stem)
    if header is not None:
        version = header_version(os.path.join(os.path.dirname(directory), "include", header[0]), header[1])
        if version is not None and (major is None or version[0] == major):
            return version, header[0]
    package = package_version(directory, major)
    if package is not None:
        return package[1], f"package {package[0]}"
    return soname_version, "file name"


def _numbers(name: str) -> tuple[int, ...] | None:
    match = re.search(r"\.so\.(\d+(?:\.\d+)*)$", name)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def header_version(path: str, macros: tuple[str, ...]) -> tuple[int, ...] | None:
    """The version a header's #defines give: three macros (major, minor, patch), or CUDART_VERSION."""
    text = _read_regular(path)
    if text is None:
        return None
    defines = {match.group("name"): int(match.group("value")) for match in _DEFINE.finditer(text)}
    if macros == ("CUDART_VERSION",):
        number = defines.get("CUDART_VERSION")
        return (number // 1000, number % 1000 // 10) if number else None
    if not all(name in defines for name in macros[:2]):
        return None
    return tuple(defines[name] for name in macros if name in defines)


def _read_regular(path: str) -> str | None:
    try:
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(HEADER_BYTES)
    except OSError:
        return None


def package_version(lib_directory: str, major: int | None) -> tuple[str, tuple[int, ...]] | None:
    """(distribution, version) of the pip NVIDIA package that installed `lib_directory`
    (``site-packages/nvidia/<name>/lib``) whose major is `major`: cu11 and cu12 share the directory."""
    parts = lib_directory.rstrip("/").split("/")
    if len(parts) < 4 or parts[-1] != "lib" or parts[-3] != "nvidia":
        return None
    site_packages = "/".join(parts[:-3])
    prefix = "nvidia_" + parts[-2].replace("-", "_") + "_cu"
    for info in sorted(glob.glob(os.path.join(glob.escape(site_packages), prefix + "*.dist-info"))):
        match = _DIST_INFO.match(os.path.basename(info))
        if match is None:
            continue
        version = tuple(int(part) for part in match.group("version").split("."))
        if major is None or version[0] == major:
            return match.group("name").replace("_", "-"), version
    return None
