"""Every pip command the check can print resolves: for each TensorFlow in the tables and each Python its row
claims, pip's own resolver (`pip install --dry-run --ignore-installed --only-binary=:all: --python-version X
--platform manylinux... --target DIR`) must find wheels for it. Needs PyPI's metadata (not the wheels); skips,
saying so, where the index cannot be reached. Plus the cases that need no download: the fixes printed for
this test interpreter (tensorflow-cpu of the test extra) and for an interpreter without TensorFlow."""

from __future__ import annotations

import dataclasses
import re
import shlex
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers.paths import FIXTURES
from tfgpu_tui.env import compat, fixes
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.recorded import load_recording

pytestmark = pytest.mark.e2e  # real child processes

FIXTURES = FIXTURES / "env"
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
)
DRIVERS = ((450, 80, 2), (470, 82, 1), (525, 60, 13), (535, 104, 5), (555, 42, 2), (580, 95, 5))
PIP_INSTALL = re.compile(r"-m pip install ((?:'[^']+' ?)+)")
PARALLEL = 8
# pip reads each wheel's METADATA through HTTP range requests instead of downloading the wheel where the index
# serves no PEP 658 metadata file: the same resolver on the same metadata, without fetching and hashing ~3 GB
# of TensorFlow and CUDA wheels per command (measured 2026-12-07: 8.0 s of CPU a command before, 2.4 s after).
FAST_DEPS = ("--use-feature=fast-deps",)
# TensorFlow before 2.13 (and on Python < 3.9) depends on sdist-only releases (termcolor 1.1.0, clang 5.0, old
# jax), so binary-only resolution fails there whatever the fix says: measured 2026-12-05, 12 of 75 commands.
RESOLVABLE_FROM = (2, 13)
PYPI = "https://pypi.org/simple/tensorflow/"
NUMPY2 = "2.1.3"  # has wheels for Python 3.10-3.13


def _facts(python: str, **packages: str) -> EnvFacts:
    facts, _ = load_recording(FIXTURES / "all_good.json")
    interpreter = dataclasses.replace(facts.interpreter, version=python, packages=dict(packages))
    return dataclasses.replace(facts, interpreter=interpreter)


def requirement_sets(text: str) -> list[tuple[str, ...]]:
    """The requirements of each `pip install` in a printed fix."""
    return [tuple(shlex.split(match.group(1))) for match in PIP_INSTALL.finditer(text)]


def printable_fixes() -> set[tuple[str, tuple[str, ...]]]:
    """(Python "3.X", requirements) of every install the check can print for the tables' TensorFlows."""
    found: set[tuple[str, tuple[str, ...]]] = set()
    pythons: set[tuple[int, int]] = set()
    for row in compat.build_matrix():
        if (compat.major_minor(row.tf_version) or (0, 0)) < RESOLVABLE_FROM:
            continue
        for minor in range(max(row.python_min[1], 9), row.python_max[1] + 1):
            python = f"3.{minor}.0"
            pythons.add((3, minor))
            tf_mm = compat.major_minor(row.tf_version) or (0, 0)
            keras = fixes.tf_keras_install if tf_mm >= (2, 16) else fixes.keras2_install
            texts = [
                fixes.gpu_install(_facts(python, tensorflow=row.tf_version), row.tf_version),
                fixes.gpu_install(_facts(python), row.tf_version, offer_upgrade=False),
                keras(_facts(python, tensorflow=row.tf_version), tf_mm),
            ]
            if minor == row.python_max[1]:  # NumPy 2 installed: a NumPy-1 build gets 'numpy<2' (one Python)
                texts.append(
                    fixes.gpu_install(_facts(python, numpy=NUMPY2), row.tf_version, offer_upgrade=False)
                )
            for text in texts:
                found.update((f"3.{minor}", requirements) for requirements in requirement_sets(text))
    for _, minor in sorted(pythons):  # noqa: B007
        python = f"3.{minor}.0"
        texts = [fixes.gpu_install(_facts(python), None)]
        texts += [fixes.driver_fix(_facts(python), "580.65.06", driver) for driver in DRIVERS]
        if minor == 11:  # NumPy 2 installed: a NumPy-1 build gets 'numpy<2' (one Python: the suite's time)
            texts += [fixes.driver_fix(_facts(python, numpy=NUMPY2), "580.65.06", d) for d in DRIVERS]
        for text in texts:
            found.update((f"3.{minor}", requirements) for requirements in requirement_sets(text))
    return found


