"""Facts about the environment that need no TensorFlow: driver and GPUs, the target interpreter and its
packages, CUDA libraries on disk, environment variables, nvcc.

Each fact that touches the outside world has one collector here; the checks receive plain dataclasses.
Every collector is fast (well under a second) and never raises: a failure becomes an ``error`` string.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from tfgpu_tui.env.library_versions import read_library_version
from tfgpu_tui.env.nvml_facts import NvmlFacts, read_nvml_facts
from tfgpu_tui.env.targets import Candidate, ask_version, too_old, too_old_text
from tfgpu_tui.proc.spawn import run_child

# Libraries TensorFlow's GPU support loads (the stem before ".so").
CUDA_LIBRARIES = (
    "libcudart",
    "libcudnn",
    "libcublas",
    "libcublasLt",
    "libcufft",
    "libcusolver",
    "libcusparse",
    "libcurand",
    "libnccl",
    "libnvrtc",
    "libnvJitLink",
    "libcupti",
)
WATCHED_ENV_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "TF_CPP_MIN_LOG_LEVEL",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_GPU_ALLOCATOR",
    "XLA_FLAGS",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
)
# The distributions that install TensorFlow's own files (the `tensorflow` package): two of them overwrite
# each other, and uninstalling one removes files the other needs.
TENSORFLOW_DISTRIBUTIONS = frozenset(
    {
        "tensorflow",
        "tensorflow-cpu",
        "tensorflow-gpu",
        "tensorflow-intel",
        "tensorflow-macos",
        "tensorflow-aarch64",
        "tensorflow-cpu-aws",
        "tensorflow-rocm",
        "tf-nightly",
        "tf-nightly-cpu",
        "tf-nightly-gpu",
        "intel-tensorflow",
    }
)
CHILD_TIMEOUT_SECONDS = 20.0
_LIB_NAME = re.compile(r"^(?P<stem>lib[A-Za-z]+)\.so(?:\.(?P<version>\d+(?:\.\d+)*))?$")

# Run by the target interpreter: its version, prefixes, the relevant installed distributions and where the
# pip NVIDIA libraries and TensorFlow live. Standard library only, Python 3.6+ syntax.
INTERPRETER_SCRIPT = r"""
import glob, json, os, sys
try:
    from importlib import metadata
except ImportError:
    metadata = None
import importlib.util
WANTED = ("nvidia-", "tensorflow", "tf-nightly", "tf-keras", "keras", "tensorrt", "jax")
packages = {}
if metadata is not None:
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith(WANTED) or name == "numpy":
            packages[name] = dist.version
libs = []
for entry in sys.path:
    if os.path.isdir(os.path.join(entry, "nvidia")):
        libs.extend(sorted(glob.glob(os.path.join(entry, "nvidia", "*", "lib", "lib*.so*"))))
libcuda = {"loaded": None, "path": None, "error": None}
if sys.platform.startswith("linux"):
    import ctypes
    try:
        ctypes.CDLL("libcuda.so.1")  # dlopen only: no cuInit, no GPU context
        libcuda["loaded"] = True
        with open("/proc/self/maps") as maps:
            paths = [line.split()[-1] for line in maps if "libcuda.so" in line]
        libcuda["path"] = paths[0] if paths else None
    except OSError as error:
        libcuda.update(loaded=False, error=str(error))
and_cuda = []
if metadata is not None and "tensorflow" in packages:
    try:
        and_cuda = [r for r in metadata.requires("tensorflow") or () if "and-cuda" in r]
    except Exception:
        pass
try:
    spec = importlib.util.find_spec("tensorflow")
    tf_dir = os.path.dirname(spec.origin) if spec and spec.origin else None
except Exception:
    tf_dir = None
