"""Every Monitor key does what it says or says why not (issue 39): `e` explains or says there is nothing to
explain, the alerts show the keys that act on them, the line under the table follows what `k` acts on, `esc`
shows where it works, a session without kill rights is offered no kill and told which option allows it, and
the demo's kill dialog says SIMULATED before anything is chosen (demo scene, pilot)."""

from __future__ import annotations

from textual.pilot import Pilot

from tests.helpers.monitor_helpers import CPU_JOB, FAST, KERNEL, record_notifications, wait_for_table
from tests.helpers.screen_text import screen_lines
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel
from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill
from tfgpu_tui.ui.widgets.key_footer import KeyFooter
from tfgpu_tui.ui.widgets.process_table import ProcessTable


def demo(**settings: object) -> TfgpuApp:
    return TfgpuApp(Settings(demo=True, interval=FAST, **settings), initial_tab="monitor")


async def select_alert(pilot: Pilot, kind: str) -> AlertsPanel:
    """Focus the alerts list (`a`) and move down to the alert of `kind`."""
    app = pilot.app
    panel = app.query_one(AlertsPanel)
    await wait_until(pilot, lambda: any(alert.kind == kind for alert in panel.ordered), timeout=60)
    await pilot.press("a")
    await wait_until(pilot, lambda: panel.has_focus, timeout=60)
    await pilot.press("home")
    for _ in range(len(panel.ordered)):
        if panel.selected is not None and panel.selected.kind == kind:
            break
        await pilot.press("down")
    assert panel.selected is not None and panel.selected.kind == kind
    return panel


def footer(app: TfgpuApp) -> str:
    return str(app.query_one(KeyFooter).render())


def detail(app: TfgpuApp) -> str:
    return str(app.query_one("#process-detail").render())


async def test_e_on_an_alert_without_a_finding_says_so_and_stays() -> None:
    app = demo()
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        said = record_notifications(app)
        await select_alert(pilot, "stale_vram")
        await pilot.press("e")
        await wait_until(pilot, lambda: bool(said), timeout=60)
        assert "Nothing to explain" in said[-1][1] and "Stale VRAM" in said[-1][1]
        assert app.active_tab == "monitor"
        await select_alert(pilot, "cpu_fallback")  # one with a finding behind it still explains
        await pilot.press("e")
        await wait_until(pilot, lambda: app.active_tab == "environment", timeout=60)


async def test_each_alert_shows_the_keys_that_act_on_it() -> None:
    app = demo()
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        panel = app.query_one(AlertsPanel)
        await wait_until(pilot, lambda: len(panel.ordered) == 3, timeout=60)

        def alert_rows() -> list[str]:  # as drawn: the screen follows the panel's alerts a frame later
            rows = [line for line in screen_lines(app) if line.startswith((" CRIT ", " WARN ", " INFO "))]
            drawn = any("CPU fallback" in row for row in rows) and any("Stale VRAM" in row for row in rows)
            return rows if drawn else []

        rows = await wait_until(pilot, alert_rows, timeout=60)
        fallback = next(line for line in rows if "CPU fallback" in line)
        stale = next(line for line in rows if "Stale VRAM" in line)
        assert fallback.rstrip().endswith("[k kill][e explain]"), fallback
        assert stale.rstrip().endswith("[k kill]"), stale


async def test_the_line_under_the_table_follows_what_k_acts_on_and_esc_shows() -> None:
    app = demo()
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        table = app.query_one(ProcessTable)
        table.move_cursor(row=0)
        await pilot.pause()
        first = table.selected.process.pid
        assert detail(app).startswith(f"PID {first}:")
        assert "esc" not in footer(app)
        await select_alert(pilot, "stale_vram")
        await wait_until(pilot, lambda: detail(app).startswith(f"PID {KERNEL}:"), timeout=60)
        assert "esc Back" in footer(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.focused, ProcessTable), timeout=60)
        await wait_until(pilot, lambda: detail(app).startswith(f"PID {first}:"), timeout=60)


async def test_a_session_without_kill_rights_is_offered_no_kill_and_told_the_option() -> None:
    app = demo(least_privilege=True)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        panel = app.query_one(AlertsPanel)
        await wait_until(pilot, lambda: len(panel.ordered) == 3, timeout=60)
        assert not any("[k kill]" in line for line in screen_lines(app))
        assert "k Kill" not in footer(app) and "s Sort" in footer(app)
        said = record_notifications(app)
        await pilot.press("k")
        await wait_until(pilot, lambda: bool(said), timeout=60)
        title, message = said[-1]
        assert "serve --allow-kill" in message and "--readonly" not in message, message
        assert not isinstance(app.screen, ConfirmKill)


async def test_a_readonly_refusal_names_readonly() -> None:
    app = demo(readonly=True)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        said = record_notifications(app)
        await pilot.press("k")
        await wait_until(pilot, lambda: bool(said), timeout=60)
        assert "--readonly" in said[-1][1] and "allow-kill" not in said[-1][1]


async def test_the_demo_kill_dialog_says_simulated_before_the_action() -> None:
    app = demo()
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for_table(pilot)
        table = app.query_one(ProcessTable)
        table.move_cursor(row=[row.process.pid for row in table.rows_shown].index(CPU_JOB))
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill), timeout=60)
        title = str(app.screen.query_one("#confirm-kill-title").render())
        assert title.startswith("SIMULATED") and str(CPU_JOB) in title
        await pilot.press("escape")
