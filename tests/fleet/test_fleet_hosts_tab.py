"""The Hosts tab on exporters scraped directly (--remote): rows with the right numbers, hosts that go down and
come back, the read-only host screen; and no Hosts tab (key 5 inert) without a fleet source."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace

import pytest
from textual.geometry import Region
from textual.widgets import Static

from tests.helpers.fleet_helpers import free_port, stop
from tests.helpers.waiting import wait_until
from tfgpu_tui.fleet.readers import DirectReader
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.host_detail import HostDetailScreen
from tfgpu_tui.ui.hosts import COLUMNS, HostsTab
from tfgpu_tui.ui.widgets.gpu_card import GpuCard
from tfgpu_tui.ui.widgets.hosts_table import HostsTable
from tfgpu_tui.ui.widgets.key_footer import KeyFooter
from tfgpu_tui.ui.widgets.process_table import ProcessTable

pytestmark = pytest.mark.e2e  # real child processes


def demo_exporter(port: int, name: str) -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, "-m", "tfgpu_tui", "export", "--demo", "--port", str(port), "--hostname", name],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None and "serving" in child.stdout.readline()
    return child


def row(tab: HostsTab, key: str) -> dict[str, str]:
    """What the table shows for a host, by column."""
    return dict(
        zip(COLUMNS, map(str, tab.query_one(HostsTable).cells(key) or ("",) * len(COLUMNS)), strict=True)
    )


async def test_hosts_come_and_go_and_open_read_only() -> None:
    ports = [free_port(), free_port()]
    keys = [f"127.0.0.1:{port}" for port in ports]
    never = f"127.0.0.1:{free_port()}"
    children = [demo_exporter(ports[0], "gpu-a"), demo_exporter(ports[1], "gpu-b")]
    try:
        settings = Settings(demo=True, remote_hosts=(*keys, never), fleet_refresh_seconds=0.3)
        app = TfgpuApp(settings)
        async with app.run_test(size=(200, 50)) as pilot:
            await pilot.press("5")
            tab = app.query_one(HostsTab)
            await wait_until(
                pilot,
                lambda: (
                    tab.query_one(HostsTable).row_count == 3 and row(tab, keys[1])["State"] == "up SIMULATED"
                ),
                timeout=15,
            )
            a = row(tab, keys[0])
            assert (a["Host"], a["State"], a["GPUs"], a["Address"]) == (
                "gpu-a",
                "up SIMULATED",  # an `export --demo`: its series say simulated="true"
                "2× A100-SXM4-80GB",
                keys[0],
            )
            assert re.fullmatch(r"\d+ % \(max \d+\)", a["Util"]) and a["Memory"].endswith("/160.0 GiB")
            assert row(tab, never)["State"].startswith("DOWN: ") and row(tab, never)["Scraped"] == "never"
            # the numbers are the exporter's own: compare with one direct read
            reader = DirectReader([keys[0]])
            (direct,) = reader.read().hosts
            reader.close()
            assert [d.memory_total_mib for d in direct.snapshot.devices] == [81920.0, 81920.0]

            stop(children[1])
            await wait_until(pilot, lambda: row(tab, keys[1])["State"].startswith("DOWN: "), timeout=60)
            assert re.search("refused|reset", row(tab, keys[1])["State"])
            assert row(tab, keys[1])["Host"] == "gpu-b"  # still named, with its last known GPUs
            assert row(tab, keys[1])["GPUs"] == "2× A100-SXM4-80GB"
            children[1] = demo_exporter(ports[1], "gpu-b")
            await wait_until(pilot, lambda: row(tab, keys[1])["State"] == "up SIMULATED", timeout=60)

            table = app.query_one(HostsTable)
            table.move_to(keys[0])
            await wait_until(pilot, lambda: app.focused is table)
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, HostDetailScreen))
            screen = app.screen
            await wait_until(pilot, lambda: len(screen.query(GpuCard)) == 2)
            await wait_until(pilot, lambda: screen.query_one(ProcessTable).rows_shown)
            shown = screen.query_one(ProcessTable).rows_shown
            assert all(r.process.gpu_index in (0, 1, None) for r in shown)
            assert not any(
                b.action == "kill" for b in screen.active_bindings.values() if hasattr(b, "action")
            )
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, HostDetailScreen))
    finally:
        for child in children:
            stop(child)


async def test_no_hosts_tab_without_a_fleet_source() -> None:
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        assert not app.query(HostsTab)
        assert app.active_tab == "monitor"


async def test_an_update_right_after_enter_reaches_the_host_screen() -> None:
    """Enter pushes the host's screen; an update handled before that screen has composed (a busy machine, or
    a user pressing enter as a read arrives) is shown once it has, instead of failing on a widget that does
    not exist yet."""
    key = f"127.0.0.1:{free_port()}"  # nothing listens there: the host reads as down
    app = TfgpuApp(Settings(demo=True, remote_hosts=(key,), fleet_refresh_seconds=3600))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("5")
        tab = app.query_one(HostsTab)
        table = app.query_one(HostsTable)
        await wait_until(pilot, lambda: tab.view is not None and app.focused is table, timeout=60)
        assert tab.view is not None
        (down,) = tab.view.hosts
        assert not down.up
        newer = replace(tab.view, hosts=(replace(down, hostname="gpu-z", up=True, reason=""),))
        # in one step of the event loop: enter's action, then the update, before the screen can compose
        tab.action_open_host()
        screen = app.screen
        assert isinstance(screen, HostDetailScreen) and not screen.is_mounted
        tab.show_view(newer)

        def title() -> str:
            return str(screen.query_one("#host-title", Static).content) if screen.is_mounted else ""

        await wait_until(pilot, lambda: title().startswith(f"gpu-z ({key})  up"))
        assert "DOWN" not in title()
        assert row(tab, key)["Host"] == "gpu-z"
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HostDetailScreen))


async def test_at_80_columns_whole_columns_simulated_marked_and_enter_in_the_footer() -> None:
    port = free_port()
    key = f"127.0.0.1:{port}"
    child = demo_exporter(port, "gpu-sim")
    try:
        app = TfgpuApp(Settings(demo=True, remote_hosts=(key,)))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("5")
            tab = app.query_one(HostsTab)
            table = app.query_one(HostsTable)
            await wait_until(pilot, lambda: row(tab, key)["State"] == "up SIMULATED", timeout=60)
            await wait_until(pilot, lambda: app.focused is table)
            # the columns that fit are whole, the most needed first; no label is cut at the edge
            shown = table.shown_columns
            assert {"Host", "State", "Util", "Memory"} <= set(shown) and len(shown) < len(COLUMNS)
            header, first = (strip.text for strip in table.render_lines(Region(0, 0, table.size.width, 2)))
            assert header.split() == " ".join(shown).split() and len(header.rstrip()) <= table.size.width
            assert first.startswith("gpu-sim") and "SIMULATED" in first
            caption = str(app.query_one("#fleet-caption", Static).content)
            assert caption.startswith("1 hosts, 1 up, 1 SIMULATED") and len(caption) <= 78
            footer = str(app.query_one(KeyFooter).render())
            assert "Open host" in footer and "Help" in footer
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, HostDetailScreen))
            await wait_until(pilot, lambda: app.screen.is_mounted)
            title = app.screen.query_one("#host-title", Static)
            await wait_until(pilot, lambda: "SIMULATED" in str(title.content))
    finally:
        stop(child)