print(json.dumps({
    "version": "%d.%d.%d" % sys.version_info[:3],
    "executable": sys.executable,
    "prefix": sys.prefix,
    "base_prefix": getattr(sys, "base_prefix", sys.prefix),
    "real_prefix": getattr(sys, "real_prefix", None),
    "conda": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
    "packages": packages,
    "pip_libraries": libs,
    "tensorflow_dir": tf_dir,
    "and_cuda_requirements": and_cuda,
    "libcuda": libcuda,
    "container": any(os.path.exists(p) for p in ("/.dockerenv", "/run/.containerenv"))
    or "KUBERNETES_SERVICE_HOST" in os.environ,
}))
"""


@dataclass(frozen=True)
class LibraryFile:
    """One CUDA library file found on disk.

    Attributes:
        stem: e.g. ``libcudnn``.
        version: read by ``library_versions.read_library_version``, e.g. (8, 6, 0); the soname's numbers
            (``libcudnn.so.8`` -> (8,)) when nothing better was found; None when unversioned.
        path: where it is.
        origin: ``pip`` (site-packages/nvidia), ``ldconfig`` (system cache) or ``LD_LIBRARY_PATH``.
        version_source: where the version was read: ``file name``, a header (``cudnn_version.h``) or
            ``package nvidia-cudnn-cu11``.
    """

    stem: str
    version: tuple[int, ...] | None
    path: str
    origin: str
    version_source: str = "file name"


@dataclass(frozen=True)
class InterpreterFacts:
    """The target interpreter, asked directly (a tiny child process, no TensorFlow import)."""

    python: str
    error: str = ""
    version: str | None = None
    executable: str | None = None
    prefix: str | None = None
    kind: str | None = None  # venv | conda | system
    packages: dict[str, str] = field(default_factory=dict)
    pip_libraries: list[LibraryFile] = field(default_factory=list)
    tensorflow_dir: str | None = None
    # The installed tensorflow distribution's own `[and-cuda]` requirements, as its metadata states them.
    and_cuda_requirements: list[str] = field(default_factory=list)
    # Whether the driver's CUDA library (libcuda.so.1) loads in the target interpreter (None: not Linux, or
    # not asked), where it was found, or the loader's error.
    libcuda_loaded: bool | None = None
    libcuda_path: str | None = None
    libcuda_error: str | None = None
    in_container: bool | None = None  # /.dockerenv, /run/.containerenv or a Kubernetes pod

    @property
    def tensorflow_distributions(self) -> dict[str, str]:
        """Installed distributions of TensorFlow itself (tensorflow, tensorflow-cpu, tf-nightly...) -> its
        version; add-ons such as tensorflow-text or tensorflow-io are not TensorFlow."""
        return {name: version for name, version in self.packages.items() if name in TENSORFLOW_DISTRIBUTIONS}


@dataclass(frozen=True)
class NvccFacts:
    """nvcc on PATH (informational: TensorFlow pip wheels do not use it)."""

    path: str | None
    release: str | None = None
    error: str = ""


@dataclass(frozen=True)
class EnvFacts:
    """Everything known before TensorFlow is imported."""

    nvml: NvmlFacts
    interpreter: InterpreterFacts
    system_libraries: list[LibraryFile]
    ld_library_path: list[LibraryFile]
    ld_library_dirs: list[str]
    env_vars: dict[str, str]
    nvcc: NvccFacts
    collect_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (tuples become lists)."""
        return asdict(self)


def library_from_path(path: str, origin: str) -> LibraryFile | None:
    """A LibraryFile for a CUDA library path (version read from the resolved file name), else None."""
    match = _LIB_NAME.match(os.path.basename(path))
    if not match or match.group("stem") not in CUDA_LIBRARIES:
        return None
    text = match.group("version")
    soname = tuple(int(part) for part in text.split(".")) if text else None
    version, source = read_library_version(path, match.group("stem"), soname)
    return LibraryFile(match.group("stem"), version, path, origin, source)


def _libraries(paths: list[str], origin: str) -> list[LibraryFile]:
    found = (library_from_path(path, origin) for path in paths)
    return [library for library in found if library is not None]


def parse_ldconfig(output: str) -> list[LibraryFile]:
    """CUDA libraries in `ldconfig -p` output (lines like "libcudnn.so.8 (libc6,x86-64) => /path")."""
    paths = [line.split("=>", 1)[1].strip() for line in output.splitlines() if "=>" in line]
    return _libraries(paths, "ldconfig")


def system_libraries() -> list[LibraryFile]:
    """CUDA libraries in the dynamic linker's cache."""
    ldconfig = shutil.which("ldconfig") or next(
        (path for path in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.exists(path)), None
    )
    if ldconfig is None:
        return []
    try:
        result = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_ldconfig(result.stdout)


def ld_library_path_libraries(value: str) -> list[LibraryFile]:
    """CUDA libraries in each directory of an LD_LIBRARY_PATH value, in search order."""
    found: list[LibraryFile] = []
    for directory in (part for part in value.split(":") if part):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        found += _libraries([os.path.join(directory, name) for name in names], "LD_LIBRARY_PATH")
    return found


PYENV_VERSIONS = re.compile(r"/\.?pyenv/versions/[^/]+$")
SYSTEM_PREFIXES = ("/usr", "/usr/local", "/")


