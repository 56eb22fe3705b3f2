"""The Textual app: a status header, four tabs, a footer with the keys that matter."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, TabbedContent, TabPane

from tfgpu_tui.alerts import Alert, most_urgent
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.batch_probe import BatchProbeTab
from tfgpu_tui.ui.environment import EnvironmentTab
from tfgpu_tui.ui.header import StatusHeader
from tfgpu_tui.ui.help_screen import HelpScreen, described_bindings
from tfgpu_tui.ui.hosts import HostsTab, fleet_wanted
from tfgpu_tui.ui.messages import AlertsChanged, GpuCountChanged, OpenLog, ShowTab
from tfgpu_tui.ui.monitor import MonitorTab
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.training import TrainingTab

TAB_CLASSES: tuple[type[DashboardTab], ...] = (EnvironmentTab, MonitorTab, TrainingTab, BatchProbeTab)


class TfgpuApp(App[None]):
    """tfgpu-tui's dashboard."""

    TITLE = "tfgpu-tui"
    CSS_PATH = ["monitor.tcss"]  # the Monitor tab, its widgets, the header and the kill dialog
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("1", "show_tab('environment')", "Environment", show=False),
        Binding("2", "show_tab('monitor')", "Monitor", show=False),
        Binding("3", "show_tab('training')", "Training", show=False),
        Binding("4", "show_tab('probe')", "Batch probe", show=False),
        Binding("5", "show_tab('hosts')", "Hosts (with --prometheus or --remote)", show=False),
    ]

    def __init__(self, settings: Settings | None = None, initial_tab: str = "monitor") -> None:
        super().__init__()
        self.settings = settings or Settings()
        self.initial_tab = initial_tab
        self._alerts_by_source: dict[str, list[Alert]] = {}

    def compose(self) -> ComposeResult:
        yield StatusHeader()
        with TabbedContent(initial=self.initial_tab):
            for tab_class in TAB_CLASSES + ((HostsTab,) if fleet_wanted(self.settings) else ()):
                with TabPane(tab_class.TAB_TITLE, id=tab_class.TAB_ID):
                    yield tab_class(self.settings)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(StatusHeader).simulated = self.settings.demo
        for warning in self.settings.config_warnings:
            self.notify(warning, title="Settings file", severity="warning", timeout=15)
        self.call_after_refresh(self._focus_active_tab)

    @property
    def all_alerts(self) -> list[Alert]:
        """Every tab's current alerts, most urgent first."""
        alerts = [alert for alerts in self._alerts_by_source.values() for alert in alerts]
        return sorted(alerts, key=lambda alert: alert.severity, reverse=True)

    def on_alerts_changed(self, message: AlertsChanged) -> None:
        self._alerts_by_source[message.source] = list(message.alerts)
        alerts = self.all_alerts
        header = self._header()
        if header is None:
            return
        header.alert = most_urgent(alerts)
        header.alert_count = len(alerts)

    def on_gpu_count_changed(self, message: GpuCountChanged) -> None:
        header = self._header()
        if header is None:
            return
        header.gpu_count = message.count
        header.simulated = message.simulated
        header.no_gpu_reason = message.reason

    def _header(self) -> StatusHeader | None:
        """The status header, or None while the app is shutting down."""
        headers = self.query(StatusHeader)
        return headers.first() if headers else None

    def on_show_tab(self, message: ShowTab) -> None:
        self.action_show_tab(message.tab_id)
        if message.target:
            for tab in self.query(DashboardTab):
                if message.tab_id == tab.TAB_ID:
                    tab.reveal(message.target)

    def on_open_log(self, message: OpenLog) -> None:
        self.action_show_tab(TrainingTab.TAB_ID)
        self.query_one(TrainingTab).open_log(message.path, message.pid)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.call_after_refresh(self._focus_active_tab)

    def _focus_active_tab(self) -> None:
        tabs = self.query_one(TabbedContent)
        pane = tabs.get_pane(tabs.active) if tabs.active else None
        if pane is not None:
            pane.query_one(DashboardTab).focus_default()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Key 5 works only when there is a Hosts tab."""
        if action == "show_tab" and parameters == (HostsTab.TAB_ID,):
            return fleet_wanted(self.settings)
        return True

    def action_show_tab(self, tab_id: str) -> None:
        """Switch to the tab with this pane id."""
        self.query_one(TabbedContent).active = tab_id

    def action_help(self) -> None:
        """Show every key binding, grouped by tab."""
        sections = [("Everywhere", list(self.BINDINGS))]
        sections += [(tab.TAB_TITLE, list(tab.BINDINGS)) for tab in self.query(DashboardTab)]
        self.push_screen(HelpScreen(sections))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Command palette (ctrl+p) entries: Textual's own, a switch to each tab, and every tab action."""
        yield from super().get_system_commands(screen)
        for tab in self.query(DashboardTab):
            title = tab.TAB_TITLE
            yield SystemCommand(
                f"Show {title}", f"Switch to the {title} tab", partial(self.action_show_tab, tab.TAB_ID)
            )
            for action, description in tab_actions(tab):
                yield SystemCommand(
                    f"{tab.TAB_TITLE}: {description}",
                    f"Runs on the {tab.TAB_TITLE} tab",
                    partial(self._run_tab_action, tab, action),
                )

    async def _run_tab_action(self, tab: DashboardTab, action: str) -> None:
        self.action_show_tab(tab.TAB_ID)
        await tab.run_action(action)


def tab_actions(tab: DashboardTab) -> list[tuple[str, str]]:
    """(action, description) for each described binding of a tab, without repeats."""
    seen: dict[str, str] = {}
    for binding in described_bindings(list(tab.BINDINGS)):
        seen.setdefault(binding.action, binding.description)
    return list(seen.items())
