"""TensorFlow's packages beside each other: one TensorFlow distribution, a Keras that matches it."""

from __future__ import annotations

from tfgpu_tui.env import compat, fixes
from tfgpu_tui.env.check_base import Verdict, and_cuda_install, check, pip_command, tensorflow_version
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.inspection_data import InspectionResult

KERAS_3_TF = (2, 16)  # from TF 2.16, `tf.keras` is Keras 3 unless tf-keras is installed and selected


@check("tensorflow_distributions", "One TensorFlow distribution", order=55)
def check_tensorflow_distributions(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = (
        "tensorflow, tensorflow-cpu, tf-nightly... all install the same `tensorflow` package: the last one "
        "installed wins file by file, and uninstalling one removes files the other still needs."
    )
    distributions = facts.interpreter.tensorflow_distributions
    names = ", ".join(f"{name} {version}" for name, version in distributions.items())
    if len(distributions) <= 1:
        return Verdict(Status.OK, f"{names or 'No TensorFlow distribution'} installed.", why)
    version = tensorflow_version(facts, inspection)
    fix = (
        pip_command(facts, f"uninstall -y {' '.join(distributions)}")
        + " && "
        + and_cuda_install(facts, version, replacing=tuple(distributions))
    )
    return Verdict(Status.WARNING, f"Several TensorFlow distributions are installed: {names}.", why, fix)


@check("keras", "Keras matches TensorFlow", order=65)
def check_keras(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = (
        "Before TF 2.16 `tf.keras` imports the `keras` package as Keras 2 and breaks with Keras 3; from 2.16 "
        "`tf.keras` is Keras 3, and a Keras-2 program needs tf-keras with TF_USE_LEGACY_KERAS=1."
    )
    packages = facts.interpreter.packages
    tf_version = tensorflow_version(facts, inspection)
    tf_mm = compat.major_minor(tf_version)
    keras, tf_keras = packages.get("keras"), packages.get("tf-keras")
    if tf_mm is None:
        return Verdict(Status.SKIPPED, "No TensorFlow to compare Keras with.", why)
    keras_major = (compat.version_tuple(keras) or (0,))[0]
    if tf_mm < KERAS_3_TF and keras_major >= 3:
        return Verdict(
            Status.FAILURE,
            f"Keras {keras} is installed under TensorFlow {tf_version}: `tf.keras` fails with Keras 3 "
            "(TensorFlow before 2.16 needs Keras 2).",
            why,
            fixes.keras2_install(facts, tf_mm),
        )
    if tf_mm >= KERAS_3_TF and tf_keras is None:
        return Verdict(
            Status.OK,
            f"TensorFlow {tf_version} with Keras {keras or '(not installed)'}: `tf.keras` is Keras 3; "
            "a Keras-2 program needs tf-keras (not installed). `log` and the Training tab name a run that "
            "failed this way (KERAS2_CODE_ON_KERAS3).",
            why,
            fixes.tf_keras_install(facts, tf_mm) + "   # only for a Keras-2 program",
            informational=True,
        )
    if tf_mm >= KERAS_3_TF:
        return Verdict(
            Status.OK,
            f"TensorFlow {tf_version} with Keras {keras} and tf-keras {tf_keras} (Keras 2 for programs run "
            "with TF_USE_LEGACY_KERAS=1).",
            why,
            informational=True,
        )
    return Verdict(Status.OK, f"TensorFlow {tf_version} with Keras {keras or 'from TensorFlow'}.", why)
