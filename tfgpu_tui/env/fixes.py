"""The install commands the checks print, made for the target interpreter: each one names a TensorFlow that
has a wheel for its Python, installs what the build needs and nothing that is installed already.

Pure: reads the shipped tables (``compat``) and the facts, starts nothing. ``tests/env/test_fix_commands.py``
asks pip's resolver whether every command this module can print resolves.
"""

from __future__ import annotations

import operator
import platform
import sys

from tfgpu_tui.env import compat
from tfgpu_tui.env.compat import BuildRow
from tfgpu_tui.env.facts import EnvFacts

AND_CUDA_FIRST = (2, 14)  # the first TensorFlow with the `[and-cuda]` extra
REPLACED_NAMED = 3  # the install comment names this many of the CUDA packages it replaces, then counts them
# Pins that do not install from wheels (tensorrt 8.5.3.1 and 8.6.1.post1 have none); left out of the fix.
UNINSTALLABLE_PINS = {"tensorrt", "tensorrt-bindings", "tensorrt-libs"}
BETTER_RELEASE = {"2.15.0": "2.15.1"}  # 2.15.0[and-cuda] pins a TensorRT without a wheel; 2.15.1 dropped it
NUMPY2_FIRST = (2, 18)  # the first TensorFlow built against NumPy 2; older ones fail to import under NumPy 2
# TensorFlow before 2.14 (CUDA 11.2/11.8 builds, cuDNN 8): the CUDA 11.8 pip packages, cuDNN 8.6, found
# only through LD_LIBRARY_PATH (those builds have no RUNPATH into site-packages/nvidia).
CUDA11_PACKAGES = (
    "nvidia-cuda-runtime-cu11==11.8.89",
    "nvidia-cublas-cu11==11.11.3.6",
    "nvidia-cufft-cu11==10.9.0.58",
    "nvidia-curand-cu11==10.3.0.86",
    "nvidia-cusolver-cu11==11.4.1.48",
    "nvidia-cusparse-cu11==11.7.5.86",
    "nvidia-cudnn-cu11==8.6.0.163",
)


OPERATORS = {
    "==": operator.eq,
    ">=": operator.ge,
    "<=": operator.le,
    "!=": operator.ne,
    "~=": operator.ge,
    ">": operator.gt,
    "<": operator.lt,
}


def python_of(facts: EnvFacts) -> tuple[int, int] | None:
    """The target interpreter's (major, minor)."""
    return compat.major_minor(facts.interpreter.version)


def pip(facts: EnvFacts, args: str) -> str:
    return f"{facts.interpreter.python} -m pip {args}"


def and_cuda_platform() -> bool:
    """Whether `tensorflow[and-cuda]` brings the CUDA libraries here: its pins are for Linux x86_64 only."""
    return sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")


def release_to_install(tf_version: str) -> str:
    """The release of the same minor to suggest: one whose pins install (2.15.0 -> 2.15.1)."""
    return BETTER_RELEASE.get(tf_version, tf_version)


def newest_for_python(python: tuple[int, int] | None, at_least: tuple[int, int] = (0, 0)) -> BuildRow | None:
    """The newest tested TensorFlow with a wheel for `python` (and at least version `at_least`)."""
    for row in compat.build_matrix():
        numbers = compat.major_minor(row.tf_version)
        if numbers is not None and numbers >= at_least and (python is None or row.supports_python(python)):
            return row
    return None


def _installed(facts: EnvFacts, package: str) -> str | None:
    return facts.interpreter.packages.get(package.lower().replace("_", "-"))


def satisfies(version: str | None, spec: str) -> bool:
    """Whether `version` meets a pin such as ``==12.5.82`` or ``>=12.5.82,<13.0`` (numeric parts only)."""
    have = compat.version_tuple(version)
    if have is None:
        return False
    for part in filter(None, spec.split(",")):
        operator = part[:2] if part[:2] in ("==", ">=", "<=", "!=", "~=") else part[:1]
        wanted = compat.version_tuple(part[len(operator) :])
        if wanted is None or operator not in OPERATORS:
            continue
        if operator == "==" and part.endswith(".*"):
            ok = have[: len(wanted)] == wanted
        else:
            size = max(len(have), len(wanted))
            ok = OPERATORS[operator](have + (0,) * (size - len(have)), wanted + (0,) * (size - len(wanted)))
        if not ok:
            return False
    return True