def interpreter_kind(data: dict[str, Any]) -> str:
    """What the interpreter is, from its own prefixes: venv, conda, pyenv (a version pyenv built), system
    (the operating system's, in /usr or /usr/local), or installation (any other Python's own interpreter:
    a python.org build in /opt, a Homebrew or uv Python)."""
    if data.get("conda"):
        return "conda"
    if data.get("real_prefix") or data.get("prefix") != data.get("base_prefix"):
        return "venv"
    prefix = str(data.get("prefix") or "").rstrip("/") or "/"
    if PYENV_VERSIONS.search(prefix):
        return "pyenv"
    return "system" if prefix in SYSTEM_PREFIXES else "installation"


def interpreter_facts(python: str, timeout: float = CHILD_TIMEOUT_SECONDS) -> InterpreterFacts:
    """Ask the target interpreter about itself; a missing or broken one gives ``error``."""
    try:
        result = run_child([python, "-c", INTERPRETER_SCRIPT], timeout, text=True)
    except FileNotFoundError:
        return InterpreterFacts(python, error=f"No Python interpreter at {python}.")
    except PermissionError:
        return InterpreterFacts(python, error=f"{python} is not executable.")
    except subprocess.TimeoutExpired:
        return InterpreterFacts(python, error=f"{python} did not answer within {timeout:g} s.")
    except OSError as error:
        return InterpreterFacts(python, error=f"{python} could not be started: {error.strerror or error}.")
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        asked = ask_version(Candidate(python, ""), timeout)  # an old Python is too old, not broken
        if asked.python_version and asked.error:
            return InterpreterFacts(python, error=f"{python} {asked.error}.", version=asked.python_version)
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return InterpreterFacts(python, error=f"{python} is not a working Python 3 interpreter ({last}).")
    version = data.get("version")
    return InterpreterFacts(
        python=python,
        error=f"{python} {too_old_text(version)}." if too_old(version) else "",
        version=version,
        executable=data.get("executable"),
        prefix=data.get("prefix"),
        kind=interpreter_kind(data),
        packages=readable_packages(data.get("packages")),
        pip_libraries=_libraries(list(data.get("pip_libraries") or []), "pip"),
        tensorflow_dir=data.get("tensorflow_dir"),
        and_cuda_requirements=[str(item) for item in data.get("and_cuda_requirements") or []],
        libcuda_loaded=(data.get("libcuda") or {}).get("loaded"),
        libcuda_path=(data.get("libcuda") or {}).get("path"),
        libcuda_error=(data.get("libcuda") or {}).get("error"),
        in_container=data.get("container"),
    )


_DISTRIBUTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_VERSION = re.compile(r"[0-9A-Za-z.+!_-]{1,64}")
UNREADABLE_VERSION = "unreadable"


def readable_packages(raw: object) -> dict[str, str]:
    """The target's installed distributions (lower-case name -> version) as its metadata gave them, each
    checked: fixes print them into shell lines, so a name that is not a distribution name is dropped and a
    version with anything but letters, digits and ``.+!_-`` (a newline, a ``;``) becomes "unreadable"."""
    if not isinstance(raw, dict):
        return {}
    return {
        name: version if isinstance(version, str) and _VERSION.fullmatch(version) else UNREADABLE_VERSION
        for name, version in raw.items()
        if isinstance(name, str) and _DISTRIBUTION_NAME.fullmatch(name)
    }


_NVCC_RELEASE = re.compile(r"release (?P<release>[\d.]+), V(?P<full>[\d.]+)")


def nvcc_facts() -> NvccFacts:
    """nvcc's path and release, if it is on PATH or in /usr/local/cuda/bin."""
    path = shutil.which("nvcc") or next(
        (p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)), None
    )
    if path is None:
        return NvccFacts(None)
    try:
        result = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as error:
        return NvccFacts(path, error=str(error))
    match = _NVCC_RELEASE.search(result.stdout)
    if not match:
        return NvccFacts(path, error="could not read its version")
    return NvccFacts(path, match.group("full"))


def collect_facts(
    python: str, environ: dict[str, str] | None = None, timeout: float = CHILD_TIMEOUT_SECONDS
) -> EnvFacts:
    """All TensorFlow-free facts for the target interpreter `python` (asked for at most `timeout` s)."""
    started = time.perf_counter()
    env = dict(os.environ if environ is None else environ)
    ld_path = env.get("LD_LIBRARY_PATH", "")
    return EnvFacts(
        nvml=read_nvml_facts(),
        interpreter=interpreter_facts(python, timeout),
        system_libraries=system_libraries(),
        ld_library_path=ld_library_path_libraries(ld_path),
        ld_library_dirs=[part for part in ld_path.split(":") if part],
        env_vars={name: env[name] for name in WATCHED_ENV_VARS if name in env},
        nvcc=nvcc_facts(),
        collect_seconds=time.perf_counter() - started,
    )
