"""The notifier: for each snapshot of the feed, read the followed logs (a round of their LogFeed), find the
events that hold, and hand the new ones (sent once while they hold, per the ledger) to `on_event`. Runs in
notify's main thread, never in the feed's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.gpu.report_card import RunWatch
from tfgpu_tui.gpu.report_card_store import save_card
from tfgpu_tui.notify.events import Event, EventKind
from tfgpu_tui.notify.gpu_events import GpuEvents
from tfgpu_tui.notify.logs import LogSet
from tfgpu_tui.notify.state import Ledger
from tfgpu_tui.notify.training_events import TrainingEvents
from tfgpu_tui.training.log_state import LogState


class Notifier:
    """Events from the GPUs and the logs, once each.

    Args:
        gpus: GPU events from snapshots.
        training: training events from log readings.
        logs: the followed logs.
        ledger: what was sent (and its state file).
        enabled: the event kinds to send.
        on_event: called with each event to send (print it, queue it for delivery).
        report: prints one line on stderr.
        runs: the report cards of the logs' writers (a run's "finished" message carries its own).
    """

    def __init__(
        self,
        gpus: GpuEvents,
        training: TrainingEvents,
        logs: LogSet,
        ledger: Ledger,
        enabled: tuple[EventKind, ...],
        on_event: Callable[[Event], None],
        report: Callable[[str], None],
        runs: RunWatch | None = None,
    ) -> None:
        self.gpus = gpus
        self.training = training
        self.logs = logs
        self.ledger = ledger
        self.enabled = frozenset(enabled)
        self.on_event = on_event
        self.report = report
        self.runs = runs
        self._save_failed = False
        self._cards_kept: dict[Path, str] = {}  # the report card kept for each log, once
        self._gpu_error_said = False

    def holding(self, snapshot: Snapshot) -> list[Event]:
        """Every enabled event that holds now."""
        readings, notices = self.logs.read()
        for notice in notices:
            self.report(notice)
        if snapshot.error is not None and not self._gpu_error_said:
            self._gpu_error_said = True
            self.report(f"no GPU to watch ({snapshot.error.message}); watching the training logs")
        events = self.gpus.evaluate(snapshot, self.logs.last_growth())
        writers = {reading.around.writer.pid for reading in readings if reading.around.writer is not None}
        if self.runs is not None and snapshot.error is None:
            self.runs.observe(snapshot, writers)
        for reading in readings:
            writer = reading.around.writer
            card = self.runs.card(writer.pid) if self.runs and writer else None
            events += self.training.evaluate(reading, card)
            if card is not None:
                self._keep_card(reading, card)
        return [event for event in events if event.kind in self.enabled]

    def _keep_card(self, reading: LogState, card: str) -> None:
        """An ended run's report card, kept once where `tfgpu-tui log` reads it (gpu/report_card_store.py)."""
        reason = reading.run.finish_reason()
        if reason is None or self._cards_kept.get(reading.path) == card:
            return
        self._cards_kept[reading.path] = card
        try:
            save_card(reading.path, card)
        except OSError as error:
            self.report(f"the run's efficiency line was not kept for `tfgpu-tui log`: {error}")

    def step(self, snapshot: Snapshot) -> list[Event]:
        """Handle one snapshot; returns the events sent for it."""
        before = dict(self.ledger.sent)
        due = self.ledger.due(self.holding(snapshot))
        for event in due:
            self.on_event(event)
        self.ledger.mark_sent(due)
        if self.ledger.sent != before:
            self._save()
        return due

    def _save(self) -> None:
        try:
            self.ledger.save()
        except OSError as error:
            if not self._save_failed:
                self._save_failed = True
                self.report(
                    f"cannot write the state file {self.ledger.path} ({error.strerror or error}); "
                    "events may be sent again after a restart"
                )
            return
        if self._save_failed:
            self._save_failed = False
            self.report(f"the state file {self.ledger.path} is written again")
