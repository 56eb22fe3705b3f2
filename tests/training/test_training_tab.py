"""The Training tab through the pilot: follows a log, shows progress, epochs and problems, switches file."""

from __future__ import annotations

import shutil

from textual.widgets import DataTable, Input, ProgressBar, Static

from tests.helpers.paths import FIXTURES
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.synthetic import keras3_log
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.widgets.key_footer import KeyFooter

FIXTURES = FIXTURES / "training"


def text_of(app: TfgpuApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def test_tab_shows_progress_epochs_problems_and_raises_header_alerts(tmp_path):
    log = tmp_path / "train.log"
    shutil.copy(FIXTURES / "keras3_nan_killed.log", log)
    app = TfgpuApp(Settings(demo=True, log_path=log, log_path_given=True), initial_tab="training")
    async with app.run_test(size=(140, 45)) as pilot:
        table = app.query_one("#training-epochs", DataTable)
        await wait_until(pilot, lambda: table.row_count == 2)
        cells = dict(zip(table.shown_columns, (str(c) for c in table.get_row_at(1)), strict=True))
        assert {name: cells[name] for name in ("epoch", "time", "loss")} == {
            "epoch": "2/4",
            "time": "3s",
            "loss": "nan",
        }
        assert table.shown_columns[:4] == ["epoch", "loss", "val_loss", "time"]  # by priority
        status = text_of(app, "#training-status")
        assert "Epoch 3/4" in status and "step 10/100" in status and "stopped" in status
        problems = text_of(app, "#training-problems")
        assert "Loss is NaN" in problems and "Training killed" in problems and "clipnorm" in problems
        wanted = {"training_nan_loss", "training_killed"}
        await wait_until(pilot, lambda: wanted <= {alert.kind for alert in app.all_alerts})


async def test_missing_file_is_waited_for_then_followed_live(tmp_path):
    log = tmp_path / "train.log"
    app = TfgpuApp(Settings(demo=True, log_path=log, log_path_given=True), initial_tab="training")
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_until(pilot, lambda: "waiting for the file" in text_of(app, "#training-status"))
        log.write_text(keras3_log(4, 100, 10, done_epochs=1, partial_steps=50), encoding="utf-8")
        bar = app.query_one("#training-steps", ProgressBar)
        await wait_until(pilot, lambda: bar.total == 100 and bar.progress == 50)
        assert "Epoch 2/4" in text_of(app, "#training-status")
        assert "50/100 ━" in text_of(app, "#training-lines")
        with log.open("a", encoding="utf-8") as handle:
            handle.write("\b\r100/100 ━━━━━━━━━━━━━━━━━━━━ 4s 42ms/step - loss: 0.5000 - val_loss: 0.6000\n")
        table = app.query_one("#training-epochs", DataTable)
        await wait_until(pilot, lambda: table.row_count == 2)


async def test_o_opens_another_file_and_escape_cancels(tmp_path):
    first = tmp_path / "missing.log"
    app = TfgpuApp(Settings(demo=True, log_path=first, log_path_given=True), initial_tab="training")
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        await pilot.press("o")
        field = app.query_one("#training-path", Input)
        await wait_until(pilot, lambda: field.has_focus)
        assert field.value == str(first)
        footer = app.query_one(KeyFooter)
        await wait_until(pilot, lambda: "esc Close" in str(footer.render()))  # where esc works, it shows
        await pilot.press("escape")
        await wait_until(pilot, lambda: not field.has_class("-open"))
        await wait_until(pilot, lambda: "esc" not in str(footer.render()))
        await pilot.press("o")
        await wait_until(pilot, lambda: field.has_focus)
        field.value = str(FIXTURES / "keras2_verbose2.log")
        await pilot.press("enter")
        table = app.query_one("#training-epochs", DataTable)
        await wait_until(pilot, lambda: table.row_count == 3)
        assert "finished" in text_of(app, "#training-status")
        assert "keras2_verbose2.log" in text_of(app, "#training-status")
        await pilot.press("o")
        await wait_until(pilot, lambda: field.has_focus)
        field.value = str(tmp_path)
        await pilot.press("enter")
        await wait_until(pilot, lambda: "is a directory" in str(field.border_subtitle))
        assert field.has_class("-open") and "keras2_verbose2.log" in text_of(app, "#training-status")


async def test_hidden_tab_keeps_alerts_current_and_draws_when_shown(tmp_path):
    log = tmp_path / "train.log"
    shutil.copy(FIXTURES / "keras3_nan_killed.log", log)
    app = TfgpuApp(Settings(demo=True, log_path=log, log_path_given=True), initial_tab="monitor")
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_until(pilot, lambda: "training_killed" in {alert.kind for alert in app.all_alerts}, 60)
        assert "Epoch 3/4" not in text_of(app, "#training-status")  # not drawn while hidden
        await pilot.press("3")
        await wait_until(pilot, lambda: "Epoch 3/4" in text_of(app, "#training-status"), 60)
        await wait_until(pilot, lambda: app.query_one("#training-epochs", DataTable).row_count == 2)
