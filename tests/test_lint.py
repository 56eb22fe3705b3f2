"""The tree is ruff clean: `ruff check` and `ruff format --check` under the settings in pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUFF = shutil.which("ruff")


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed (the test extra installs it)")
@pytest.mark.parametrize("arguments", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(arguments: list[str]) -> None:
    result = subprocess.run(
        [str(RUFF), *arguments, "."], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
