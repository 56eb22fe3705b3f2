"""Every Python from 3.10 up installs the package; TensorFlow (the test extra) only where it has a wheel,
and the `tf` tests skip with that reason elsewhere."""

from __future__ import annotations

import sys

from tests.helpers.paths import ROOT
from tests.helpers.tensorflow_missing import TENSORFLOW_WHEELS_BELOW, tensorflow_missing_reason

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PYPROJECT = ROOT / "pyproject.toml"


def _project() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]


def test_no_upper_bound_on_python() -> None:
    """`pip install .` on 3.13 failed: requires-python was '>=3.10,<3.13'."""
    assert _project()["requires-python"] == ">=3.10"


def test_the_test_extra_installs_tensorflow_only_where_a_wheel_exists() -> None:
    (tensorflow,) = [item for item in _project()["optional-dependencies"]["test"] if "tensorflow" in item]
    below = ".".join(map(str, TENSORFLOW_WHEELS_BELOW))
    assert tensorflow.replace('"', "'") == f"tensorflow-cpu; python_version < '{below}'"


def test_tf_tests_skip_with_the_reason() -> None:
    assert tensorflow_missing_reason(True, (3, 14)) is None
    newest = tensorflow_missing_reason(False, (3, 14)) or ""
    assert "only below Python 3.14 (no wheel for 3.14 yet)" in newest
    assert "not installed for Python 3.12" in (tensorflow_missing_reason(False, (3, 12)) or "")
