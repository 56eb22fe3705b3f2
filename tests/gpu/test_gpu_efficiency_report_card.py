"""A training run's report card (gpu/report_card.py): one line of efficiency over what was watched, with the
biggest win; and notify's "finished" message carrying it for a real tensorflow-cpu job writing its log on a
scripted H100 (fakenvml)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.gpu_alert_helpers import device, proc
from tests.helpers.waiting import wait_for
from tfgpu_tui.cli import main
from tfgpu_tui.gpu.efficiency import Thresholds
from tfgpu_tui.gpu.model import Activity, DeviceSample, Snapshot, no_activity
from tfgpu_tui.gpu.report_card import RunWatch
from tfgpu_tui.gpu.report_card_store import NOT_WATCHED, card_for, save_card, store_path

BAR = "10/10 [==============================] - 1s 100ms/step"


def h100(util: float, sm: float | None, tensor: float | None, events: int = 0) -> DeviceSample:
    activity = (
        Activity("gpm", sm_active=sm, tensor_active=tensor) if sm is not None else no_activity("no GPM")
    )
    base = device(util=util, used=9216.0, total=81920.0)
    return replace(base, activity=activity, clock_events=events, compute_capability=(9, 0))


def watched(readings: list[DeviceSample], pid: int = 7, mib: float = 9216.0, tf: bool = True) -> RunWatch:
    watch = RunWatch(Thresholds())
    job = proc(pid, mib=mib, tensorflow_loaded=tf)
    for second, reading in enumerate(readings):
        watch.observe(Snapshot(second * 60.0, False, None, None, [reading], [job], None, []), {pid})
    return watch


def test_an_fp32_run_gets_its_means_peak_and_the_mixed_precision_win() -> None:
    card = watched([h100(95, 70, 1), h100(97, 72, 0), h100(96, 68, 2), h100(94, 71, 0)]).card(7)
    assert card is not None
    assert card.startswith("Efficiency over the 3 min watched on GPU 0: utilisation 96 % mean")
    assert "SM activity 70 %" in card and "tensor cores 1 %" in card
    assert "peak memory 9.0 GiB of 80 GiB (11 %)" in card and "throttled 0 % of the busy time" in card
    assert "Biggest win: tensor cores idle 100 % of the run: try mixed precision" in card


def test_a_healthy_run_has_no_win_and_a_gpu_without_gpm_says_so() -> None:
    healthy = watched([h100(96, 80, 60)] * 4, mib=60000.0).card(7)
    assert healthy is not None and "Biggest win" not in healthy
    without = watched([h100(96, None, None)] * 4, mib=60000.0).card(7)
    assert without is not None and "SM activity not measurable on this GPU" in without
    assert "tensor cores" not in without and "Biggest win" not in without


def test_throttling_and_busy_but_idle_sms_are_named_by_their_share() -> None:
    capped = watched([h100(95, 80, 60, events=0x4)] * 3 + [h100(95, 80, 60)], mib=60000.0).card(7)
    assert capped is not None and "throttled 75 % of the busy time" in capped
    assert "Biggest win: throttled 75 % of the busy time: check the power limit and cooling" in capped
    small = watched([h100(97, 8, 0)] * 4, mib=60000.0).card(7)
    assert small is not None and "Biggest win: SMs mostly idle 100 % of the busy time" in small


def test_a_small_job_on_a_big_card_is_told_to_move() -> None:
    card = watched([h100(30, 9, 5)] * 4, mib=2048.0).card(7)
    assert card is not None and "Biggest win: peak memory 2 % of the card and SM activity 9 %" in card
    busy = watched([h100(95, 80, 60)] * 4, mib=2048.0).card(7)  # little memory, but the SMs work
    assert busy is not None and "Biggest win" not in busy


def test_too_little_watching_or_another_process_gives_no_card() -> None:
    assert watched([h100(95, 70, 0)] * 2).card(7) is None
    assert watched([h100(95, 70, 0)] * 4).card(8) is None
    assert watched([h100(95, 70, 0)] * 4, tf=False).card(7) is None  # not a training job


# -- notify: the "finished" message of a real TensorFlow job's run -------------------------------------------
# Keras's progress on its stdout (the log, as `python train.py > train.log`); "ready" on stderr
WRITER = """
import sys, tensorflow
bar = sys.argv[1]
print(f"Epoch 1/2\\n{bar} - loss: 0.5000", flush=True)
print("ready", file=sys.stderr, flush=True)
sys.stdin.readline()
print(f"Epoch 2/2\\n{bar} - loss: 0.2500", flush=True)
sys.stdin.readline()
"""


@pytest.mark.tf
def test_notify_finished_message_carries_the_report_card(scenario, tmp_path: Path) -> None:
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.notify.events import EventKind
    from tfgpu_tui.notify.gpu_events import GpuEvents
    from tfgpu_tui.notify.logs import LogSet
    from tfgpu_tui.notify.state import Ledger
    from tfgpu_tui.notify.training_events import TrainingEvents
    from tfgpu_tui.notify.watcher import Notifier
    from tfgpu_tui.settings import Settings
    from tfgpu_tui.training.checkpoints import CheckpointPolicy

    log = tmp_path / "train.log"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    with log.open("w") as out:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, BAR], stdin=subprocess.PIPE, stdout=out,
                                  stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    sent: list = []
    sampler = Sampler(Settings(), NvmlSource(), HostInspector(background=False))
    try:
        assert writer.stderr is not None
        wait_for(lambda: writer.stderr.readline().strip() == "ready", 60)  # type: ignore[union-attr]
        scenario(
            'device name="NVIDIA H100 80GB HBM3" total_mib=81559 util=95 gpm_sm=70 gpm_tensor=0.5\n'
            f"process gpu=0 pid={writer.pid} used_mib=9216 sm=95\n"
        )
        runs = RunWatch(Thresholds())
        notifier = Notifier(GpuEvents("box", 3600), TrainingEvents("box", 3600),
                            LogSet([log], CheckpointPolicy(5, 30)), Ledger(None), (EventKind.FINISHED,),
                            sent.append, lambda line: None, runs)  # fmt: skip

        def watched_until(condition) -> None:  # notify's loop: a snapshot, then the logs and the events
            def step() -> bool:
                notifier.step(sampler.sample())
                return bool(condition())

            wait_for(step, 60)

        # enough of the run seen for a card, with GPM figures (a GPM reading needs 100 ms after the last)
        watched_until(lambda: writer.pid in runs.runs and runs.runs[writer.pid].sm_active.count >= 3)
        assert sent == [] and writer.stdin is not None
        writer.stdin.write("finish\n")
        writer.stdin.flush()
        watched_until(lambda: sent)
        [finished] = sent
        assert finished.kind is EventKind.FINISHED and "epoch 2/2" in finished.message
        assert "Efficiency over the" in finished.message
        assert "on GPU 0: utilisation 95 % mean" in finished.message
        assert "SM activity 70 %, tensor cores 0 %" in finished.message
        assert "Biggest win: tensor cores idle 100 % of the run: try mixed precision" in finished.message
        kept = log_json(log)["efficiency"]  # notify kept the card where `log` reads it
        assert kept["card"] in finished.message and "SM activity 70 %" in kept["card"]
    finally:
        sampler.close()
        writer.kill()
        writer.wait()


@pytest.mark.tf
async def test_the_training_tab_shows_the_ended_runs_report_card(scenario, tmp_path: Path) -> None:
    from textual.widgets import Static

    from tests.helpers.waiting import wait_until
    from tfgpu_tui.settings import Settings
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.training import TrainingTab

    log = tmp_path / "train.log"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    with log.open("w") as out:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, BAR], stdin=subprocess.PIPE, stdout=out,
                                  stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        assert writer.stderr is not None and writer.stdin is not None
        wait_for(lambda: writer.stderr.readline().strip() == "ready", 60)  # type: ignore[union-attr]
        scenario(
            'device name="NVIDIA H100 80GB HBM3" total_mib=81559 util=95 gpm_sm=70 gpm_tensor=0.5\n'
            f"process gpu=0 pid={writer.pid} used_mib=9216 sm=95\n"
        )
        settings = Settings(interval=0.25, log_path=log, log_path_given=True)
        app = TfgpuApp(settings, initial_tab="training")
        async with app.run_test(size=(120, 40)) as pilot:
            tab = app.query_one(TrainingTab)

            def context() -> str:
                return str(tab.query_one("#training-context", Static).render())

            await wait_until(pilot, lambda: f"PID {writer.pid}" in context(), timeout=60)
            runs = tab.runs.runs
            await wait_until(pilot, lambda: writer.pid in runs and runs[writer.pid].sm_active.count >= 3, 60)
            assert "efficiency" not in context()  # the run has not ended
            writer.stdin.write("finish\n")
            writer.stdin.flush()
            await wait_until(pilot, lambda: "efficiency Efficiency over the" in context(), timeout=60)
            assert "SM activity 70 %, tensor cores 0 %" in " ".join(context().split())
            await wait_until(pilot, lambda: card_for(log) is not None, timeout=60)  # kept for `log`
        card = log_json(log)["efficiency"]["card"]
        assert card.startswith("Efficiency over the") and "SM activity 70 %" in card
    finally:
        writer.kill()
        writer.wait()


def log_json(log: Path) -> dict:
    """What `tfgpu-tui log --json LOG` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["log", "--json", str(log)])
    return json.loads(out.getvalue())


def test_log_says_why_it_has_no_efficiency_line_and_a_store_not_ours_counts_as_none(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("Epoch 1/1\n")
    assert log_json(log)["efficiency"] == {"card": None, "kept_at": None, "why_none": NOT_WATCHED}
    save_card(log, "Efficiency over the \x1b[2Jrun", now=100.0)
    assert log_json(log)["efficiency"] == {
        "card": "Efficiency over the run",
        "kept_at": 100.0,
        "why_none": None,
    }
    store = store_path()
    for text in ("not json", json.dumps({str(log): {"card": "\x1b[2J", "at": 1}}), " " * (256 * 1024 + 1)):
        store.write_text(text)
        assert card_for(log) is None, text
