"""One host of the fleet in the Monitor's GPU cards and process table, read-only: nothing here sends signals
(the process table is shown without the Monitor's kill, log and explain keys). It starts from the host given
to it and takes each later state as a HostChanged message, which it handles only once composed."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from tfgpu_tui.fleet.hosts import HostSnapshot
from tfgpu_tui.ui.host_text import state_text, training_text
from tfgpu_tui.ui.widgets.gpu_card import GpuCard
from tfgpu_tui.ui.widgets.process_table import ProcessTable, build_process_rows

CARDS_PER_ROW = 3


@dataclass
class HostChanged(Message):
    """The host shown on a HostDetailScreen has a new state."""

    host: HostSnapshot


class HostDetailScreen(Screen[None]):
    """A remote host's GPUs, processes (top N per GPU as exported), alerts and training, refreshed with the
    Hosts tab; escape goes back."""

    DEFAULT_CSS = """
    /* One host, read-only (the Hosts tab's enter) */
    HostDetailScreen #host-title { height: 1; padding: 0 1; background: $boost; }
    HostDetailScreen #host-cards { height: auto; max-height: 50%; }
    HostDetailScreen .gpu-row { height: 6; }
    HostDetailScreen #host-alerts { height: auto; max-height: 6; padding: 0 1; }
    HostDetailScreen #host-training { height: auto; padding: 0 1; }
    HostDetailScreen #host-processes { height: 1fr; }
    """

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back to Hosts")]

    def __init__(self, host: HostSnapshot) -> None:
        super().__init__()
        self.key = host.key
        self.host = host
        self._cards: dict[int, GpuCard] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="host-title")
        yield VerticalScroll(id="host-cards", can_focus=False)
        yield Static(id="host-alerts")
        yield Static(id="host-training")
        yield ProcessTable(id="host-processes")
        yield Footer()

    def on_mount(self) -> None:
        self._show(self.host)
        self.query_one(ProcessTable).focus()

    def on_host_changed(self, message: HostChanged) -> None:
        if message.host.key == self.key:
            self._show(message.host)

    def _show(self, host: HostSnapshot) -> None:
        """Display this host's latest state."""
        self.host = host
        title = Text(f"{host.hostname} ({host.key})  ", style="bold")
        title.append_text(state_text(host))
        age = "never scraped" if host.scrape_age is None else f"scraped {host.scrape_age:.0f} s ago"
        title.append(f"  {age} · read-only: no signals across machines", style="dim")
        self.query_one("#host-title", Static).update(title)
        snapshot = host.snapshot
        devices = snapshot.devices if snapshot else []
        self._show_cards(devices)
        alerts = snapshot.alerts if snapshot else []
        lines = Text()
        for alert in alerts:
            lines.append(f"{alert.severity.name.lower():<8} {alert.message}\n")
        self.query_one("#host-alerts", Static).update(lines if alerts else Text("No alerts", style="dim"))
        runs = "\n".join(f"{run.log}: {training_text((run,))}" for run in host.training)
        self.query_one("#host-training", Static).update(runs or Text("No training log followed", style="dim"))
        if snapshot is not None:
            self.query_one(ProcessTable).show_rows(build_process_rows(snapshot))

    def _show_cards(self, devices: list) -> None:
        container = self.query_one("#host-cards", VerticalScroll)
        indexes = [d.index for d in devices]
        if sorted(self._cards) != sorted(indexes):
            container.remove_children()
            self._cards = {index: GpuCard(index) for index in indexes}
            for start in range(0, len(indexes), CARDS_PER_ROW):
                row = Horizontal(*(self._cards[i] for i in indexes[start : start + CARDS_PER_ROW]))
                row.add_class("gpu-row")
                container.mount(row)
        for device in devices:
            self._cards[device.index].show(device)
