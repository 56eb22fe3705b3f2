"""The Hosts tab (with ``--prometheus URL`` or ``--remote HOST:PORT,...``): one row per host with its GPUs,
utilisation, memory, worst alert, training progress and health; enter opens the host read-only.

The fleet is read by a FleetFeed (a thread of the core) every `settings.fleet_refresh_seconds`; each view
reaches the tab as a FleetUpdated message, and an open host's screen as a HostChanged message."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from tfgpu_tui.alerts import Severity
from tfgpu_tui.fleet.feed import FleetFeed
from tfgpu_tui.fleet.hosts import FleetView, HostSnapshot
from tfgpu_tui.fleet.readers import make_reader
from tfgpu_tui.settings import Settings
from tfgpu_tui.sizes import used_of_total_text
from tfgpu_tui.ui.host_detail import HostChanged, HostDetailScreen
from tfgpu_tui.ui.host_text import simulated, state_text, training_text
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.hosts_table import HostsTable

COLUMNS = ("Host", "State", "GPUs", "Util", "Memory", "Scraped", "Worst alert", "Training", "Address")
MAX_WIDTHS = {"State": 24, "GPUs": 20, "Worst alert": 30, "Training": 44}
# Which columns stay when the width runs short (the host's screen, enter, shows everything).
PRIORITY = ("Host", "State", "Util", "Memory", "Worst alert", "GPUs", "Training", "Scraped", "Address")
SEVERITY_STYLE = {Severity.CRITICAL: "bold red", Severity.WARNING: "yellow", Severity.INFO: "dim"}


def fleet_wanted(settings: Settings) -> bool:
    """The Hosts tab exists only when a fleet source was given."""
    return bool(settings.prometheus_url or settings.remote_hosts)


@dataclass
class FleetUpdated(Message):
    """A fresh FleetView from the fleet feed."""

    view: FleetView


def caption_text(view: FleetView, width: int) -> str:
    """The line above the table: the error if any, how many hosts are up (and simulated), then where they were
    read from and how long it took, each only when it fits in `width` cells after what comes before it."""
    up = sum(1 for h in view.hosts if h.up)
    fake = sum(1 for h in view.hosts if simulated(h))
    parts = [f"{len(view.hosts)} hosts, {up} up" + (f", {fake} SIMULATED" if fake else "")]
    if view.error:
        parts.insert(0, view.error)
    text = " · ".join(parts)
    for part in (f"from {view.source}", f"read in {view.read_ms:.0f} ms"):
        if len(text) + 3 + len(part) > width:
            break
        text += f" · {part}"
    return text


def host_cells(host: HostSnapshot) -> tuple[str | Text, ...]:
    """One row of the Hosts table."""
    snapshot = host.snapshot
    devices = [d for d in (snapshot.devices if snapshot else []) if not d.lost]
    models = sorted({d.name.removeprefix("NVIDIA ") for d in devices})
    gpus = f"{len(devices)}× {', '.join(models)}" if devices else "0"
    utils = [d.utilization_percent for d in devices if d.utilization_percent is not None]
    util = f"{sum(utils) / len(utils):.0f} % (max {max(utils):.0f})" if utils else "-"
    used = [d.memory_used_mib for d in devices if d.memory_used_mib is not None]
    total = [d.memory_total_mib for d in devices if d.memory_total_mib is not None]
    memory = used_of_total_text(sum(used), sum(total)) if used and total else "-"
    alert = host.worst_alert
    worst: str | Text = "-"
    if alert is not None:
        worst = Text(f"{alert.severity.name.lower()}: {alert.message}", style=SEVERITY_STYLE[alert.severity])
    age = "never" if host.scrape_age is None else f"{host.scrape_age:.0f} s"
    training = training_text(host.training)
    return (host.hostname, state_text(host), gpus, util, memory, age, worst, training, host.key)


class HostsTab(DashboardTab):
    """Every host of the fleet; enter opens one in a read-only Monitor view."""

    DEFAULT_CSS = """
    /* Hosts tab (fleet view) */
    HostsTab #fleet-caption { height: 1; padding: 0 1; background: $boost; }
    HostsTab #hosts-table { height: 1fr; }
    """

    TAB_ID = "hosts"
    TAB_TITLE = "Hosts"
    BINDINGS = [Binding("enter", "open_host", "Open host (read-only)")]

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.view: FleetView | None = None
        self._feed = FleetFeed(
            lambda: make_reader(settings.prometheus_url, settings.remote_hosts),
            settings.fleet_refresh_seconds,
            lambda view: self.post_message(FleetUpdated(view)),
        )

    def compose(self) -> ComposeResult:
        yield Static("Reading the fleet…", id="fleet-caption")
        yield HostsTable(COLUMNS, MAX_WIDTHS, priority=PRIORITY, id="hosts-table")

    def on_mount(self) -> None:
        self._feed.start()

    def on_unmount(self) -> None:
        self._feed.close()

    def focus_default(self) -> None:
        """The hosts table (once composed: the tab may be built on first show)."""
        tables = self.query(HostsTable)
        if tables:
            tables.first().focus()

    def on_fleet_updated(self, message: FleetUpdated) -> None:
        self.show_view(message.view)

    def show_view(self, view: FleetView) -> None:
        """Show the view (rows added, removed, or repainted only where a cell changed), and send each open
        host screen its host's new state (handled once that screen has composed)."""
        self.view = view
        caption = self.query_one("#fleet-caption", Static)
        text = caption_text(view, caption.content_region.width or self.app.size.width - 2)
        caption.update(
            Text(text, style="bold red" if view.error else ""), layout=False
        )  # one line of fixed height: no re-layout of the screen
        self.query_one(HostsTable).show_rows([(host.key, host_cells(host)) for host in view.hosts])
        hosts = {host.key: host for host in view.hosts}
        for screen in self.app.screen_stack:
            if isinstance(screen, HostDetailScreen) and screen.key in hosts:
                screen.post_message(HostChanged(hosts[screen.key]))

    def selected_host(self) -> HostSnapshot | None:
        key = self.query_one(HostsTable).selected_key
        if self.view is None or key is None:
            return None
        return next((h for h in self.view.hosts if h.key == key), None)

    @on(HostsTable.Chosen)
    def _host_chosen(self, event: HostsTable.Chosen) -> None:
        event.stop()
        self.action_open_host()

    def action_open_host(self) -> None:
        """Open the selected host in the Monitor's cards and process table, read-only."""
        host = self.selected_host()
        if host is not None:
            self.app.push_screen(HostDetailScreen(host))