def missing_pins(facts: EnvFacts, tf_version: str) -> dict[str, str]:
    """The `[and-cuda]` pins of `tf_version` (installable ones) that the environment does not satisfy."""
    return {
        package: spec
        for package, spec in compat.pins_for(tf_version).items()
        if package not in UNINSTALLABLE_PINS and not satisfies(_installed(facts, package), spec)
    }


def _has_uninstallable_pin(tf_version: str) -> bool:
    return any(package in UNINSTALLABLE_PINS for package in compat.pins_for(tf_version))


def gpu_install(
    facts: EnvFacts, tf_version: str | None, replacing: tuple[str, ...] = (), offer_upgrade: bool = True
) -> str:
    """The command that gives TensorFlow `tf_version` (None: the newest for this Python) its GPU libraries.

    From 2.14: ``tensorflow[and-cuda]==V`` (what it replaces or adds, CUDA packages included, said after it),
    or the pinned packages themselves where the extra pins a TensorRT without a wheel; before 2.14 the CUDA 11
    pip recipe with its LD_LIBRARY_PATH line, or an upgrade valid for this Python. Says so, and installs
    nothing, where everything is installed already. `replacing`: distributions the caller's command
    uninstalls first; `offer_upgrade`: False where a newer TensorFlow is no way out (the driver runs only
    this one).
    """
    python = python_of(facts)
    if tf_version is None:
        row = newest_for_python(python)
        if row is None:
            return _no_wheel_for_python(facts)
        tf_version = release_to_install(row.tf_version)
    numbers = compat.version_tuple(tf_version) or ()
    if numbers[:2] < AND_CUDA_FIRST:
        return _cuda11_recipe(facts, tf_version, offer_upgrade)
    if not and_cuda_platform():
        return pip(facts, f"install 'tensorflow=={tf_version}'{numpy_pin(facts, tf_version)}") + (
            "   # tensorflow[and-cuda] brings CUDA libraries on Linux x86_64 only"
        )
    target = release_to_install(tf_version)
    installed = {
        name: version
        for name, version in facts.interpreter.tensorflow_distributions.items()
        if name not in replacing
    }
    missing = missing_pins(facts, target)
    if installed.get("tensorflow") == target and not missing:
        return (
            f"Nothing to install: tensorflow {target} and every CUDA package its [and-cuda] extra pins are "
            "installed already; the cause is elsewhere (LD_LIBRARY_PATH, the driver, see the other findings)."
        )
    if _has_uninstallable_pin(target):
        packages = " ".join(f"'{name}{spec}'" for name, spec in sorted(missing.items()))
        command = pip(facts, f"install 'tensorflow=={target}' {packages}".rstrip() + numpy_pin(facts, target))
        return command + f"   # the [and-cuda] pins of {target} without TensorRT (it has no wheel)"
    command = pip(facts, f"install 'tensorflow[and-cuda]=={target}'{numpy_pin(facts, target)}")
    if replacing:
        return command  # the caller's uninstall says what it replaces
    return command + _what_it_does(installed, target) + _replaced_pins(facts, missing)


def numpy_pin(facts: EnvFacts, tf_version: str) -> str:
    """ " 'numpy<2'" where the command installs a TensorFlow built against NumPy 1 into an environment that
    holds NumPy 2: pip keeps it where the release does not cap numpy (2.14.0 asks only numpy>=1.23.5), and
    `import tensorflow` then fails. "" otherwise."""
    numpy = compat.version_tuple(_installed(facts, "numpy"))
    if numpy is None or numpy[0] < 2 or (compat.version_tuple(tf_version) or ())[:2] >= NUMPY2_FIRST:
        return ""
    return " 'numpy<2'"


def _what_it_does(installed: dict[str, str], target: str) -> str:
    """Whether the install adds packages or replaces a TensorFlow, as a short comment."""
    others = {name: version for name, version in installed.items() if name != "tensorflow"}
    current = installed.get("tensorflow")
    if others:
        return f"   # adds tensorflow beside {', '.join(others)}: uninstall that first"
    if current is None:
        return "   # installs tensorflow and its CUDA packages"
    if current == target:
        return "   # adds the CUDA packages only"
    return f"   # replaces tensorflow {current}, adds its CUDA packages"


def _replaced_pins(facts: EnvFacts, missing: dict[str, str]) -> str:
    """The CUDA packages the install replaces (installed at a version the pin refuses), a few named."""
    replaced = []
    for name, spec in sorted(missing.items()):
        version = _installed(facts, name)
        if version is not None:
            parts = [part.strip() for part in spec.split(",")]
            lower_first = ",".join(sorted(parts, key=lambda part: part.startswith("<")))
            replaced.append(f"{name} {version} (pinned {lower_first})")
    if not replaced:
        return ""
    more = len(replaced) - REPLACED_NAMED
    return "; replaces " + ", ".join(replaced[:REPLACED_NAMED]) + (f" and {more} more" if more > 0 else "")


