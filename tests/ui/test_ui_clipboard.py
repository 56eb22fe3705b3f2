"""Copy tells the truth (issue 30 item 2): the message says what was done; in a terminal known to ignore
OSC 52 (Jupyter's) it says so and shows the text alone on its rows for the terminal's own selection."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from tests.helpers.monitor_helpers import record_notifications
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.batch_probe import BatchProbeTab
from tfgpu_tui.ui.clipboard import (
    JUPYTER_TERMINAL_VARIABLES,
    MULTIPLEXER_VARIABLES,
    CopyTextScreen,
    selectable_rows,
    terminal_ignoring_osc52,
)

BOX_CHARACTERS = set("│┃▌▐╭╮╰╯─━┌┐└┘")


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"PYXTERM_DIMENSIONS": "80x24", "JUPYTER_SERVER_ROOT": "/home/u"}, "Jupyter's terminal"),
        ({"JUPYTER_SERVER_URL": "http://127.0.0.1:8888/"}, "Jupyter's terminal"),
        ({"PYXTERM_DIMENSIONS": "80x24", "TMUX": "/tmp/tmux-0/default,1,0"}, None),
        ({"TERM": "xterm-256color", "JPY_PARENT_PID": "12"}, None),  # a kernel's child, not a terminal
        ({}, None),
    ],
)
def test_which_terminals_are_known_to_ignore_osc52(environ: dict[str, str], expected: str | None) -> None:
    assert terminal_ignoring_osc52(environ) == expected


def test_selectable_rows_break_only_at_spaces_and_keep_every_character() -> None:
    text = 'pip install "tensorflow[and-cuda]==2.18.*" nvidia-cudnn-cu12==9.3.0.75 --upgrade-strategy eager'
    rows = selectable_rows(text, 40)
    assert len(rows) > 1 and all(len(row) <= 40 for row in rows)
    assert " ".join(rows) == text
    assert selectable_rows("one\ntwo", 80) == ["one", "two"]


def jupyter_terminal(monkeypatch: pytest.MonkeyPatch, inside: bool) -> None:
    for name in (*JUPYTER_TERMINAL_VARIABLES, *MULTIPLEXER_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    if inside:
        monkeypatch.setenv("PYXTERM_DIMENSIONS", "80x24")


async def probe_result(app: TfgpuApp, pilot) -> BatchProbeTab:
    tab = app.query_one(BatchProbeTab)
    await wait_until(pilot, lambda: app.focused is not None and app.focused.id == "probe-start")
    await pilot.press("ctrl+r")
    await wait_until(pilot, lambda: tab.result is not None and not tab.running, timeout=60)
    return tab


@pytest.mark.usefixtures("quick_simulated_trials")
async def test_in_jupyters_terminal_c_says_nothing_was_copied_and_shows_the_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jupyter_terminal(monkeypatch, inside=True)
    app = TfgpuApp(Settings(demo=True), initial_tab="probe")
    async with app.run_test(size=(80, 24)) as pilot:
        tab = await probe_result(app, pilot)
        shown = record_notifications(app)
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CopyTextScreen))
        assert app.clipboard == tab.result.snippet  # still asked for: a terminal may have an addon
        title = str(app.screen.query_one("#copy-title", Static).render())
        assert "Jupyter's terminal ignores" in title and "nothing was copied" in title
        assert "shift+drag" in str(app.screen.query_one("#copy-how", Static).render())
        # The text alone on its rows, from the first column, no box character inside it.
        text = app.screen.query_one("#copy-text", Static)
        assert text.region.x == 0
        assert str(text.render()).splitlines() == [tab.result.snippet]
        assert not BOX_CHARACTERS & set(str(text.render()))
        assert shown == []
        # One Esc goes back to the tab.
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, CopyTextScreen))
        assert app.query_one(BatchProbeTab) is tab


@pytest.mark.usefixtures("quick_simulated_trials")
async def test_elsewhere_c_says_it_was_sent_not_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    jupyter_terminal(monkeypatch, inside=False)
    app = TfgpuApp(Settings(demo=True), initial_tab="probe")
    async with app.run_test(size=(80, 24)) as pilot:
        tab = await probe_result(app, pilot)
        shown = record_notifications(app)
        await pilot.press("c")
        await wait_until(pilot, lambda: shown)
        assert app.clipboard == tab.result.snippet
        title, message = shown[-1]
        assert title == "Snippet sent to the terminal's clipboard (OSC 52)" and message == tab.result.snippet
        assert not isinstance(app.screen, CopyTextScreen)
