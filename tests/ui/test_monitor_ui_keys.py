"""Navigation can't aim a kill at the wrong row: Home/End/g/G, the pinned columns, the selected command, and
the kill dialog's keys and signal choice (demo with 8 GPUs at 80x24, where the table scrolls)."""

from __future__ import annotations

import signal

from textual.pilot import Pilot
from textual.widgets import OptionList

from tests.helpers.monitor_helpers import FAST, MonitorOnly, shown_pids
from tests.helpers.waiting import wait_until
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui import APP_STYLESHEET
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.monitor import MonitorTab
from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill
from tfgpu_tui.ui.widgets.gpu_compact import GpuCompactList
from tfgpu_tui.ui.widgets.process_table import ProcessTable

ROWS = 10  # the 8-GPU demo's processes


async def started(pilot: Pilot) -> ProcessTable:
    """The process table, once it has its rows and the focus, and the GPUs' lines are laid out above it (the
    first snapshot can arrive after the first layout, which gave the table the GPUs' room)."""
    app = pilot.app
    gpus = app.query_one(GpuCompactList)

    def ready() -> bool:
        laid_out = len(shown_pids(app)) == ROWS and gpus.size.height == 8
        return laid_out and isinstance(app.focused, ProcessTable)

    await wait_until(pilot, ready)
    return app.query_one(ProcessTable)


def demo_app(**settings: object) -> TfgpuApp:
    return TfgpuApp(Settings(demo=True, demo_gpus=8, interval=FAST, **settings))


async def test_home_end_g_and_shift_g_select_the_first_and_last_rows() -> None:
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await started(pilot)
        assert len(table.visible_rows) < ROWS  # the last row starts out of view
        for key, row in (("end", ROWS - 1), ("home", 0), ("G", ROWS - 1), ("g", 0), ("G", ROWS - 1)):
            await pilot.press(key)
            assert table.cursor_row == row, key
            assert row in table.visible_rows  # and scrolled into view
        assert table.selected.process.pid == shown_pids(app)[-1]


async def test_left_right_scroll_only_the_command_and_the_detail_shows_it_whole() -> None:
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await started(pilot)
        before = table.line_text(0)
        assert before.startswith("41873 ") and "python train.py --epochs" in before
        await pilot.press("right")
        after = table.line_text(0)
        # PID, user and GPU stay where they were, and so do the figures' columns
        assert after[:13] == before[:13] == "41873 root 0 " and after.index(" TF ") == before.index(" TF ")
        assert "python train.py" not in after and "--epochs 50" in after  # the command moved left
        await pilot.press("left")
        assert "python train.py --epochs" in table.line_text(0)
        detail = str(app.query_one("#process-detail").render())
        assert "PID 41873" in detail and "python train.py --epochs 50 --batch-size 256" in detail
        await pilot.press("down")
        assert "PID 43007" in str(app.query_one("#process-detail").render())


async def test_end_k_targets_the_last_row_and_arrows_move_between_actions() -> None:
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot)
        last = shown_pids(app)[-1]
        await pilot.press("end", "k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        dialog = app.screen
        assert dialog.row.pid == last and f"PID {last}" in str(
            dialog.query_one("#confirm-kill-body").render()
        )
        choices = dialog.query_one(OptionList)

        def highlighted() -> str | None:
            option = choices.highlighted_option
            return option.id if option else None

        assert app.focused is choices and highlighted() == "cancel"  # the demo has no Jupyter server to ask
        await pilot.press("left")
        assert highlighted() == "SIGINT"
        await pilot.press("right")
        assert highlighted() == "cancel"
        await pilot.press("right")  # wraps round
        assert highlighted() == "SIGTERM"
        await pilot.press("down", "up", "up")  # the list's own keys, wrapping too
        assert highlighted() == "cancel"
        await pilot.press("enter")  # Enter on Cancel ends nothing
        assert not isinstance(app.screen, ConfirmKill) and last in shown_pids(app)
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        await pilot.press(
            "k", "s", "r"
        )  # a second `k` is no action here, nor are the kernel keys for a non-kernel
        assert isinstance(app.screen, ConfirmKill)
        await pilot.press("escape")
        assert not isinstance(app.screen, ConfirmKill) and last in shown_pids(app)


async def test_the_signal_chosen_in_the_dialog_is_sent() -> None:
    source = SimulatedSource(gpus=8)
    sent: list[tuple[int, signal.Signals]] = []
    terminate = source.terminate

    def recording(row, grace_seconds, on_progress=None, first_signal=signal.SIGTERM):  # type: ignore[no-untyped-def]
        sent.append((row.pid, first_signal))
        return terminate(row, grace_seconds, on_progress, first_signal)

    source.terminate = recording  # type: ignore[method-assign]
    app = MonitorOnly(Settings(demo=True, interval=FAST), source)
    async with app.run_test(size=(80, 24)) as pilot:
        tab = app.query_one(MonitorTab)
        table = await started(pilot)
        await pilot.press("G")
        last = table.selected.process.pid
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        dialog = app.screen
        assert "Nothing is sent" in str(dialog.query_one("#confirm-kill-body").render())  # on Cancel
        await pilot.press("up", "up", "up")  # from Cancel up to SIGTERM
        assert "SIGTERM now, SIGKILL if it is still alive after" in str(
            dialog.query_one("#confirm-kill-body").render()
        )
        await pilot.press("down")
        assert dialog.choice == signal.SIGKILL
        assert "SIGKILL now" in str(dialog.query_one("#confirm-kill-body").render())
        await pilot.press("enter")
        await wait_until(pilot, lambda: not tab.kill_running and "SIGKILL" in tab.kill_status, timeout=60)
        assert sent == [(last, signal.SIGKILL)]
        await wait_until(pilot, lambda: last not in shown_pids(app))


class FirstFrameFocus(TfgpuApp):
    """Records which widget has the focus when the first frame has been drawn."""

    CSS_PATH = APP_STYLESHEET
    focused_at_first_frame: str = ""

    def on_mount(self) -> None:
        super().on_mount()
        self.call_after_refresh(self._record)

    def _record(self) -> None:
        self.focused_at_first_frame = type(self.focused).__name__


async def test_the_monitors_keys_work_from_the_first_frame() -> None:
    """A key pressed as soon as the dashboard shows reaches the Monitor (in tmux, `a` right after the first
    frame was lost while the tabs bar still had the focus)."""
    app = FirstFrameFocus(Settings(demo=True, demo_gpus=8, interval=FAST))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.focused_at_first_frame != "")
        assert app.focused_at_first_frame == ProcessTable.__name__
