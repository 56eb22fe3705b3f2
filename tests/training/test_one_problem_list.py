"""One problem list (training/log_state.py): on a log whose writer dies and whose newest checkpoint is stale,
`log --json`, the Training tab, the exporter's alert series and notify's events name the same problems."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.helpers.waiting import wait_for, wait_until
from tfgpu_tui.export import names
from tfgpu_tui.export.collector import Exporter
from tfgpu_tui.notify.events import EventKind
from tfgpu_tui.notify.logs import LogSet
from tfgpu_tui.notify.training_events import TrainingEvents
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.checkpoints import CheckpointPolicy
from tfgpu_tui.training.synthetic import keras3_log
from tfgpu_tui.ui.app import TfgpuApp

pytestmark = pytest.mark.e2e  # a real writer process, killed mid-epoch

#: Writes 7 finished epochs and half of the 8th (argv[1]), then keeps redrawing its progress line.
WRITER = (
    "import sys, time\n"
    "text = open(sys.argv[1], 'rb').read()\n"
    "out = sys.stdout.buffer\n"
    "out.write(text)\n"
    "update = text[text.rindex(b'\\r'):]\n"
    "while True:\n"
    "    out.flush()\n"
    "    time.sleep(0.5)\n"
    "    out.write(update)\n"
)
#: A problem id in the Training tab's problems pane: ``Title (ID, line N): ...``.
SHOWN_ID = re.compile(r"\(([A-Z][A-Z_]+)[,)]")


@pytest.fixture
def stale_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    """A live writer of tmp_path/train.log, 7 epochs past a checkpoint written two hours ago."""
    source = tmp_path / "source.txt"
    source.write_text(keras3_log(10, 100, 10, done_epochs=7, partial_steps=50), encoding="utf-8")
    checkpoint = tmp_path / "model-old.keras"
    checkpoint.write_bytes(b"weights")
    two_hours_ago = time.time() - 7200
    os.utime(checkpoint, (two_hours_ago, two_hours_ago))
    log = tmp_path / "train.log"
    with log.open("w") as handle:
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(source)], stdout=handle, stderr=subprocess.DEVNULL
        )
    wait_for(lambda: log.stat().st_size >= source.stat().st_size)
    yield child, log
    child.kill()
    child.wait()


class FollowJson:
    """`tfgpu-tui log --follow --json LOG` in a child: the problem ids its stream has named so far."""

    def __init__(self, log: Path) -> None:
        command = [sys.executable, "-m", "tfgpu_tui", "log", "--follow", "--json", str(log)]
        self.child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.ids: set[str] = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.child.stdout is not None
        for line in self.child.stdout:
            item = json.loads(line)
            if item["type"] == "state":
                self.ids |= {problem["id"] for problem in item["problems"]}
            elif item["type"] == "problem":
                self.ids.add(item["id"])

    def close(self) -> None:
        self.child.kill()
        self.child.wait()


def json_ids(log: Path) -> set[str]:
    """The problem ids of a one-off `tfgpu-tui log --json LOG`."""
    command = [sys.executable, "-m", "tfgpu_tui", "log", "--json", str(log)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    return {problem["id"] for problem in json.loads(done.stdout)["problems"]}


def exporter_ids(exporter: Exporter, log: Path) -> set[str]:
    """The problems of `log` among the exporter's ``tfgpu_alert_active`` series (kind ``training_<id>``)."""
    families = [family for family in exporter.collect() if family.name == names.ALERT]
    return {
        sample.labels["kind"].removeprefix("training_").upper()
        for family in families
        for sample in family.samples
        if sample.labels["subject"] == str(log)
    }


def notify_ids(logs: LogSet, events: TrainingEvents) -> tuple[set[str], set[EventKind]]:
    """The problems notify's events for the log name, and the events' kinds."""
    states, _ = logs.read()
    found = [event for state in states for event in events.evaluate(state)]
    return {event.problem for event in found}, {event.kind for event in found}


def tab_ids(app: TfgpuApp) -> set[str]:
    """The problem ids the Training tab's problems pane shows."""
    return set(SHOWN_ID.findall(str(app.query_one("#training-problems", Static).render())))


async def test_a_dead_writer_and_a_stale_checkpoint_are_the_same_problems_everywhere(
    stale_run: tuple[subprocess.Popen, Path],
) -> None:
    writer, log = stale_run
    follow_json = FollowJson(log)
    exporter = Exporter(Settings(demo=True), logs=[log], hostname="node-a")
    exporter.start()
    logs = LogSet([log], CheckpointPolicy(), discover=lambda: [])
    events = TrainingEvents("node-a", stall_seconds=3600)
    app = TfgpuApp(Settings(log_path=log, log_path_given=True), initial_tab="training")
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            # The writer lives: every reader names the stale checkpoint, and only it.
            await wait_until(pilot, lambda: "NO_CHECKPOINT" in tab_ids(app))
            wait_for(lambda: "NO_CHECKPOINT" in exporter_ids(exporter, log))
            wait_for(lambda: "NO_CHECKPOINT" in follow_json.ids)
            alive = {"NO_CHECKPOINT"}
            assert json_ids(log) == alive
            assert tab_ids(app) == alive and exporter_ids(exporter, log) == alive and follow_json.ids == alive
            assert notify_ids(logs, events) == (alive, {EventKind.NO_CHECKPOINT})

            # The writer dies mid-epoch without a word: each names its death (STALL) beside the checkpoint.
            writer.kill()
            writer.wait()
            await wait_until(pilot, lambda: "STALL" in tab_ids(app))
            wait_for(lambda: "STALL" in exporter_ids(exporter, log))
            wait_for(lambda: "STALL" in follow_json.ids)
            dead = {"STALL", "NO_CHECKPOINT"}
            assert tab_ids(app) == dead and exporter_ids(exporter, log) == dead and follow_json.ids == dead
            assert wait_for(lambda: notify_ids(logs, events)[0] == dead)
            assert notify_ids(logs, events)[1] == {EventKind.WRITER_DIED, EventKind.NO_CHECKPOINT}
    finally:
        follow_json.close()
        exporter.close()
        logs.close()
