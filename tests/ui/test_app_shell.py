"""The app shell: tabs, header, help screen, quitting."""

from __future__ import annotations

from textual.command import CommandList

from tests.helpers.tab_ready import settled
from tests.helpers.waiting import wait_until
from tfgpu_tui.alerts import Alert, Severity, most_urgent
from tfgpu_tui.notify.status import status_path, write_status
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.header import StatusHeader
from tfgpu_tui.ui.help_screen import HelpScreen
from tfgpu_tui.ui.messages import AlertsChanged
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel
from tfgpu_tui.ui.widgets.process_table import ProcessTable
from tfgpu_tui.ui.widgets.tab_bar import TabBar


async def test_tabs_switch_with_number_keys() -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test() as pilot:
        assert app.active_tab == "monitor"
        for key, tab_id in (("1", "environment"), ("3", "training"), ("4", "probe"), ("2", "monitor")):
            await pilot.press(key)
            await wait_until(pilot, lambda tab=tab_id: app.active_tab == tab and app.focused is not None)
            shown = [tab.id for tab in app.query(DashboardTab) if tab.display]
            assert shown == [f"{tab_id}-tab"] and app.focused in app.query_one(f"#{tab_id}-tab").query("*")


async def test_the_shown_tabs_number_gives_its_table_back_the_focus() -> None:

    app = TfgpuApp(Settings(demo=True))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: isinstance(app.focused, ProcessTable))
        app.screen.set_focus(None)  # e.g. a click on the tab bar: the Monitor's keys would go nowhere
        await wait_until(pilot, lambda: app.focused is None)
        await pilot.press("2")
        await wait_until(pilot, lambda: isinstance(app.focused, ProcessTable))


async def test_the_shown_tabs_number_redraws_the_footer() -> None:
    """Textual's footer skips updates while the app is blurred (a web session in a background tab), so the
    focus may settle on the shown tab without its keys in the footer; pressing that tab's number, which
    changes no focus, redraws the footer."""

    app = TfgpuApp(Settings(demo=True))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: isinstance(app.focused, ProcessTable))
        await settled(pilot)  # the redraws that focus scheduled have run
        redraws: list[object] = []
        app.screen.bindings_updated_signal.subscribe(app.screen, redraws.append)
        await pilot.press("2")
        await wait_until(pilot, lambda: len(redraws) > 0)
        assert isinstance(app.focused, ProcessTable)


async def test_help_screen_opens_and_closes() -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test() as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_header_shows_most_urgent_alert_across_tabs() -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test() as pilot:
        lost = Alert("gpu_lost", Severity.CRITICAL, "GPU 7 fell off the bus", short="GPU lost: GPU 7")
        app.post_message(AlertsChanged("test-a", [Alert("x", Severity.INFO, "minor thing")]))
        app.post_message(AlertsChanged("test-b", [lost]))
        await pilot.pause()
        messages = [alert.message for alert in app.all_alerts]
        assert messages.index(lost.message) < messages.index("minor thing")
        header = app.query_one(StatusHeader)
        assert header.alert is most_urgent(app.all_alerts) is lost  # an action before advice, then severity
        rendered = str(header.render())
        assert "GPU lost: GPU 7" in rendered and "SIMULATED" in rendered
        assert f"(+{len(messages) - 1})" in rendered
        app.post_message(AlertsChanged("test-b", []))
        await pilot.pause()
        assert lost.message not in [alert.message for alert in app.all_alerts]


async def test_q_quits() -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test() as pilot:
        await pilot.press("q")
    assert app.return_code == 0


async def test_command_palette_switches_tab() -> None:

    app = TfgpuApp(Settings(demo=True))
    async with app.run_test() as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        for char in "Show Training":
            await pilot.press("space" if char == " " else char)
        commands = app.screen.query_one(CommandList)

        def highlighted() -> str:
            index = commands.highlighted
            return "" if index is None else str(commands.get_option_at_index(index).prompt)

        # the palette adds its search results in batches (every 0.25 s): wait for the hit, not a fixed 0.3 s
        await wait_until(pilot, lambda: highlighted().startswith("Show Training"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.active_tab == "training")


async def test_header_says_where_a_running_notify_sends(tmp_path, monkeypatch) -> None:

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    write_status(status_path(), ["ntfys", "slack"])  # this process plays the running notify
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test(size=(120, 24)) as pilot:
        header = app.query_one(StatusHeader)
        await wait_until(pilot, lambda: header.notify_line)  # the first snapshot reaches the header
        assert "notify → ntfys, slack" in str(header.render())


async def test_a_late_tab_activation_leaves_the_focus_where_a_key_put_it() -> None:
    """A click on the shown tab's title can be handled after a key (`a`) has moved the focus inside the tab;
    the focus stays where the key put it (in tmux, under load, it once went back to the process table)."""

    app = TfgpuApp(Settings(demo=True))
    async with app.run_test() as pilot:
        panel = app.query_one(AlertsPanel)
        await wait_until(pilot, lambda: bool(panel.ordered) and isinstance(app.focused, ProcessTable))
        await pilot.press("a")
        assert app.focused is panel
        bar = app.query_one(TabBar)
        assert app.active_tab == "monitor"
        bar.post_message(TabBar.Chosen("monitor"))
        await pilot.pause()  # the choice is handled; what it defers to after a refresh runs first
        handled: list[bool] = []
        app.call_after_refresh(handled.append, True)
        await wait_until(pilot, lambda: bool(handled))
        await pilot.pause()  # a focus() takes effect one message later
        assert app.focused is panel


def test_the_tab_bar_knows_which_title_is_under_a_column() -> None:

    bar = TabBar([("environment", "Environment"), ("monitor", "Monitor")], "monitor")
    assert bar.spans() == [("environment", 0, 13), ("monitor", 13, 22)]  # each title with a cell each side
    under = [bar.tab_at(x) for x in (0, 12, 13, 21, 22, 80)]
    assert under == ["environment", "environment", "monitor", "monitor", None, None]


async def test_the_tab_bar_marks_the_shown_tab_and_a_click_on_a_title_shows_it() -> None:

    app = TfgpuApp(Settings(demo=True))
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.query_one(TabBar)
        titles, rule = str(bar.render()).split("\n")
        assert titles == " Environment  Monitor  Training  Batch probe " and rule == "━" * 80
        await wait_until(pilot, lambda: app.focused is not None)
        await pilot.press("3")
        await wait_until(pilot, lambda: bar.active == "training")
        start = next(start for tab_id, start, _end in bar.spans() if tab_id == "environment")
        await pilot.click(TabBar, offset=(start, 1))  # on the rule under the title
        await wait_until(pilot, lambda: app.active_tab == "environment" and bar.active == "environment")
