"""Which CUDA libraries a TensorFlow build needs, read from the build and its pip pins, not a fixed list.

The set comes from, in order: the installed ``tensorflow`` distribution's own ``[and-cuda]`` requirements
(its metadata), the shipped pin table for that release (``data/tf_and_cuda_pins.csv``), and before 2.14
(no ``[and-cuda]`` extra) the CUDA 11 pip packages of ``fixes.CUDA11_PACKAGES``. Each pinned NVIDIA package
maps to the libraries it installs; the soname major is the package version's major (``nvidia-cufft-cu12
11.2.3.61`` installs ``libcufft.so.11``).

Pure: no files, no processes. ``checks_libraries`` compares this set with the files the loader finds.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfgpu_tui.env import compat

# TensorFlow's DSO loader (tsl/platform/default/dso_loader.cc, MaybeTryDlopenGPULibraries) opens these
# before it registers a GPU; one failure and the GPU is skipped ("Cannot dlopen some GPU libraries").
# cuSPARSE and cuSOLVER 12 link against libnvJitLink.so.12, so it must load too where the build pins it.
REGISTRATION_LIBRARIES = (
    "libcudart",
    "libcublas",
    "libcublasLt",
    "libcufft",
    "libcusolver",
    "libcusparse",
    "libcudnn",
    "libnvJitLink",
)
# pip package (without its -cuNN suffix) -> the libraries it installs. nvidia-cuda-nvcc brings ptxas (a
# program, used by XLA), no library.
PACKAGE_LIBRARIES: dict[str, tuple[str, ...]] = {
    "nvidia-cuda-runtime": ("libcudart",),
    "nvidia-cublas": ("libcublas", "libcublasLt"),
    "nvidia-cufft": ("libcufft",),
    "nvidia-cusolver": ("libcusolver",),
    "nvidia-cusparse": ("libcusparse",),
    "nvidia-cudnn": ("libcudnn",),
    "nvidia-nvjitlink": ("libnvJitLink",),
    "nvidia-curand": ("libcurand",),
    "nvidia-nccl": ("libnccl",),
    "nvidia-cuda-nvrtc": ("libnvrtc",),
    "nvidia-cuda-cupti": ("libcupti",),
}


@dataclass(frozen=True)
class NeededLibrary:
    """One library the build needs: its soname major, the lowest version wanted, where that came from."""

    stem: str
    major: int
    minimum: tuple[int, ...]
    package: str  # the pip distribution that installs it, e.g. nvidia-cudnn-cu12
    for_registration: bool  # needed before TensorFlow registers a GPU (else used by some ops only)

    @property
    def soname(self) -> str:
        return f"{self.stem}.so.{self.major}"


@dataclass(frozen=True)
class LibrarySet:
    """The libraries a build needs and where the list was read."""

    libraries: tuple[NeededLibrary, ...]
    source: str


def parse_requirements(requirements: list[str]) -> dict[str, str]:
    """package -> version spec of requirement strings in either metadata style:
    ``nvidia-cudnn-cu12 (==8.9.4.25) ; extra == 'and-cuda'`` or ``nvidia-cudnn-cu12<10.0,>=9.3.0.75; ...``."""
    pins = {}
    for text in requirements:
        pin = compat.parse_requirement(text)
        if pin is not None:
            pins[pin[0].lower().replace("_", "-")] = pin[1]
    return pins


def lower_bound(spec: str) -> tuple[int, ...] | None:
    """The lowest version a spec such as ``==12.2.5.6`` or ``<13.0,>=12.5.3.2`` allows."""
    for part in spec.split(","):
        if part.startswith(("==", ">=", "~=")):
            return compat.version_tuple(part[2:].rstrip(".*"))
    return None


def libraries_of_pins(pins: dict[str, str], cudnn_build: tuple[int, int] | None) -> tuple[NeededLibrary, ...]:
    """The libraries the pinned NVIDIA packages install. cuDNN's minimum is the build's major.minor when
    known (TensorFlow's rule: the same major, an equal or higher minor), else the pin's lower bound."""
    needed = []
    for package, spec in sorted(pins.items()):
        base = package.rsplit("-cu", 1)[0]
        minimum = lower_bound(spec)
        if base not in PACKAGE_LIBRARIES or not minimum:
            continue
        for stem in PACKAGE_LIBRARIES[base]:
            wanted = cudnn_build if stem == "libcudnn" and cudnn_build else minimum
            registers = stem in REGISTRATION_LIBRARIES
            needed.append(NeededLibrary(stem, minimum[0], tuple(wanted), package, registers))
    return tuple(needed)


def needed_libraries(
    installed_requirements: list[str],
    installed_tensorflow: str | None,
    tf_version: str | None,
    cuda_build: tuple[int, int],
    cudnn_build: tuple[int, int],
    cuda11_packages: tuple[str, ...],
) -> LibrarySet:
    """The set for TensorFlow `tf_version`, built for CUDA `cuda_build` and cuDNN `cudnn_build`."""
    pins = parse_requirements(installed_requirements) if installed_tensorflow == tf_version else {}
    if pins:
        source = f"the [and-cuda] requirements of the installed tensorflow {tf_version}"
    else:
        pins = compat.pins_for(tf_version)
        source = f"the [and-cuda] pins of tensorflow {tf_version} (shipped table)"
    if not pins and cuda_build[0] == 11:
        pins = {package.split("==")[0]: "==" + package.split("==")[1] for package in cuda11_packages}
        source = f"the CUDA 11 pip packages TF {tf_version} can load (it predates [and-cuda])"
    libraries = libraries_of_pins(pins, cudnn_build)
    if libraries:
        return LibrarySet(libraries, source)
    cuda, cudnn = (cuda_build[0], 0), cudnn_build
    fallback = (
        NeededLibrary("libcudart", cuda[0], cuda, "CUDA runtime", True),
        NeededLibrary("libcublas", cuda[0], cuda, "cuBLAS", True),
        NeededLibrary("libcudnn", cudnn[0], cudnn, "cuDNN", True),
    )
    return LibrarySet(fallback, f"TF {tf_version}'s build info (CUDA {cuda[0]}, cuDNN {cudnn[0]}.{cudnn[1]})")
