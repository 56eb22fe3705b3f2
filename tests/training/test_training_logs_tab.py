"""Real-world log formats in the Training tab: the evaluation beside the status, the learning rate column in
the epoch table and its marks on the loss plot, the checkpoint the log announced, several fit() runs."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import DataTable, Static

from tests.helpers.paths import FIXTURES
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.widgets.training_plots import EpochLossPlot

LOGS = FIXTURES / "logs"


def text_of(app: TfgpuApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


def app_for(tmp_path: Path, fixture: str) -> TfgpuApp:
    log = tmp_path / "train.log"
    shutil.copy(LOGS / fixture, log)
    settings = Settings(demo=True, log_path=log, log_path_given=True, checkpoints_dir=tmp_path)
    return TfgpuApp(settings, initial_tab="training")


async def test_evaluation_is_shown_apart_and_the_epoch_table_keeps_the_epochs(tmp_path):
    app = app_for(tmp_path, "tfkeras2_evaluate_predict.log")
    async with app.run_test(size=(140, 45)) as pilot:
        table = app.query_one("#training-epochs", DataTable)
        await wait_until(
            pilot, lambda: table.row_count == 2 and "evaluation" in text_of(app, "#training-status")
        )
        status = text_of(app, "#training-status")
        assert "evaluation: loss 0.4391  accuracy 0.8544" in status and "step 40/40" in status


async def test_learning_rate_changes_get_a_column_and_plot_marks(tmp_path):
    app = app_for(tmp_path, "reduce_lr_on_plateau.log")
    async with app.run_test(size=(160, 45)) as pilot:
        table = app.query_one("#training-epochs", DataTable)
        await wait_until(pilot, lambda: table.row_count == 6)
        assert "lr→" in table.shown_columns and "fit" in table.shown_columns
        column = table.shown_columns.index("lr→")
        assert [str(table.get_row_at(row)[column]) for row in range(6)] == ["", "5e-05", "", "", "0.0012", ""]
        plot = app.query_one(EpochLossPlot)
        await wait_until(pilot, lambda: getattr(plot, "marked_epochs", None) == [2])  # the last run's change


async def test_the_checkpoint_the_log_announced_is_the_newest(tmp_path):
    app = app_for(tmp_path, "checkpoints_announced.log")
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(
            pilot, lambda: "announced in the log at epoch 3" in text_of(app, "#training-context")
        )
        context = text_of(app, "#training-context")
        assert "ckpt-3" in context and "none found" not in context
        assert "NO_CHECKPOINT" not in text_of(app, "#training-problems")
