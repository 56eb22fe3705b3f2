"""docs/ and the README list exactly what the code has: environment checks (ids, order, titles), alert kinds,
and every option of every command."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT
from tfgpu_tui.cli import main
from tfgpu_tui.commands import COMMAND_MODULES
from tfgpu_tui.env.check_base import Check
from tfgpu_tui.env.checks import CHECKS

DOCS = ROOT / "docs"
README = DOCS.parent / "README.md"
PACKAGE = ROOT / "tfgpu_tui"
TABLE_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+?) \| ([^|]+?) \|$")


def _check_rows() -> list[tuple[str, str, str]]:
    """(id, title, needs) of each row of the table under '## Checks' in docs/environment-checks.md."""
    text = (DOCS / "environment-checks.md").read_text(encoding="utf-8")
    section = text.split("\n## Checks\n", 1)[1].split("\n## ", 1)[0]
    return [match.groups() for line in section.splitlines() if (match := TABLE_ROW.match(line))]


def _needs(item: Check) -> str:
    if item.needs_tensorflow:
        return "TensorFlow"
    return "inspection" if item.needs_inspection else "facts"


def test_environment_check_table_is_the_registry() -> None:
    documented = _check_rows()
    assert [row[0] for row in documented] == [item.id for item in CHECKS]
    assert documented == [(item.id, item.title, _needs(item)) for item in CHECKS]


def test_every_environment_check_has_its_section() -> None:
    text = (DOCS / "environment-checks.md").read_text(encoding="utf-8")
    sections = re.findall(r"^### `([^`]+)`$", text, flags=re.MULTILINE)
    assert sections == [item.id for item in CHECKS]


def _alert_calls(source: Path) -> list[ast.Call]:
    """Every `Alert(...)` call in a source file."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Alert"
    ]


def test_gpu_alert_table_lists_exactly_the_kinds_the_monitor_raises() -> None:
    from tfgpu_tui.alerts import MONITOR_ALERT_KINDS

    text = (DOCS / "gpu-monitor.md").read_text(encoding="utf-8")
    section = text.split("### Alerts", 1)[1].split("\n### ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)`", section, flags=re.MULTILINE))
    assert documented == {kind.value for kind in MONITOR_ALERT_KINDS}


def test_every_alert_names_its_kind_from_the_enum_or_a_family() -> None:
    """No alert kind is a bare string: an AlertKind member, or a family's id (``training_...``,
    ``env_...``), or a kind decoded from another host's series (fleet/decode.py)."""
    calls = [(path, call) for path in PACKAGE.rglob("*.py") for call in _alert_calls(path)]
    assert len(calls) > 10, "the scan is broken"
    for path, call in calls:
        kind = call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "kind")
        assert not isinstance(kind, ast.Constant), f"{path}: Alert({ast.unparse(kind)}, ...)"
        text = ast.unparse(kind)
        assert text.startswith("AlertKind") or isinstance(kind, (ast.JoinedStr, ast.Name)), f"{path}: {text}"


def _help(command: str) -> str:
    """What `tfgpu-tui [COMMAND] --help` prints ("" for the dashboard's)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([command, "--help"] if command else ["--help"])
    return out.getvalue()


def _option_names(help_text: str) -> set[str]:
    """The options a --help lists, from the lines that introduce them."""
    return set(re.findall(r"^  (?:-\w, )?(--[a-z][a-z0-9-]*)", help_text, flags=re.MULTILINE))


def _helps() -> dict[str, str]:
    """The dashboard's --help (key "") and each subcommand's, by name."""
    return {"": _help(""), **{name: _help(name) for name in COMMAND_MODULES}}


def _readme_command_rows() -> dict[str, set[str]]:
    """The options each row of the README's Commands table names, by command ("" for the dashboard,
    "help" for the `--help`, `--version` row)."""
    section = README.read_text(encoding="utf-8").split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cell = re.split(r"(?<!\\)\|", line)[1].strip() if line.startswith("| `tfgpu-tui") else ""
        if not cell:
            continue
        word = re.match(r"`tfgpu-tui (\S+)", cell)
        name = word.group(1).strip("`,") if word else ""
        name = name if name in COMMAND_MODULES else "help" if name.startswith("--help") else ""
        assert name not in rows, f"two README rows for {name or 'the dashboard'}"
        rows[name] = set(re.findall(r"--[a-z][a-z0-9-]*", cell))
    return rows


def test_readme_commands_table_names_every_option_of_every_command() -> None:
    """--help and the README said different things (serve's row lacked the dashboard options it accepts)."""
    rows = _readme_command_rows()
    helps = _helps()
    assert set(rows) == {*helps, "help"}
    assert rows.pop("help") == {"--help", "--version"}
    for name, documented in rows.items():
        options = _option_names(helps[name]) - {"--help", "--version"}
        assert documented == options, (
            f"tfgpu-tui {name}: README lacks {sorted(options - documented)}, "
            f"names what it does not take {sorted(documented - options)}"
        )


@pytest.mark.parametrize("command", ["", "serve"])
def test_help_tells_the_true_defaults(command: str) -> None:
    """`--help` said --python defaults to "the one running tfgpu-tui" (the Environment tab picks a running
    job's, then $VIRTUAL_ENV's...) and gave --log no default."""
    text = " ".join(_help(command).split())
    assert "your own running TensorFlow job's, else the activated $VIRTUAL_ENV's or $CONDA_PREFIX's" in text
    assert "training log to follow (default: train.log in the current directory" in text


def test_check_exit_statuses_are_documented_as_the_code_returns_them() -> None:
    from tfgpu_tui.exit_status import EXIT_CHECK_FAILED, EXIT_CHECK_WARNINGS, EXIT_USAGE

    readme = README.read_text(encoding="utf-8")
    expected = (
        f"exit 0 ok, {EXIT_CHECK_WARNINGS} warnings, {EXIT_CHECK_FAILED} a failed check, {EXIT_USAGE} a bad"
    )
    assert expected in readme
    environment = " ".join((DOCS / "environment.md").read_text(encoding="utf-8").split())
    assert f"`{EXIT_CHECK_FAILED}` a failed check; `{EXIT_USAGE}` is a bad command line only" in environment


LINK = re.compile(r"\]\(([\w./-]*\.md)?#([\w-]+)\)")


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors for the headings of a Markdown text: lower case, punctuation dropped, spaces -> -."""
    anchors = set()
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_every_anchor_a_page_links_to_exists() -> None:
    """docs/batch-probe.md linked to environment.md#which-python, which no heading makes."""
    broken = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for target, anchor in LINK.findall(page.read_text(encoding="utf-8")):
            linked = page.parent / target if target else page
            if not linked.exists() or anchor not in heading_anchors(linked.read_text(encoding="utf-8")):
                broken.append(f"{page.name}: {target}#{anchor}")
    assert not broken, broken
