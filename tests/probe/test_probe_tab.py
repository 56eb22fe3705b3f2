"""The Batch probe tab, driven through the pilot with a fake worker (no TensorFlow, fast); without --demo,
whose probe is simulated (tests/test_demo_machine.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual.widgets import Button, Checkbox, DataTable, Input, OptionList, Select, Static

from tests.helpers.paths import FIXTURES
from tests.helpers.screen_text import screen_lines
from tests.helpers.waiting import wait_until
from tfgpu_tui.gpu.model import DeviceInfo
from tfgpu_tui.probe import precision
from tfgpu_tui.probe import trial_runner as runner
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.batch_probe import BatchProbeTab
from tfgpu_tui.ui.widgets.key_footer import KeyFooter

PASCAL_GPU = DeviceInfo(0, "Tesla P100", None, 16_280.0, 250.0, (6, 1), True)
FAKE_WORKER = FIXTURES / "probe" / "fake_worker.py"


@pytest.fixture(autouse=True)
def fake_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfgpu_tui.ui.interpreter import SharedInterpreter

    monkeypatch.setattr(runner, "WORKER_SCRIPT", FAKE_WORKER)
    monkeypatch.setenv("FAKE_PROBE_MODE", "linear")
    # the trials' interpreter is chosen as the dashboard chooses it; no TensorFlow job of the machine's
    monkeypatch.setattr(SharedInterpreter, "find_jobs", staticmethod(list))


def text_of(app: TfgpuApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def start_with_budget(app: TfgpuApp, pilot, budget: str) -> BatchProbeTab:
    tab = app.query_one(BatchProbeTab)
    await pilot.pause()
    budget_input = app.query_one("#probe-budget", Input)
    budget_input.value = budget
    budget_input.focus()
    await pilot.pause()
    await pilot.press("ctrl+r")
    return tab


async def test_probe_runs_and_shows_trials_plot_and_summary() -> None:
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(160, 45)) as pilot:
        tab = await start_with_budget(app, pilot, "100")
        await wait_until(pilot, lambda: tab.result is not None, timeout=60)
        table = app.query_one("#probe-trials", DataTable)
        assert table.row_count == len(tab.result.trials) >= 3
        summary = text_of(app, "#probe-summary")
        assert f"Largest batch that fits: {tab.result.max_batch}" in summary
        assert f"batch_size = {tab.result.recommended_batch}" in summary
        assert "Done:" in text_of(app, "#probe-status") and "100 MB (given)" not in summary
        assert app.query_one("#probe-start", Button).disabled is False
        # The trials table holds each trial's result and the plot was drawn.
        cells = [str(table.get_cell(f"float32:{t.batch_size}", "result")) for t in tab.result.trials]
        assert cells == [t.result for t in tab.result.trials]
        table.focus()
        await pilot.press("c")
        assert app.clipboard == tab.result.snippet


async def test_default_budget_is_filled_in_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tfgpu_tui.ui.batch_probe.gpu_devices", lambda: [])  # the CPU, GPUs here or not
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(160, 45)) as pilot:
        tab = await start_with_budget(app, pilot, "")
        await wait_until(pilot, lambda: tab.result is not None, timeout=60)
        assert "MB (available host memory (CPU))" in text_of(app, "#probe-status")
        assert tab.result.request.budget_mb > 0 and tab.result.max_batch == 8192


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("#probe-budget", "lots", "the budget must be a number, not 'lots'"),
        ("#probe-model", "nowhere/model.keras", "model file not found: nowhere/model.keras"),
        ("#probe-model", "builtin:gpt5", "unknown built-in model 'gpt5'"),
        ("#probe-steps", "0", "steps per trial must be at least 1"),
        ("#probe-max-batch", "1.5", "max batch must be a whole number, not '1.5'"),
    ],
)
async def test_bad_input_gets_a_message_and_nothing_starts(field: str, value: str, expected: str) -> None:
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        app.query_one("#probe-budget", Input).value = "100"
        app.query_one(field, Input).value = value
        app.query_one(field, Input).focus()
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert expected in text_of(app, "#probe-status")
        assert not app.query_one(BatchProbeTab).running


async def test_cancel_kills_the_child_and_the_ui_stays_responsive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_PROBE_MODE", "hang")
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(160, 45)) as pilot:
        tab = await start_with_budget(app, pilot, "100")
        await wait_until(pilot, lambda: app.query_one("#probe-trials", DataTable).row_count == 1, timeout=60)
        assert app.query_one("#probe-cancel", Button).disabled is False
        footer = app.query_one(KeyFooter)
        await wait_until(pilot, lambda: "esc Cancel" in str(footer.render()), timeout=60)  # while it runs
        assert app.query_one("#probe-start", Button).disabled is True
        app.query_one("#probe-trials", DataTable).focus()
        await pilot.press("1")  # the app still answers keys while a trial runs
        assert app.active_tab == "environment"
        tab.action_cancel()
        await wait_until(pilot, lambda: not tab.running, timeout=60)
        assert "Cancelled" in text_of(app, "#probe-status")
        await wait_until(pilot, lambda: "esc Cancel" not in str(footer.render()), timeout=60)
        assert app.query_one("#probe-trials", DataTable).row_count == 0
        assert app.query_one("#probe-start", Button).disabled is False


async def test_tensorflow_missing_is_refused_before_the_first_trial_with_the_install_line(
    tmp_path: Path,
) -> None:
    """As `probe` does: no trial starts, and the one line with the install command is on screen at 80x24."""
    python = tmp_path / "python-without-tf"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')  # -S: no site-packages, no TF
    python.chmod(0o755)
    app = TfgpuApp(Settings(python=str(python)), initial_tab="probe")
    async with app.run_test(size=(80, 24)) as pilot:
        tab = await start_with_budget(app, pilot, "100")
        await wait_until(pilot, lambda: not tab.running, timeout=60)
        status = text_of(app, "#probe-status")
        assert f"TensorFlow is not installed in {python}" in status
        assert f"{python} -m pip install 'tensorflow" in status
        assert app.query_one("#probe-trials", DataTable).row_count == 0 and tab.result is None
        screen = "".join(line.strip() for line in screen_lines(app))  # the command may wrap
        assert f"{python}-m pip install 'tensorflow".replace(" ", "") in screen.replace(" ", "")


async def test_devices_offer_every_gpu_and_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tfgpu_tui.ui.batch_probe.gpu_devices", lambda: ["GPU:0", "GPU:1"])
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(160, 45)) as pilot:
        select = app.query_one("#probe-device", Select)
        await wait_until(pilot, lambda: select.value == "GPU:0", timeout=60)
        assert [str(option.prompt) for option in select.query_one(OptionList).options] == [
            "GPU:0",
            "GPU:1",
            "CPU",
        ]


async def test_tab_compares_precisions_and_warns_on_an_old_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tfgpu_tui.ui.batch_probe.gpu_devices", lambda: ["GPU:0"])
    monkeypatch.setattr(precision, "read_gpu_facts", lambda: ([PASCAL_GPU], ""))
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(180, 50)) as pilot:
        tab = app.query_one(BatchProbeTab)
        select = app.query_one("#probe-device", Select)
        await wait_until(pilot, lambda: select.value == "GPU:0", timeout=60)
        app.query_one("#probe-budget", Input).value = "100"
        app.query_one("#probe-compare", Checkbox).value = True
        await pilot.pause()
        app.query_one("#probe-start").focus()
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: tab.result is not None, timeout=60)
        assert tab.comparison is not None and tab.comparison.mixed is not None
        assert app.query_one("#probe-comparison", Static).display
        side = text_of(app, "#probe-comparison")
        assert tab.comparison.table_lines()[0].split() == ["float32", "mixed_float16"]
        assert all(line in side for line in tab.comparison.table_lines())
        assert "compute capability 6.1 (below 7.0" in side and "will not speed training up" in side
        assert "mixed_float16: Rule of thumb at batch" in side
        assert "Rule of thumb at batch" in text_of(app, "#probe-summary")
        table = app.query_one("#probe-trials", DataTable)
        precisions = {str(table.get_row_at(i)[1]) for i in range(table.row_count)}
        assert precisions == {"float32", "mixed_float16"}
        expected = len(tab.comparison.float32.trials) + len(tab.comparison.mixed.trials)
        assert table.row_count == expected


async def test_esc_leaves_a_field_and_the_keys_work_again() -> None:
    """In a field `esc` lets go (the footer says so); then `2` switches tab instead of typing. In a number
    field `q` and `?` are not typed, so the footer keeps them."""
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        model = app.query_one("#probe-model", Input)
        model.focus()
        await pilot.pause()
        leave = app.screen.active_bindings.get("escape")
        assert leave is not None and leave.binding.description == "Leave field"
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.focused is app.query_one("#probe-start", Button), timeout=60)
        assert model.value == "builtin:cnn"
        app.query_one("#probe-budget", Input).focus()
        await pilot.pause()
        assert {"q", "question_mark"} <= set(app.screen.active_bindings)
        await pilot.press("5", "escape", "2")
        await wait_until(pilot, lambda: app.active_tab == "monitor", timeout=60)
        assert app.query_one("#probe-budget", Input).value.endswith("5")


async def test_an_unchecked_checkbox_is_drawn_empty() -> None:
    """Without colour an X means checked: unchecked boxes are drawn `▐ ▌`."""
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert any("▐ ▌ Mixed precision" in line for line in screen_lines(app))
        assert not any("▐X▌" in line for line in screen_lines(app))
        app.query_one("#probe-mixed", Checkbox).value = True
        await wait_until(
            pilot, lambda: any("▐X▌ Mixed precision" in line for line in screen_lines(app)), timeout=30
        )
