"""No flow needs two Esc presses in a row (issue 30 item 3): JupyterLab's terminal takes two Esc presses
within ~350 ms as "leave the terminal", so every screen, input and panel that Esc closes must close with one,
leaving the tab's own keys working at once."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from textual.command import CommandPalette
from textual.widgets import Input

from tests.helpers.waiting import wait_until
from tfgpu_tui.env.targets import Candidate
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.help_screen import HelpScreen
from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill
from tfgpu_tui.ui.widgets.process_table import ProcessTable
from tfgpu_tui.ui.widgets.target_picker import TargetPicker


def on_screen(kind: type) -> Callable[[TfgpuApp], bool]:
    return lambda app: isinstance(app.screen, kind)


def training_part_open(selector: str) -> Callable[[TfgpuApp], bool]:
    return lambda app: app.query_one(selector).has_class("-open")


def open_picker(app: TfgpuApp) -> None:
    app.push_screen(TargetPicker([Candidate(sys.executable, "this Python")], sys.executable))


# (tab, keys that open the flow, what is open while it is)
FLOWS = [
    ("monitor", ["question_mark"], on_screen(HelpScreen)),
    ("monitor", ["ctrl+p"], on_screen(CommandPalette)),
    ("monitor", ["ctrl+p", "h", "e", "l"], on_screen(CommandPalette)),  # with text typed in its search
    ("environment", [open_picker], on_screen(TargetPicker)),  # --demo's p lists nothing: opened directly
    ("environment", [open_picker, "tab", "x"], on_screen(TargetPicker)),  # a path being typed
    ("training", ["o"], training_part_open("#training-path")),
    ("training", ["p"], training_part_open("#training-pick")),
    ("monitor", ["k"], on_screen(ConfirmKill)),
    ("monitor", ["a"], lambda app: not isinstance(app.focused, ProcessTable)),
]


@pytest.mark.parametrize(
    ("tab", "keys", "is_open"),
    FLOWS,
    ids=[" ".join(str(getattr(key, "__name__", key)) for key in keys) for _, keys, _ in FLOWS],
)
async def test_one_escape_closes_it(tab: str, keys: list, is_open: Callable[[TfgpuApp], bool]) -> None:
    app = TfgpuApp(Settings(demo=True), initial_tab=tab)
    async with app.run_test(size=(100, 30)) as pilot:
        if tab == "monitor":
            await wait_until(pilot, lambda: app.query_one(ProcessTable).rows_shown, timeout=60)
        await pilot.pause()
        base_screen = app.screen
        for key in keys:
            if callable(key):
                key(app)
            else:
                await pilot.press(key)
        await wait_until(pilot, lambda: is_open(app), timeout=60)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not is_open(app) and app.screen is base_screen, timeout=60)
        # Nothing is left holding the keys: no input keeps focus, and the tab's own key works at once.
        assert not isinstance(app.focused, Input), app.focused
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), timeout=60)
