"""Every key the help screen lists exists, and does something on its tab (pilot)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Input, Static

from tests.helpers.monitor_helpers import CPU_JOB, KERNEL, record_notifications, select_pid, wait_for_table
from tests.helpers.paths import ROOT
from tests.helpers.waiting import wait_until
from tfgpu_tui.probe import simulated
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TAB_CLASSES, TfgpuApp
from tfgpu_tui.ui.batch_probe import BatchProbeTab
from tfgpu_tui.ui.environment import EnvironmentTab
from tfgpu_tui.ui.help_screen import HelpScreen, binding_rows, described_bindings
from tfgpu_tui.ui.monitor import MonitorTab
from tfgpu_tui.ui.training import TrainingTab
from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill

README = ROOT / "README.md"
README_WHERE = {"everywhere": "Everywhere"}  # the Keys table's "where" column -> the help's section title
NOT_IN_BINDINGS = {"Tab"}  # Textual's own focus key, which moves between the kill dialog's buttons


def readme_keys() -> dict[str, set[str]]:
    """Section -> every key the README's Keys table names in backticks (`1`, `↑`, `Home`, `ctrl+r` ...)."""
    text = README.read_text(encoding="utf-8").split("## Keys", 1)[1].split("\n## ", 1)[0]
    keys: dict[str, set[str]] = {}
    where = ""
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not line.startswith("|") or set(cells[0]) <= {"-"} and cells[0]:
            continue
        if cells[0] == "where":
            continue
        where = README_WHERE.get(cells[0], cells[0]) or where
        quoted = re.findall(r"`([^`]+)`", " ".join(cells[1:]))  # keys, also in the action column (`esc` back)
        keys.setdefault(where, set()).update(key for key in quoted if " " not in key)  # not `batch_size = N`
    return keys


def help_keys(sections: list[tuple[str, list]]) -> dict[str, set[str]]:
    """Section (a tab with its widgets) -> every key the help screen lists there."""
    keys: dict[str, set[str]] = {}
    for title, bindings in sections:
        for label, _ in binding_rows(bindings):
            keys.setdefault(title.split(":")[0], set()).update(part.strip() for part in label.split(","))
    return keys


def test_the_help_lists_every_key_of_the_readmes_keys_table() -> None:
    """The help and the README's Keys table describe the same keys: navigation ones included."""
    listed = help_keys(TfgpuApp(Settings(prometheus_url="http://p:9090")).help_sections())
    wanted = readme_keys()
    assert {"Everywhere", "Environment", "Monitor", "Training", "Batch probe", "Hosts"} <= set(wanted)
    for where, keys in wanted.items():
        missing = {key for key in keys - NOT_IN_BINDINGS if key not in listed.get(where, set())}
        assert not missing, f"{where}: the README names {sorted(missing)}, the help does not"
    for key in ("←", "→", "g", "G", "Home", "End", "PgUp", "PgDn", "esc"):
        assert key in listed["Monitor"], key


def test_the_palette_names_each_actions_key_and_what_it_does() -> None:
    from tfgpu_tui.ui.app import tab_actions

    helps = []
    for tab in TAB_CLASSES:
        for _, description, help_text in tab_actions(tab):
            assert help_text.startswith("key ") and "Runs on the" not in help_text, (description, help_text)
            helps.append(help_text)
    assert len(set(helps)) == len(helps), "no two entries say the same"
    monitor = dict((description, text) for _, description, text in tab_actions(MonitorTab))
    assert monitor["Kill process"].startswith("key k: ")


@pytest.mark.parametrize("owner", [TfgpuApp, *TAB_CLASSES], ids=lambda owner: owner.__name__)
def test_every_listed_binding_names_an_existing_action(owner: type) -> None:
    listed = binding_rows(list(owner.BINDINGS))
    assert listed, f"{owner.__name__} lists no keys"
    for binding in described_bindings(list(owner.BINDINGS)):
        action = binding.action.split("(")[0]
        assert callable(getattr(owner, f"action_{action}", None)), binding


async def test_help_screen_lists_every_tab_with_its_keys() -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("question_mark")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        titles = [title for title, _ in screen.sections if ":" not in title]  # tabs, then their widgets
        others = [
            title
            for title in ["Everywhere"] + [tab.TAB_TITLE for tab in TAB_CLASSES]
            if title not in titles[:1]
        ]
        assert titles == [screen.current, *others]  # the current tab first (tests/test_help_screen.py)
        console = Console(width=120, record=True, file=io.StringIO())
        for static in screen.query(Static):
            console.print(static.content)
        shown = console.export_text()
        for tab in TAB_CLASSES:
            for _, description in binding_rows(list(tab.BINDINGS)):
                assert description in shown


async def test_monitor_keys() -> None:
    app = TfgpuApp(Settings(demo=True, interval=0.25))
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(MonitorTab)
        await wait_for_table(pilot)
        sort_before = tab.sort_by
        await pilot.press("s")
        assert tab.sort_by != sort_before
        reverse_before = tab.sort_reverse
        await pilot.press("r")
        assert tab.sort_reverse != reverse_before
        await select_pid(pilot, KERNEL)
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmKill))
        await select_pid(pilot, KERNEL)
        shown = record_notifications(app)
        await pilot.press("l")  # demo processes are simulated: a clear notice, no tab switch
        await pilot.pause()
        assert any("simulated" in message for _, message in shown)
        await select_pid(pilot, CPU_JOB)
        await pilot.press("e")
        await wait_until(pilot, lambda: app.active_tab == "environment")


async def test_environment_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=60)
        generation = tab.generation
        await pilot.press("r")
        assert tab.generation == generation + 1
        await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=60)
        await pilot.press("s")
        await wait_until(pilot, lambda: list(tmp_path.glob("*.md")))
        linked = next(i for i, finding in enumerate(tab.report.findings) if finding.link_tab)
        tab.query_one("#env-findings").move_cursor(row=linked)
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.active_tab != "environment")


async def test_training_keys(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("Epoch 1/2\n")
    app = TfgpuApp(Settings(log_path=log, log_path_given=True), initial_tab="training")
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(TrainingTab)
        await pilot.pause()
        await pilot.press("o")
        field = tab.query_one("#training-path", Input)
        await wait_until(pilot, lambda: field.has_focus)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not field.has_class("-open"))
        await pilot.press("p")
        assert tab.query_one("#training-pick").has_class("-open")
        await pilot.press("escape")
        log.write_text("Epoch 1/3\n")
        await pilot.press("r")
        await wait_until(
            pilot, lambda: tab.run is not None and "1/3" in str(tab.query_one("#training-status").render())
        )


async def test_probe_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simulated, "TRIAL_SECONDS", 0.0)  # the demo's trials: at once, then (below) endless
    app = TfgpuApp(Settings(demo=True), initial_tab="probe")
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(BatchProbeTab)
        await pilot.pause()
        app.query_one("#probe-budget", Input).value = "100"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: tab.result is not None, timeout=60)
        shown = record_notifications(app)
        await pilot.press("c")
        assert any("batch_size =" in message for _, message in shown)
        monkeypatch.setattr(simulated, "TRIAL_SECONDS", 3600.0)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: tab.runner is not None)
        await pilot.press("escape")
        await wait_until(pilot, lambda: tab.runner is None, timeout=60)