def resolve(python: str, requirements: tuple[str, ...], target: Path) -> str | None:
    """None when pip resolves `requirements` for Python `python` on Linux x86_64, else pip's last lines."""
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    command += ["--only-binary=:all:", "--python-version", python, "--target", str(target)]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    completed = subprocess.run(
        [*command, *FAST_DEPS, *requirements], capture_output=True, text=True, timeout=900
    )
    if completed.returncode != 0 and "fast-deps" in completed.stderr:  # a pip without the feature
        completed = subprocess.run([*command, *requirements], capture_output=True, text=True, timeout=900)
    if completed.returncode == 0:
        return None
    return "\n".join(completed.stderr.strip().splitlines()[-3:])


def _index_reachable() -> bool:
    try:
        with urllib.request.urlopen(PYPI, timeout=15) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def pypi() -> None:
    if not _index_reachable():
        pytest.skip(f"PyPI ({PYPI}) cannot be reached: pip's resolver needs the package metadata")


@pytest.fixture(autouse=True)
def linux_x86_64(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fixes, "and_cuda_platform", lambda: True)  # the platform the commands are for


def test_the_fixes_include_the_numpy_1_pin() -> None:
    """Where NumPy 2 is installed, the fixes that install a TensorFlow built against NumPy 1 pin it back."""
    pinned = [requirements for _, requirements in printable_fixes() if "numpy<2" in requirements]
    assert pinned, "no printable fix pins numpy<2"
    assert all(
        any(
            compat.version_tuple(r.split("==")[1]) < (2, 18)
            for r in requirements
            if "tensorflow" in r and "==" in r
        )
        for requirements in pinned
    )


def test_the_fixes_cover_every_table_row() -> None:
    found = printable_fixes()
    pinned = {requirement for _, requirements in found for requirement in requirements}
    for row in compat.build_matrix():
        if (compat.major_minor(row.tf_version) or (0, 0)) < RESOLVABLE_FROM:
            continue
        release = fixes.release_to_install(row.tf_version)
        assert any(release in requirement for requirement in pinned), row.tf_version


@pytest.mark.network
def test_every_printable_fix_resolves(pypi: None, tmp_path: Path) -> None:
    cases = sorted(printable_fixes())
    with ThreadPoolExecutor(PARALLEL) as pool:
        outcomes = list(pool.map(lambda case: resolve(*case, tmp_path / "target"), cases))
    failed = [
        f"Python {python}: {' '.join(req)}\n  {error}"
        for (python, req), error in zip(cases, outcomes, strict=True)
        if error
    ]
    assert not failed, f"{len(failed)} of {len(cases)} fixes do not resolve:\n" + "\n".join(failed)


@pytest.mark.network
def test_fixes_for_this_interpreter_resolve(pypi: None, tmp_path: Path) -> None:
    """This interpreter (tensorflow-cpu of the test extra, or no TensorFlow): the fixes printed for it."""
    from tfgpu_tui.env.facts import collect_facts

    facts = collect_facts(sys.executable)
    installed = facts.interpreter.tensorflow_distributions
    version = next(iter(installed.values()), None)
    python = ".".join(facts.interpreter.version.split(".")[:2]) if facts.interpreter.version else None
    assert python is not None
    texts = [fixes.gpu_install(facts, version, replacing=tuple(installed)), fixes.gpu_install(facts, None)]
    cases = {requirements for text in texts for requirements in requirement_sets(text)}
    assert cases, texts
    for requirements in cases:
        assert resolve(python, requirements, tmp_path / "target") is None, requirements
