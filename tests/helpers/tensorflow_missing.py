"""Why the `tf` tests cannot run in an interpreter (conftest.py skips them with it)."""

from __future__ import annotations

TENSORFLOW_WHEELS_BELOW = (3, 14)  # pyproject.toml's test extra: tensorflow-cpu; python_version < '3.14'


def tensorflow_missing_reason(installed: bool, version: tuple[int, int]) -> str | None:
    """Why the `tf` tests cannot run in this interpreter (TensorFlow not installed), or None."""
    if installed:
        return None
    release = f"{version[0]}.{version[1]}"
    if version >= TENSORFLOW_WHEELS_BELOW:
        below = ".".join(map(str, TENSORFLOW_WHEELS_BELOW))
        return (
            f"needs TensorFlow: the test extra installs tensorflow-cpu only below Python {below} "
            f"(no wheel for {release} yet)"
        )
    return f"needs TensorFlow, which is not installed for Python {release} (pip install -e '.[test]')"
