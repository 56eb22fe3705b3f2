"""Every key the help screen lists exists, and does something on its tab (pilot)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from monitor_helpers import CPU_JOB, KERNEL, record_notifications, select_pid, wait_for_table
from rich.console import Console
from textual.widgets import Input, Static, TabbedContent
from waiting import wait_until

from tfgpu_tui.probe import trial_runner as runner
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TAB_CLASSES, TfgpuApp
from tfgpu_tui.ui.batch_probe import BatchProbeTab
from tfgpu_tui.ui.environment import EnvironmentTab
from tfgpu_tui.ui.help_screen import HelpScreen, binding_rows, described_bindings
from tfgpu_tui.ui.monitor import MonitorTab
from tfgpu_tui.ui.training import TrainingTab
from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill

FAKE_WORKER = Path(__file__).parent / "fixtures" / "probe" / "fake_worker.py"


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
        titles = [title for title, _ in screen.sections]
        assert titles == ["Everywhere"] + [tab.TAB_TITLE for tab in TAB_CLASSES]
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
        await wait_until(pilot, lambda: app.query_one(TabbedContent).active == "environment")


async def test_environment_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = TfgpuApp(Settings(demo=True), initial_tab="environment")
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(EnvironmentTab)
        await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=15)
        generation = tab.generation
        await pilot.press("r")
        assert tab.generation == generation + 1
        await wait_until(pilot, lambda: tab.report is not None and tab.report.complete, timeout=15)
        await pilot.press("s")
        await wait_until(pilot, lambda: list(tmp_path.glob("*.md")))
        linked = next(i for i, finding in enumerate(tab.report.findings) if finding.link_tab)
        tab.query_one("#env-findings").move_cursor(row=linked)
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.query_one(TabbedContent).active != "environment")


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
    monkeypatch.setattr(runner, "WORKER_SCRIPT", FAKE_WORKER)
    monkeypatch.setenv("FAKE_PROBE_MODE", "linear")
    app = TfgpuApp(Settings(demo=True), initial_tab="probe")
    async with app.run_test(size=(160, 50)) as pilot:
        tab = app.query_one(BatchProbeTab)
        await pilot.pause()
        app.query_one("#probe-budget", Input).value = "100"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: tab.result is not None, timeout=20)
        shown = record_notifications(app)
        await pilot.press("c")
        assert any("batch_size =" in message for _, message in shown)
        monkeypatch.setenv("FAKE_PROBE_MODE", "hang")
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: tab.runner is not None)
        await pilot.press("escape")
        await wait_until(pilot, lambda: tab.runner is None, timeout=20)
