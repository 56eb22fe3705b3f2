"""The Training tab's plots (issue 24): round, evenly spaced ticks with labels alike, and a single point named
in the title rather than drawn on a made-up range (a crashed log's in-epoch plot)."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers.paths import FIXTURES
from tests.helpers.waiting import wait_until
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.widgets.training_plots import StepLossPlot, nice_ticks, tick_labels

CRASHED = FIXTURES / "training" / "keras3_oom_traceback.log"


@pytest.mark.parametrize(
    ("low", "high"),
    [(1.57, 2.4), (0.0312, 0.0411), (139.0, 139.0), (2.4012, 2.4012), (-1.2345, 2.3182), (0.6931, 0.6932)],
)
def test_ticks_are_round_evenly_spaced_and_cover_the_values(low, high):
    ticks = nice_ticks(low, high)
    gaps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:], strict=False)}
    assert len(gaps) == 1 and 3 <= len(ticks) <= 6
    assert ticks[0] <= low and ticks[-1] >= high
    labels = tick_labels(ticks)
    assert len({len(label.split(".")[-1]) for label in labels if "." in label}) <= 1  # decimals alike
    assert len(set(labels)) == len(labels)  # every label readable as its own value


def test_integer_ticks_for_steps():
    assert nice_ticks(1, 938, integers=True) == [0, 200, 400, 600, 800, 1000]
    assert nice_ticks(1, 3, integers=True) == [1, 2, 3]


async def test_a_crashed_log_with_one_update_draws_no_made_up_range(tmp_path):
    log = tmp_path / "oom.log"
    shutil.copy(CRASHED, log)
    app = TfgpuApp(Settings(demo=True, log_path=log, log_path_given=True), initial_tab="training")
    async with app.run_test(size=(140, 45)) as pilot:
        plot = app.query_one(StepLossPlot)
        await wait_until(pilot, lambda: hasattr(plot, "points_drawn"), timeout=60)
        assert plot.points_drawn == 0
        figure = plot.plt.build()
        assert "one update, no curve yet" in figure and "2.4012 at step 1" in figure
        assert "69.5" not in figure and "208.5" not in figure
