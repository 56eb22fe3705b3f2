"""Where the tests' files are: the repository, the tests folder, the fixtures, the helpers."""

from __future__ import annotations

import os
from pathlib import Path

HELPERS = Path(__file__).resolve().parent
TESTS = HELPERS.parent
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
# The scripted NVML beside the repository (../shared/fakenvml), or where TFGPU_FAKENVML_DIR points.
FAKENVML_DIR = Path(os.environ.get("TFGPU_FAKENVML_DIR", ROOT.parent / "shared" / "fakenvml"))
