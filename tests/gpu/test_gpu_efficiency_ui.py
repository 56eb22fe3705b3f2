"""The Monitor shows what GPM measured on each GPU without giving up a process row at 80x24, the diagnoses
among the alerts, and `e` on one explains it (the app on fakenvml through the real NVML path, pilot)."""

from __future__ import annotations

from textual.widgets import Static

from tests.helpers.screen_text import screen_lines
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.diagnosis_screen import DiagnosisScreen
from tfgpu_tui.ui.monitor import MonitorTab
from tfgpu_tui.ui.widgets.alerts_panel import AlertsPanel
from tfgpu_tui.ui.widgets.process_table import ProcessTable

H100 = 'name="NVIDIA H100 80GB HBM3" total_mib=81559'
TIMEOUT = 60.0


def scenario_text(pids: list[int]) -> str:
    return (
        f"device {H100} util=97 gpm_sm=8 gpm_tensor=0\n"
        'device name="NVIDIA A100-SXM4-80GB" total_mib=81920 arch=ampere cc=8.0 util=60\n'
        + "".join(
            f"process gpu={i % 2} pid={pid} used_mib={1024 * (i + 1)} sm=50\n" for i, pid in enumerate(pids)
        )
    )


async def test_activity_on_each_gpu_keeps_every_process_row_at_80x24(scenario, sleepers) -> None:
    jobs = sleepers(5)
    scenario(scenario_text([p.pid for p in jobs]))
    app = TfgpuApp(Settings(interval=0.25, efficiency_minutes=0.02))
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(ProcessTable)
        await wait_until(pilot, lambda: len(table.rows_shown) == 5, timeout=TIMEOUT)

        def drawn() -> list[str]:  # the activity and every process row, as drawn
            screen = screen_lines(app)
            rows = all(any(str(job.pid) in line for line in screen) for job in jobs)
            return screen if rows and any("SM 8 %" in line for line in screen) else []

        screen = await wait_until(pilot, drawn, timeout=TIMEOUT)
        h100 = next(line for line in screen if " H100" in line)
        assert "SM 8 %" in h100  # on the GPU's own line, not a line of its own
        a100 = next(line for line in screen if "A100" in line)
        assert "SM N/A" in a100 or "SM" not in a100
        for job in jobs:  # every process row is still there
            assert any(str(job.pid) in line for line in screen), (job.pid, screen)


async def test_a_diagnosis_is_an_alert_and_e_explains_it(scenario, sleepers) -> None:
    jobs = sleepers(2)
    scenario(scenario_text([p.pid for p in jobs]))
    app = TfgpuApp(Settings(interval=0.25, efficiency_minutes=0.02))
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(AlertsPanel)
        await wait_until(pilot, lambda: any(a.kind == "busy_not_working" for a in panel.ordered), TIMEOUT)
        # as drawn: the screen follows the panel's alerts a frame later
        await wait_until(pilot, lambda: any("SMs mostly idle: GPU 0" in line for line in screen_lines(app)))
        app.query_one(MonitorTab).action_focus_alerts()
        await pilot.pause()
        while panel.selected is not None and panel.selected.kind != "busy_not_working":
            await pilot.press("down")
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, DiagnosisScreen), timeout=TIMEOUT)

        def text() -> str:  # the explanation's words (it wraps inside its box on the screen)
            return " ".join(str(app.screen.query_one("#diagnosis-text", Static).render()).split())

        await wait_until(pilot, lambda: "one tiny kernel at a time reads 100 %" in text(), timeout=TIMEOUT)
        assert "97 % utilisation, but only 8 % of its SMs" in text() and "jit_compile=True" in text()
        assert "SMs mostly idle (GPU 0)" in text()
        await wait_until(  # on screen, a frame after the text
            pilot, lambda: any("Found: GPU 0 reads 97 % utilisation" in line for line in screen_lines(app))
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, DiagnosisScreen))
