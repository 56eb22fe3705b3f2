"""prometheus/tfgpu-alerts.yml passes its promtool unit tests: each rule fires, and its near miss does not."""

import shutil
import subprocess

import pytest

from tests.helpers.paths import ROOT

pytestmark = pytest.mark.e2e  # real child processes

RULES_DIR = ROOT / "prometheus"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed (Debian: prometheus)")
def test_alert_rules_pass_promtool_unit_tests() -> None:
    result = subprocess.run(
        ["promtool", "test", "rules", "tfgpu-alerts.test.yml"],
        cwd=RULES_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
