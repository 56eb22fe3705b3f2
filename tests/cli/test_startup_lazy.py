"""Start-up imports and builds only what the first frame needs; the rest comes on first use."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.helpers.waiting import wait_until
from tfgpu_tui.cli import build_parser
from tfgpu_tui.commands import COMMAND_MODULES
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TAB_SPECS, TfgpuApp
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.tab_bar import TabBar

pytestmark = pytest.mark.e2e  # real child processes

LATER = ("monitor", "environment", "training", "batch_probe", "hosts", "help_screen")


def modules_after(code: str) -> list[str]:
    """The tfgpu_tui and tensorflow modules a fresh interpreter has imported after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_app_module_imports_no_tab_and_no_command() -> None:
    loaded = modules_after("import tfgpu_tui.ui.app")
    assert "tfgpu_tui.ui.header" in loaded and "tfgpu_tui.gpu.feed" in loaded
    assert not [name for name in LATER if f"tfgpu_tui.ui.{name}" in loaded]
    assert not [name for name in loaded if name.startswith(("tfgpu_tui.commands.", "tensorflow"))]


@pytest.mark.parametrize(
    ("argv", "registered"),
    [
        ([], ()),
        (["--demo", "--log", "gpus"], ()),  # "gpus" is the value of --log here
        (["--interval", "2", "gpus", "--json"], ("gpus",)),
        (["serve", "--help"], ("serve",)),
        (["--help"], COMMAND_MODULES),
        (["bogus"], COMMAND_MODULES),  # argparse lists every command in its error
        (["--interval", "abc"], COMMAND_MODULES),
    ],
)
def test_only_the_named_command_is_registered(argv: list[str], registered: tuple[str, ...]) -> None:
    """The commands a parser has registered are the ones its --help lists, each on a line of its own."""
    listed = re.findall(r"^    ([a-z][a-z-]*) ", build_parser(argv).format_help(), flags=re.MULTILINE)
    assert tuple(listed) == registered


def test_the_dashboard_command_line_imports_no_command_module() -> None:
    loaded = modules_after(
        "from tfgpu_tui.cli import build_parser; build_parser(['--demo']).parse_args(['--demo'])"
    )
    assert not [name for name in loaded if name.startswith("tfgpu_tui.commands.")]


def test_tab_specs_name_the_tab_classes() -> None:
    for spec in TAB_SPECS:
        tab_class = spec.load()
        assert issubclass(tab_class, DashboardTab)
        assert (spec.tab_id, spec.title) == (tab_class.TAB_ID, tab_class.TAB_TITLE)


async def test_a_tab_is_built_when_first_shown(tmp_path) -> None:
    app = TfgpuApp(Settings(log_path=tmp_path / "absent.log", demo=True))
    async with app.run_test(size=(120, 40)) as pilot:
        built = {tab.id for tab in app.query(DashboardTab)}
        assert "monitor-tab" in built and not built & {"environment-tab", "probe-tab"}
        await wait_until(pilot, lambda: app.focused is not None)  # the Monitor has taken the focus
        await pilot.press("4")
        await wait_until(pilot, lambda: app.active_tab == "probe" and app.focused is not None)
        probe = app.query("#probe-tab")
        assert len(probe) == 1 and app.focused in probe.first().query("*")
        await pilot.press("2", "4")
        await wait_until(pilot, lambda: app.active_tab == "probe")
        assert len(app.query("#probe-tab")) == 1  # built once
        assert [tab.id for tab in app.query(DashboardTab) if tab.display] == ["probe-tab"]


async def test_a_click_on_a_tab_title_builds_and_focuses_it(tmp_path) -> None:
    app = TfgpuApp(Settings(log_path=tmp_path / "absent.log", demo=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.focused is not None)
        bar = app.query_one(TabBar)
        start = next(start for tab_id, start, _end in bar.spans() if tab_id == "probe")
        await pilot.click(TabBar, offset=(start + 2, 0))
        await wait_until(pilot, lambda: bool(app.query("#probe-tab")))
        probe = app.query_one("#probe-tab")
        await wait_until(pilot, lambda: app.focused in probe.query("*"))
        assert app.active_tab == "probe" and bar.active == "probe"
