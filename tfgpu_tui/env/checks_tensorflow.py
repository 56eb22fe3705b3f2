"""Checks of TensorFlow itself (from the inspection): installed, importable, CUDA build, driver new enough."""

from __future__ import annotations

from tfgpu_tui.env import compat, fixes
from tfgpu_tui.env.check_base import (
    Verdict,
    and_cuda_install,
    check,
    diagnoses,
    gpu_count,
    is_cuda_build,
    pip_command,
    target_python,
    tensorflow_version,
    tf_cuda,
)
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.inspection_data import InspectionResult, TfImport
from tfgpu_tui.env.targets import too_old


@check("tensorflow", "TensorFlow installed", order=50, needs_inspection=True)
def check_tensorflow(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = "Everything else depends on TensorFlow importing in the interpreter you train with."
    assert inspection is not None
    if too_old(facts.interpreter.version):  # “Python environment” says so and what to do: nothing to install
        return Verdict(Status.SKIPPED, "The interpreter is too old (see “Python environment”).", why)
    if not inspection.ok:
        return _inspection_failure(facts, inspection)
    tf = inspection.data.tensorflow or TfImport()
    if not tf.installed:
        return Verdict(
            Status.FAILURE,
            f"TensorFlow is not installed in {target_python(facts)} ({tf.error}).",
            why,
            and_cuda_install(facts, None),
        )
    if tf.error:
        failure = f"`import tensorflow` fails: {tf.error_type}: {tf.error}"
        numpy_cause = _numpy2_under_numpy1_build(facts)
        if numpy_cause:
            return Verdict(
                Status.FAILURE, f"{failure}. {numpy_cause}", why, pip_command(facts, "install 'numpy<2'")
            )
        return Verdict(
            Status.FAILURE, failure, why, _reinstall(facts) + "   # in a fresh venv if it keeps failing"
        )
    version = tf.version
    if not version:
        return _half_removed(facts, inspection)
    if inspection.data.inspection_errors:
        return Verdict(
            Status.WARNING,
            f"TensorFlow {version} imports, but inspecting it failed: "
            + "; ".join(inspection.data.inspection_errors),
            why,
            _reinstall(facts) + "   # a broken or partial install",
        )
    python = inspection.data.python.version or facts.interpreter.version
    text = f"TensorFlow {version} (import took {tf.import_seconds or 0:.1f} s) on Python {python}."
    row = compat.build_row_for(version)
    python_mm = compat.major_minor(python)
    if row is not None and python_mm is not None and not row.supports_python(python_mm):
        return Verdict(
            Status.WARNING,
            f"{text} TF {row.tf_version} was tested with Python {row.python_range} only.",
            why,
            f"Use a Python {row.python_range} venv, or a TensorFlow release tested with Python {python}.",
        )
    if row is None:
        text += " (not in the tested-build table; newer than it, or a nightly)"
    return Verdict(Status.OK, text, why)


def _numpy2_under_numpy1_build(facts: EnvFacts) -> str:
    """Why an import failed where the installed TensorFlow predates NumPy 2 and NumPy 2 is installed (pip
    keeps NumPy 2 for a release that does not cap it, such as 2.14.0's numpy>=1.23.5); "" otherwise."""
    numpy = facts.interpreter.packages.get("numpy")
    installed = facts.interpreter.tensorflow_distributions
    old = [f"{name} {version}" for name, version in installed.items() if fixes.numpy_pin(facts, version)]
    if not old:
        return ""
    first = ".".join(map(str, fixes.NUMPY2_FIRST))
    return (
        f"Cause: NumPy {numpy} is installed, and {', '.join(old)} was built against NumPy 1 (TensorFlow "
        f"supports NumPy 2 from {first} on)."
    )


def _reinstall(facts: EnvFacts, options: str = "--force-reinstall") -> str:
    """Reinstall what pip lists, at the versions installed (else install the GPU build)."""
    distributions = facts.interpreter.tensorflow_distributions
    if not distributions:
        return and_cuda_install(facts, None)
    specs = " ".join(f"'{name}=={version}'" for name, version in distributions.items())
    return pip_command(facts, f"install {options} {specs}")


def _half_removed(facts: EnvFacts, inspection: InspectionResult) -> Verdict:
    """`import tensorflow` finds a package without its files (`pip uninstall tensorflow-cpu` removed the
    files `tensorflow` shares with it): nothing works; reinstall what pip still lists."""
    distributions = facts.interpreter.tensorflow_distributions
    fix = _reinstall(facts, "--force-reinstall --no-deps")
    errors = "; ".join(inspection.data.inspection_errors)
    listed = ", ".join(f"{name} {version}" for name, version in distributions.items()) or "nothing"
    return Verdict(
        Status.FAILURE,
        f"`import tensorflow` finds a TensorFlow without its files (no version; pip lists {listed}): "
        "a half-removed install, as `pip uninstall tensorflow-cpu` leaves beside `tensorflow`."
        + (f" Inspecting it failed: {errors}" if errors else ""),
        "Everything else depends on TensorFlow importing in the interpreter you train with.",
        fix,
    )


def _inspection_failure(facts: EnvFacts, inspection: InspectionResult) -> Verdict:
    causes = diagnoses(inspection)
    why = "Without a working TensorFlow import no other TensorFlow check can run."
    cause = f" Likely cause: {causes[0].meaning}" if causes else ""
    fix = causes[0].fix if causes else ""
    if inspection.error_kind in ("interpreter_missing", "interpreter_unusable"):
        fix = "Pass the interpreter you train with: `tfgpu-tui check --python ~/venv/bin/python`."
    elif inspection.error_kind == "timeout":
        fix = fix or (
            f'Time it yourself: `{target_python(facts)} -c "import tensorflow"`; a GPU stuck in a bad state '
            "(see `nvidia-smi`) can hang CUDA initialisation; raise the limit with `--timeout`."
        )
    elif not fix:
        fix = f'Run `{target_python(facts)} -c "import tensorflow"` to see the full error.'
    return Verdict(Status.FAILURE, inspection.message + cause, why, fix)


@check("cpu_only_build", "GPU-enabled TensorFlow build", order=60, needs_tensorflow=True)
def check_cpu_only_build(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = "A CPU-only build never uses the GPU, whatever drivers and libraries are installed."
    version = tensorflow_version(facts, inspection)
    distributions = facts.interpreter.tensorflow_distributions
    names = ", ".join(f"{name} {ver}" for name, ver in distributions.items()) or "tensorflow"
    if is_cuda_build(facts, inspection):
        cuda = tf_cuda(facts, inspection)
        return Verdict(Status.OK, f"A CUDA build ({names}, CUDA {cuda or '?'}).", why)
    uninstall = tuple(distributions) or ("tensorflow-cpu",)
    fix = (
        pip_command(facts, f"uninstall -y {' '.join(uninstall)}")
        + " && "
        + and_cuda_install(facts, version, replacing=uninstall)
    )
    if facts.nvml.devices:
        return Verdict(
            Status.FAILURE,
            f"TensorFlow is a CPU-only build ({names}, is_cuda_build=False) on a machine with "
            f"{gpu_count(facts)} NVIDIA GPU(s).",
            why,
            fix,
        )
    return Verdict(
        Status.WARNING, f"TensorFlow is a CPU-only build ({names}); no NVIDIA GPU here either.", why, fix
    )


@check("driver_cuda", "Driver new enough for TensorFlow's CUDA", order=70, needs_tensorflow=True)
def check_driver_cuda(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = (
        "A driver older than TF's CUDA runtime fails with 'CUDA driver version is insufficient for CUDA "
        "runtime version' and TensorFlow falls back to the CPU."
    )
    skipped = _needs_cuda_and_driver(facts, inspection)
    if skipped:
        return skipped
    cuda = tf_cuda(facts, inspection)
    requirement = compat.driver_requirement(cuda)
    driver_text = facts.nvml.driver.driver_version if facts.nvml.driver else None
    driver = compat.version_tuple(driver_text)
    if requirement is None or driver is None:
        return Verdict(Status.SKIPPED, f"No driver table entry for CUDA {cuda} or driver {driver_text}.", why)
    hard, recommended = requirement.hard_floor_text, requirement.recommended_text
    if driver < requirement.hard_floor:
        return Verdict(
            Status.FAILURE,
            f"Driver {driver_text} is older than CUDA {cuda} allows (needs >= {hard}; "
            f"CUDA {requirement.recommended_for} ships with {recommended}).",
            why,
            _driver_fix(facts, recommended, driver),
        )
    if driver < requirement.recommended:
        return Verdict(
            Status.WARNING,
            f"Driver {driver_text} runs CUDA {cuda} only through minor-version compatibility "
            f"(>= {hard}); CUDA {requirement.recommended_for} asks for >= {recommended}.",
            "Features that need a newer driver fail, and XLA's ptxas disables parallel compilation.",
            _driver_fix(facts, recommended, driver),
        )
    return Verdict(Status.OK, f"Driver {driver_text} >= {recommended} (CUDA {cuda}).", why)


def _needs_cuda_and_driver(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict | None:
    if not is_cuda_build(facts, inspection):
        return Verdict(Status.SKIPPED, "Not a CUDA build of TensorFlow.")
    if facts.nvml.driver is None:  # a driver that lists no GPU is compared all the same
        return Verdict(Status.SKIPPED, "No NVIDIA driver to compare with.")
    return None


def _driver_fix(facts: EnvFacts, recommended: str, driver: tuple[int, ...]) -> str:
    return fixes.driver_fix(facts, recommended, driver)
