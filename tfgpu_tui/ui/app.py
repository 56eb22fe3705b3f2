"""The Textual app: a status header, the tab bar and the tabs, a footer with the keys that matter.

The app owns the process's one SnapshotFeed (gpu/feed.py) and the kill path beside it: the header, the
app's alerts and the Monitor each subscribe to it. Start-up builds only what the first frame needs: the
initial tab and, when there is a log to follow, the Training tab (its problems reach the header from any
tab). Any other tab's module is imported and its content built the first time it is shown. The tabs are the
screen's children between the tab bar and the footer; the app shows one and hides the others.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import re
import signal
from collections.abc import Callable, Iterable
from functools import partial
from typing import NamedTuple

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import AwaitMount, Widget

from tfgpu_tui.alerts import Alert, AlertKind, most_urgent, ordered
from tfgpu_tui.gpu.feed import SnapshotFeed
from tfgpu_tui.gpu.kill_requests import KillRequests
from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.serve.policy import signal_refusal
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui import APP_STYLESHEET
from tfgpu_tui.ui.feed_link import FeedUpdated, subscribe
from tfgpu_tui.ui.header import StatusHeader
from tfgpu_tui.ui.interpreter import SharedInterpreter
from tfgpu_tui.ui.messages import AlertsChanged, OpenLog, ShowTab
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.alerts_panel import with_short_titles
from tfgpu_tui.ui.widgets.key_footer import KeyFooter
from tfgpu_tui.ui.widgets.tab_bar import TabBar


def _fleet_wanted(settings: Settings) -> bool:
    """Whether there is a Hosts tab; its module is imported only when a fleet source is set."""
    if not (settings.prometheus_url or settings.remote_hosts):
        return False
    from tfgpu_tui.ui.hosts import fleet_wanted

    return fleet_wanted(settings)


def _always(settings: Settings) -> bool:
    return True


def _load(path: str) -> type[Widget]:
    """A class named ``module:Class`` (imports its module)."""
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


class TabSpec(NamedTuple):
    """A tab the app can show, known without importing its module; `key_widgets` are the widgets inside it
    whose own keys the help lists, as (where, ``module:Class``)."""

    tab_id: str
    title: str
    module: str
    class_name: str
    present: Callable[[Settings], bool] = _always
    key_widgets: tuple[tuple[str, str], ...] = ()

    def load(self) -> type[DashboardTab]:
        """The tab's class (imports its module)."""
        return getattr(importlib.import_module(self.module), self.class_name)

    def help_sections(self) -> list[tuple[str, list[BindingType]]]:
        """(title, bindings) of the tab, then of each of its key widgets."""
        sections: list[tuple[str, list[BindingType]]] = [(self.title, list(self.load().BINDINGS))]
        for where, path in self.key_widgets:
            sections.append((f"{self.title}: {where}", list(_load(path).BINDINGS)))
        return sections


# What a closed terminal or browser tab (SIGHUP) and `kill` (SIGTERM) send (asyncio handles them on POSIX).
ENDING_SIGNALS = () if os.name == "nt" else (signal.SIGHUP, signal.SIGTERM)
WIDGETS = "tfgpu_tui.ui.widgets"
TAB_SPECS: tuple[TabSpec, ...] = (
    TabSpec(
        "environment",
        "Environment",
        "tfgpu_tui.ui.environment",
        "EnvironmentTab",
        key_widgets=(("the list of findings", "tfgpu_tui.ui.environment:FindingsTable"),),
    ),
    TabSpec(
        "monitor",
        "Monitor",
        "tfgpu_tui.ui.monitor",
        "MonitorTab",
        key_widgets=(
            ("the process list", f"{WIDGETS}.process_table:ProcessTable"),
            ("the alerts (a)", f"{WIDGETS}.alerts_panel:AlertsPanel"),
            ("the kill dialog (k)", f"{WIDGETS}.confirm_kill:ConfirmKill"),
        ),
    ),
    TabSpec("training", "Training", "tfgpu_tui.ui.training", "TrainingTab"),
    TabSpec("probe", "Batch probe", "tfgpu_tui.ui.batch_probe", "BatchProbeTab"),
    TabSpec(
        "hosts",
        "Hosts",
        "tfgpu_tui.ui.hosts",
        "HostsTab",
        _fleet_wanted,
        (("the list of hosts", f"{WIDGETS}.hosts_table:HostsTable"),),
    ),
)
SPECS_BY_ID = {spec.tab_id: spec for spec in TAB_SPECS}
CORE_TABS = TAB_SPECS[:4]  # always present; the Hosts tab only with a fleet source