def _cuda11_recipe(facts: EnvFacts, tf_version: str, offer_upgrade: bool) -> str:
    """TF before 2.14: an upgrade with [and-cuda] where this Python has one, else the CUDA 11 pip packages
    and the LD_LIBRARY_PATH line that makes the loader find them."""
    python = python_of(facts)
    wanted = [] if _installed(facts, "tensorflow") == tf_version else [f"tensorflow=={tf_version}"]
    wanted += [
        package
        for package in CUDA11_PACKAGES
        if not satisfies(_installed(facts, package.split("==")[0]), "==" + package.split("==")[1])
    ]
    export = (
        "export LD_LIBRARY_PATH=$("
        + facts.interpreter.python
        + " -c \"import glob, nvidia; print(':'.join(sorted(glob.glob(nvidia.__path__[0] + '/*/lib'))))\")"
        + "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    )
    if numpy_pin(facts, tf_version):
        wanted.append("numpy<2")
    install = pip(facts, "install " + " ".join(f"'{package}'" for package in wanted)) if wanted else ""
    recipe = f"{install} && {export}" if install else export
    upgrade = newest_for_python(python, AND_CUDA_FIRST) if offer_upgrade and and_cuda_platform() else None
    if upgrade is None:
        return (
            recipe
            + f"   # TF {tf_version} predates tensorflow[and-cuda]: it loads these only via LD_LIBRARY_PATH"
        )
    target = release_to_install(upgrade.tf_version)
    return (
        pip(facts, f"install 'tensorflow[and-cuda]=={target}'")
        + f"   # TF {tf_version} predates tensorflow[and-cuda]; or keep it: "
        + recipe
    )


def keras2_install(facts: EnvFacts, tf_mm: tuple[int, int]) -> str:
    """Keras 2 for TensorFlow before 2.16 (whose `tf.keras` imports the `keras` package)."""
    return pip(facts, f"install 'keras=={tf_mm[0]}.{tf_mm[1]}.*'") + (
        f"   # the Keras 2 release of TensorFlow {tf_mm[0]}.{tf_mm[1]}"
    )


def tf_keras_install(facts: EnvFacts, tf_mm: tuple[int, int]) -> str:
    """Keras 2 as tf-keras for TensorFlow 2.16+ (the release of the same minor), selected for `tf.keras`."""
    return pip(facts, f"install 'tf-keras~={tf_mm[0]}.{tf_mm[1]}.0'") + " && export TF_USE_LEGACY_KERAS=1"


def _no_wheel_for_python(facts: EnvFacts) -> str:
    newest = compat.build_matrix()[0]
    return (
        f"No TensorFlow release has a wheel for Python {facts.interpreter.version}: make a venv with Python "
        f"{newest.python_range} (e.g. `python3.{newest.python_max[1]} -m venv ~/venvs/tf`) and install "
        f"'tensorflow[and-cuda]=={newest.tf_version}' there."
    )


def driver_fix(facts: EnvFacts, recommended: str, driver: tuple[int, ...]) -> str:
    """Upgrade the driver, or the newest TensorFlow this driver runs with a wheel for this Python; where no
    release fits both, say so and give the two ways out."""
    upgrade = f"Upgrade the NVIDIA driver to >= {recommended} (`sudo ubuntu-drivers install`, then reboot)"
    python = python_of(facts)
    driver_text = facts.nvml.driver.driver_version if facts.nvml.driver else None
    driver_text = driver_text or compat.format_version(driver)
    runs_here = [row for row in compat.build_matrix() if _driver_runs(row, driver)]
    for row in runs_here:
        if python is None or row.supports_python(python):
            target = release_to_install(row.tf_version)
            install = gpu_install(facts, target, offer_upgrade=False)
            return f"{upgrade}, or use TF {target} (CUDA {row.cuda}): {install}"
    if not runs_here:
        return upgrade + "."
    other = runs_here[0]
    return (
        f"No TensorFlow release both runs on driver {driver_text} and has a wheel for "
        f"Python {facts.interpreter.version}. {upgrade}, or use Python {other.python_range} with "
        f"TF {release_to_install(other.tf_version)} (CUDA {other.cuda})."
    )


def _driver_runs(row: BuildRow, driver: tuple[int, ...]) -> bool:
    requirement = compat.driver_requirement(row.cuda)
    return requirement is not None and requirement.recommended <= driver
