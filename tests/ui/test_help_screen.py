"""`?` opens at the current tab's keys, then the rest (issue 30 item 4), and says how to get the keyboard back
in JupyterLab's terminal after a double Esc (item 3)."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.help_screen import HelpScreen, current_first

TABS = [
    ("1", "Environment", "Re-run checks"),
    ("2", "Monitor", "Kill process"),
    ("3", "Training", "Open log"),
]
TABS.append(("4", "Batch probe", "Start probe"))


def test_current_first_moves_the_tab_and_its_widgets_to_the_top() -> None:
    sections = [("Everywhere", []), ("Monitor", []), ("Monitor: the processes", []), ("Training", [])]
    assert [title for title, _ in current_first(sections, "Training")] == [
        "Training",
        "Everywhere",
        "Monitor",
        "Monitor: the processes",
    ]
    assert [title for title, _ in current_first(sections, "Monitor")][:2] == [
        "Monitor",
        "Monitor: the processes",
    ]
    assert current_first(sections, None) == sections


@pytest.mark.parametrize(("key", "title", "first_key"), TABS, ids=[title for _, title, _ in TABS])
async def test_help_opens_at_the_current_tabs_keys_at_80x24(key: str, title: str, first_key: str) -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key)
        await pilot.pause()
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        screen = app.screen
        assert screen.sections[0][0] == title
        first = screen.query(".help-section").first(Static)
        await wait_until(pilot, lambda: first.region.height > 0)
        text = str(first.render())
        assert text.startswith(title) and first_key in text
        assert first.region.y + first.region.height <= 24, "the tab's keys are not on the first screen"
        assert title in str(screen.query_one("#help-title", Static).render())
        last = str(screen.query(".help-section").last(Static).render())
        assert "JupyterLab" in last and "Enter or click" in last


@pytest.mark.parametrize(
    ("settings", "offered"),
    [
        (Settings(demo=True), True),
        (Settings(demo=True, readonly=True), False),
        (Settings(demo=True, least_privilege=True), False),
        (Settings(demo=True, least_privilege=True, allow_kill=True), True),
    ],
    ids=["may-signal", "readonly", "least-privilege", "allow-kill"],
)
def test_help_lists_k_only_where_this_session_may_send_signals(settings: Settings, offered: bool) -> None:
    sections = TfgpuApp(settings).help_sections()
    actions = {getattr(binding, "action", "") for _, bindings in sections for binding in bindings}
    assert ("kill" in actions) is offered and "explain" in actions
