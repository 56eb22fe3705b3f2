"""docs/ lists exactly what the code has: environment checks (ids, order, titles) and alert kinds."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tfgpu_tui.env.check_base import Check
from tfgpu_tui.env.checks import CHECKS

DOCS = Path(__file__).resolve().parent.parent / "docs"
PACKAGE = Path(__file__).resolve().parent.parent / "tfgpu_tui"
TABLE_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+?) \| ([^|]+?) \|$")


def _check_rows() -> list[tuple[str, str, str]]:
    """(id, title, needs) of each row of the table under '## Checks' in docs/environment-checks.md."""
    text = (DOCS / "environment-checks.md").read_text(encoding="utf-8")
    section = text.split("\n## Checks\n", 1)[1].split("\n## ", 1)[0]
    return [match.groups() for line in section.splitlines() if (match := TABLE_ROW.match(line))]


def _needs(item: Check) -> str:
    if item.needs_tensorflow:
        return "TensorFlow"
    return "probe" if item.needs_probe else "facts"


def test_environment_check_table_is_the_registry() -> None:
    documented = _check_rows()
    assert [row[0] for row in documented] == [item.id for item in CHECKS]
    assert documented == [(item.id, item.title, _needs(item)) for item in CHECKS]


def test_every_environment_check_has_its_section() -> None:
    text = (DOCS / "environment-checks.md").read_text(encoding="utf-8")
    sections = re.findall(r"^### `([^`]+)`$", text, flags=re.MULTILINE)
    assert sections == [item.id for item in CHECKS]


def _alert_kinds_raised_by(*modules: str) -> set[str]:
    """Every literal first argument of an `Alert(...)` call in the given source files."""
    kinds: set[str] = set()
    for module in modules:
        tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Alert"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                kinds.add(node.args[0].value)
    return kinds


def test_gpu_alert_table_lists_exactly_the_kinds_the_monitor_raises() -> None:
    text = (DOCS / "gpu-monitor.md").read_text(encoding="utf-8")
    section = text.split("### Alerts", 1)[1].split("\n### ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)`", section, flags=re.MULTILINE))
    raised = _alert_kinds_raised_by("gpu/alert_rules.py", "gpu/sampler.py")
    assert raised, "no Alert(...) calls found: the scan is broken"
    assert documented == raised