def __getattr__(name: str) -> object:
    """`TAB_CLASSES`: the classes of the four core tabs, imported on first use."""
    if name == "TAB_CLASSES":
        return tuple(spec.load() for spec in CORE_TABS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Textual binds the command palette itself; this only describes that key for the help screen.
PALETTE_HELP = Binding("ctrl+p", "command_palette", "Command palette: switch tab, or any tab's action")


class TfgpuApp(App[None]):
    """tfgpu-tui's dashboard."""

    TITLE = "tfgpu-tui"
    CSS_PATH = APP_STYLESHEET
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("1", "show_tab('environment')", "Environment", show=False),
        Binding("2", "show_tab('monitor')", "Monitor", show=False),
        Binding("3", "show_tab('training')", "Training", show=False),
        Binding("4", "show_tab('probe')", "Batch probe", show=False),
        Binding("5", "show_tab('hosts')", "Hosts (with --prometheus or --remote)", show=False),
    ]

    def __init__(
        self,
        settings: Settings | None = None,
        initial_tab: str = "monitor",
        feed: SnapshotFeed | None = None,
    ) -> None:
        """`feed`: the one the dashboard's start made (ui/startup.py), else one is made; the app starts it
        once its first frame is drawn, so that sampling does not delay that frame, and closes it when it
        ends."""
        super().__init__()
        self.settings = settings or Settings()
        self.feed = feed or SnapshotFeed(self.settings)
        self.kills = KillRequests(self.feed)
        self.interpreter = SharedInterpreter(self, self.settings)  # the Python the tabs and the header use
        self.initial_tab = initial_tab
        self._alerts_by_source: dict[str, list[Alert]] = {}
        self._gpu_alerts: list[Alert] | None = None  # the latest snapshot's, to tell a change
        self._specs = [spec for spec in TAB_SPECS if spec.present(self.settings)]
        self._active = initial_tab
        self._tabs: dict[str, DashboardTab] = {}  # the tabs built so far, by id
        self._mounting: dict[str, AwaitMount] = {}  # tabs built after start-up, until they are mounted
        self._bar = TabBar([(spec.tab_id, spec.title) for spec in self._specs], initial_tab)
        self._footer = KeyFooter()

    @property
    def active_tab(self) -> str:
        """The id of the tab shown."""
        return self._active

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.feed)
        yield self._bar
        for spec in self._specs:
            if self._built_at_start(spec.tab_id):
                yield self._make_tab(spec)
        yield self._footer

    def _make_tab(self, spec: TabSpec) -> DashboardTab:
        """A tab's content, hidden unless it is the shown tab; the Monitor gets the feed and the kill path."""
        if spec.tab_id == "monitor":
            tab = spec.load()(self.settings, self.feed, self.kills)  # type: ignore[call-arg]
        else:
            tab = spec.load()(self.settings)
        tab.display = spec.tab_id == self._active
        self._tabs[spec.tab_id] = tab
        return tab

    def _built_at_start(self, tab_id: str) -> bool:
        """The initial tab, and the Training tab when it has a log to follow (its alerts reach the header
        from any tab)."""
        if tab_id == self.initial_tab:
            return True
        settings = self.settings
        return tab_id == "training" and (
            settings.demo or settings.log_path_given or settings.log_path.exists()
        )

    def _build_tab(self, tab_id: str) -> AwaitMount | None:
        """Mount the tab's content unless it is there; what to await until it is mounted (None: it is)."""
        if tab_id in self._mounting:
            return self._mounting[tab_id]
        if tab_id in self._tabs:
            return None
        footer = self._footer
        mounting = footer.screen.mount(self._make_tab(SPECS_BY_ID[tab_id]), before=footer)
        self._mounting[tab_id] = mounting
        return mounting

    async def tab(self, tab_id: str) -> DashboardTab:
        """The tab's content, built and mounted first if it has not been shown yet."""
        mounting = self._build_tab(tab_id)
        if mounting is not None:
            await mounting
            self._mounting.pop(tab_id, None)
        return self._tabs[tab_id]

    def on_mount(self) -> None:
        self.query_one(StatusHeader).simulated = self.settings.demo
        for warning in self.settings.config_warnings:
            self.notify(warning, title="Settings file", severity="warning", timeout=15)
        subscribe(self, self.feed)  # the GPU alerts, for the header on every tab
        if (latest := self.feed.latest) is not None:
            self._take_snapshot(latest)
        self.call_after_refresh(self.feed.start)
        # The shown tab's main widget, not the first focusable one that Textual may have focused: before the
        # first frame, so a key pressed once it shows reaches the tab.
        if (shown := self._tabs.get(self._active)) is not None:
            shown.focus_default()
        if not self.is_headless:  # a closed terminal (SIGHUP) or `kill` (SIGTERM) ends the app as `q` does
            loop = asyncio.get_running_loop()
            for ending in ENDING_SIGNALS:
                loop.add_signal_handler(ending, self._hung_up if ending == signal.SIGHUP else self.exit)

    def _hung_up(self) -> None:
        """The terminal is gone, so there is nothing to restore on it: remove what `q` would have removed,
        then end as a hang-up does. A graceful exit after a hang-up can block for good in Textual's output
        thread (its stop() waiting on a full queue), leaving a process behind."""
        for tab in self.query(DashboardTab):
            tab.release_files()
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGHUP)

    def on_unmount(self) -> None:
        """Stop sampling (the widgets are gone by now)."""
        self.feed.close()
        if not self.is_headless:
            for ending in ENDING_SIGNALS:
                asyncio.get_running_loop().remove_signal_handler(ending)

    def on_feed_updated(self, message: FeedUpdated) -> None:
        self._take_snapshot(message.update.snapshot)

    def _take_snapshot(self, snapshot: Snapshot) -> None:
        """Take the snapshot's alerts; one with the processes read also goes to the tabs (the Training tab's
        report card)."""
        self._take_gpu_alerts(snapshot)
        if not snapshot.processes_pending:
            for tab in self._tabs.values():
                tab.observe_gpus(snapshot)

    def _take_gpu_alerts(self, snapshot: Snapshot) -> None:
        """The snapshot's alerts, with short titles, become the GPU source's alerts when they change; the
        header says "no GPU to monitor" itself, so not that alert too."""
        if snapshot.alerts != self._gpu_alerts:
            self._gpu_alerts = list(snapshot.alerts)
            alerts = [alert for alert in snapshot.alerts if alert.kind != AlertKind.NO_GPU]
            self._set_alerts("monitor", with_short_titles(alerts, snapshot.processes))

    @property
    def all_alerts(self) -> list[Alert]:
        """Every tab's current alerts, most urgent first (an action before any advice)."""
        return ordered([alert for alerts in self._alerts_by_source.values() for alert in alerts])

    def on_alerts_changed(self, message: AlertsChanged) -> None:
        self._set_alerts(message.source, message.alerts)

    def _set_alerts(self, source: str, alerts: list[Alert]) -> None:
        """Replace one source's alerts and show the most urgent of all in the header."""
        self._alerts_by_source[source] = list(alerts)
        alerts = self.all_alerts
        header = self._header()
        if header is None:
            return
        header.alert = most_urgent(alerts)
        header.alert_count = len(alerts)

    def _header(self) -> StatusHeader | None:
        """The status header, or None while the app is shutting down."""
        headers = self.query(StatusHeader)
        return headers.first() if headers else None

    async def on_show_tab(self, message: ShowTab) -> None:
        await self.action_show_tab(message.tab_id)
        if message.target:
            (await self.tab(message.tab_id)).reveal(message.target)

    async def on_open_log(self, message: OpenLog) -> None:
        from tfgpu_tui.ui.training import TrainingTab

        await self.action_show_tab(TrainingTab.TAB_ID)
        tab = await self.tab(TrainingTab.TAB_ID)
        if isinstance(tab, TrainingTab):
            tab.open_log(message.path, message.pid)

    async def on_tab_bar_chosen(self, message: TabBar.Chosen) -> None:
        await self.action_show_tab(message.tab_id)

    def _focus_active_tab(self) -> None:
        """Give the shown tab's main widget the focus, unless the focus is inside that tab already."""
        tab = self._tabs.get(self._active)
        if tab is not None and not self._focus_is_inside(tab):
            tab.focus_default()

    def _focus_is_inside(self, widget: Widget) -> bool:
        return self.focused is not None and widget in self.focused.ancestors_with_self

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Key 5 works only when there is a Hosts tab."""
        if action == "show_tab" and parameters == ("hosts",):
            return any(spec.tab_id == "hosts" for spec in self._specs)
        return True

    async def action_show_tab(self, tab_id: str) -> None:
        """Switch to the tab with this id (built first, the first time it is shown) and focus it."""
        shown = await self.tab(tab_id)
        if self._active != tab_id:
            self._active = tab_id
            self.screen.set_focus(None)  # else Textual hands the focus to a sibling in the tab being hidden
            for other_id, tab in self._tabs.items():
                tab.display = other_id == tab_id
            self._bar.active = tab_id
            self.call_after_refresh(self._focus_active_tab)
        elif not self._focus_is_inside(shown):
            self._focus_active_tab()  # shown, but the focus is outside it: its keys would not work
        else:
            # Shown and focused, so nothing changes; but the footer skips updates while the app has no focus
            # (a browser tab in the background), and may still show another tab's keys: redraw it.
            self.screen.refresh_bindings()

    def action_help(self) -> None:
        """Show every key binding, grouped by tab, the current tab's first."""
        from tfgpu_tui.ui.help_screen import HelpScreen

        current = next((spec.title for spec in self._specs if spec.tab_id == self._active), None)
        self.push_screen(HelpScreen(self.help_sections(), current))

    def help_sections(self) -> list[tuple[str, list[BindingType]]]:
        """What the help screen lists: the keys that work everywhere, then each tab's and its widgets'; not
        `k` where this session sends no signals (the footer and the alerts do not offer it either)."""
        everywhere = [*self.BINDINGS, PALETTE_HELP]
        sections: list[tuple[str, list[BindingType]]] = [("Everywhere", everywhere)]
        for spec in self._specs:
            sections += spec.help_sections()
        if signal_refusal(self.settings) is None:
            return sections
        return [(title, [b for b in keys if getattr(b, "action", "") != "kill"]) for title, keys in sections]

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Command palette (ctrl+p) entries: Textual's own, a switch to each tab, and every tab action, each
        with its key and what it does."""
        yield from super().get_system_commands(screen)
        for number, spec in enumerate(self._specs, 1):
            title = spec.title
            yield SystemCommand(
                f"Show {title}",
                f"key {number}: switch to the {title} tab",
                partial(self.action_show_tab, spec.tab_id),
            )
            for action, description, help_text in tab_actions(spec.load()):
                yield SystemCommand(
                    f"{title}: {description}", help_text, partial(self._run_tab_action, spec.tab_id, action)
                )

    async def _run_tab_action(self, tab_id: str, action: str) -> None:
        await self.action_show_tab(tab_id)
        await (await self.tab(tab_id)).run_action(action)


def tab_actions(tab: type[DashboardTab] | DashboardTab) -> list[tuple[str, str, str]]:
    """(action, description, help) for each described binding of a tab, without repeats; the help names the
    key and says what the action does (its docstring's first sentence)."""
    from tfgpu_tui.ui.help_screen import described_bindings, key_label

    seen: dict[str, tuple[str, str]] = {}
    for binding in described_bindings(list(tab.BINDINGS)):
        if binding.action not in seen:
            what = first_sentence(
                inspect.getdoc(getattr(tab, f"action_{binding.action.split('(')[0]}", None))
            )
            seen[binding.action] = (
                binding.description,
                f"key {key_label(binding)}" + (f": {what}" if what else ""),
            )
    return [(action, description, help_text) for action, (description, help_text) in seen.items()]


def first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, without its full stop ('' without a docstring)."""
    paragraph = " ".join((doc or "").split("\n\n")[0].split())
    return re.split(r"(?<!\be\.g)(?<!\bi\.e)\. (?=[A-Z])", paragraph)[0].rstrip(".")
