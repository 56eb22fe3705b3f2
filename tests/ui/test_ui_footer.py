"""The footer fits its line (widgets/key_footer.py): at 80 columns the keys a user needs first (`k`, `a`, `?`
on the Monitor) are on screen, descriptions shorten before keys go, `?` never goes; a click presses a key."""

from __future__ import annotations

from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.help_screen import HelpScreen
from tfgpu_tui.ui.widgets.key_footer import FooterKey, KeyFooter, fit_keys

MONITOR = [
    FooterKey("k", "k", "Kill process"),
    FooterKey("s", "s", "Sort by next"),
    FooterKey("r", "r", "Reverse sort"),
    FooterKey("c", "c", "Compact GPUs"),
    FooterKey("a", "a", "Alerts"),
    FooterKey("l", "l", "Open its log"),
    FooterKey("e", "e", "Explain alert"),
    FooterKey("q", "q", "Quit", app_wide=True),
    FooterKey("question_mark", "?", "Help", app_wide=True, keep=True),
]
PALETTE = FooterKey("ctrl+p", "^p", "palette", app_wide=True)


def line_of(shown: list[tuple[FooterKey, str]]) -> str:
    return " " + "  ".join(f"{key.display} {label}" for key, label in shown)


def test_wide_enough_everything_shows_in_full() -> None:
    shown, palette = fit_keys(MONITOR, 200, PALETTE)
    assert palette and [label for _, label in shown] == [key.description for key in MONITOR]


def test_at_80_columns_descriptions_shorten_and_k_a_and_help_stay() -> None:
    shown, palette = fit_keys(MONITOR, 80, PALETTE)
    assert len(line_of(shown)) <= 80 and not palette
    displays = [key.display for key, _ in shown]
    assert {"k", "a", "?"} <= set(displays)
    assert displays == [key.display for key in MONITOR if key.display in displays], "the order is kept"
    assert ("k", "Kill") in [(key.display, label) for key, label in shown]


def test_descriptions_shorten_from_the_last_key_first() -> None:
    shown, _ = fit_keys(MONITOR, 112, PALETTE)
    labels = dict((key.display, label) for key, label in shown)
    assert len(line_of(shown)) <= 112
    assert labels["k"] == "Kill process" and labels["e"] == "Explain"


def test_help_is_never_left_out() -> None:
    for width in (10, 30, 50):
        shown, _ = fit_keys(MONITOR, width, PALETTE)
        assert "?" in [key.display for key, _ in shown]
        assert shown[0][0].display == "?" or len(line_of(shown)) <= width


async def test_the_monitors_footer_at_80x24_shows_k_a_and_help_and_a_click_presses_one() -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test(size=(80, 24)) as pilot:
        footer = app.query_one(KeyFooter)
        await wait_until(pilot, lambda: "k Kill" in str(footer.render()), timeout=60)
        text = str(footer.render())
        assert len(text.rstrip()) <= 80
        for wanted in ("k Kill", "a Alerts", "? Help"):
            assert wanted in text, text
        await pilot.click(KeyFooter, offset=(text.index("? Help") + 1, 0))
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
