"""A followed training log: the tail is parsed first (current state at once), the earlier part is scanned in
the background and merged, then new bytes are followed. One object, driven from one thread by `step()`."""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Iterator
from pathlib import Path

from tfgpu_tui.safe_files import special_file_refusal
from tfgpu_tui.training.encoding import detect_encoding, read_head
from tfgpu_tui.training.follow import (
    READ_BYTES,
    TAIL_BYTES,
    FileEvent,
    FileState,
    LogFollower,
    line_start_at_or_after,
)
from tfgpu_tui.training.history_scan import scan_history
from tfgpu_tui.training.keras_progress import EpochStart, parse_epoch_header
from tfgpu_tui.training.records import EndTimeSource
from tfgpu_tui.training.run import EpochRecord, TrainingRun

HEADER_SEARCH_BYTES = 64 * 1024 * 1024
LIVE_BYTES = 1024 * 1024  # of the unfinished last line, parsed update by update for the in-epoch curve


def last_epoch_header(path: Path, end: int) -> tuple[int, EpochStart] | None:
    """Where the last ``Epoch k/N`` line before `end` starts, and the header (searched backwards over at most
    64 MB); None when there is none."""
    if end <= 0:
        return None
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        low = max(0, end - HEADER_SEARCH_BYTES)
        found = view.rfind(b"Epoch ", low, end)
        while found >= 0:
            line_end = view.find(b"\n", found, min(end, found + 64))
            if line_end > 0:
                header = parse_epoch_header(view[found:line_end].decode("ascii", "replace"))
                if header is not None:
                    return view.rfind(b"\n", low, found) + 1 or low, header
            found = view.rfind(b"Epoch ", low, found)
    return None


def live_start(path: Path, floor: int) -> int:
    """Where the last (unfinished) line starts, at or after `floor`; for a line longer than `LIVE_BYTES`, the
    first update (just after a ``\r``) in its last `LIVE_BYTES`. 0 for a missing or empty file."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return 0
    if size <= floor:
        return floor
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        line_start = view.rfind(b"\n", floor, size) + 1 or floor
        if size - line_start <= LIVE_BYTES:
            return max(line_start, floor)
        update = view.find(b"\r", size - LIVE_BYTES, size)
        return update + 1 if update >= 0 else max(line_start, floor)


def estimate_end_times(epochs: list[EpochRecord], anchor: float | None) -> None:
    """Fill in `ended_at` of epochs read from history (replacing the frozen records in `epochs`): walking back
    from the next known end time (or from `anchor`, the file's modification time, for the last ones), each
    epoch ended its successor's duration earlier. Stops where a duration was not printed (those stay None
    until a known time follows). Such times are `EndTimeSource.ESTIMATED`: a guess, never shown as a fact."""
    for index in range(len(epochs) - 1, -1, -1):
        record = epochs[index]
        if record.ended_at is not None:
            anchor = record.ended_at - record.seconds if record.seconds is not None else None
            continue
        if anchor is None:
            continue
        epochs[index] = record._replace(ended_at=anchor, ended_at_source=EndTimeSource.ESTIMATED)
        anchor = anchor - record.seconds if record.seconds is not None else None


def modification_time(path: Path) -> float | None:
    """The file's modification time, None when it cannot be read."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def file_encoding(path: Path) -> str:
    """The encoding its first bytes show (`encoding.detect_encoding`; UTF-8 when the file is missing)."""
    if special_file_refusal(path) is not None:  # never open a FIFO or a device (the follower refuses it)
        return "utf-8"
    return detect_encoding(read_head(path))[0]


class LogWatch:
    """Follows one training log and keeps a `TrainingRun` of it.

    Args:
        path: the log (it may not exist yet).
        tail_bytes: an existing file larger than this is read from its last `tail_bytes` first; the rest is
            scanned by `step()` in chunks and merged when done.
    """

    def __init__(self, path: Path, tail_bytes: int = TAIL_BYTES) -> None:
        self.path = Path(path)
        self.tail_bytes = tail_bytes
        self.backfill_end = 0
        self.backfill_done = True
        self.last_growth = time.monotonic()
        self.last_growth_wall = time.time()
        self._modified_at_open: float | None = None
        self._caught_up = False  # the follower has read what the file held when opened
        self.events: list[FileEvent] = []
        self._history: TrainingRun | None = None
        self._scan: Iterator[int] | None = None
        self.backfill_offset = 0
        self._note_modification_time()
        self.encoding = file_encoding(self.path)
        start = self._tail_start()
        header = last_epoch_header(self.path, start) if start else None
        if header is not None:  # the tail starts with the epoch in progress there, header included
            start = header[0]
        self.run = TrainingRun(continues=header is not None and header[1].epoch > 1)
        # UTF-16 (PowerShell) logs are read by the follower from their start: the byte scans assume UTF-8.
        live = live_start(self.path, start) if self.encoding == "utf-8" else 0
        if live > start:
            for _ in scan_history(self.path, live, self.run, start=start):
                pass  # complete lines of the tail: only their final updates matter
        self.follower = LogFollower(
            self.path, start_offset=live, first_line_number=self.run.scanned_lines + 1
        )
        estimate_end_times(self.run.epochs, self._modified_at_open)
        if start:
            self.backfill_end = start
            self.backfill_done = False
            self._history = TrainingRun()
            self._scan = scan_history(self.path, start, self._history)

    def _note_modification_time(self) -> None:
        """An existing file last grew at its modification time, not when we opened it."""
        modified = modification_time(self.path)
        if modified is None:
            return
        self._modified_at_open = modified
        self.last_growth_wall = min(modified, self.last_growth_wall)
        self.last_growth -= max(0.0, time.time() - modified)

    @property
    def state(self) -> FileState:
        return self.follower.state

    def _tail_start(self) -> int:
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return 0
        if size <= self.tail_bytes or self.encoding != "utf-8":
            return 0
        return line_start_at_or_after(self.path, size - self.tail_bytes)

    def poll(self) -> bool:
        """Read new bytes into the run; True when anything changed."""
        update = self.follower.poll()
        known = len(self.run.epochs)
        for event in update.events:
            self.events.append(event)
            self.run.feed_file_event(event)
            if event in (FileEvent.TRUNCATED, FileEvent.ROTATED) and not self.backfill_done:
                self._cancel_backfill()
        self.run.feed_segments(update.segments)
        if update.partial and (update.bytes_read or update.events):  # else it is the one fed last time
            self.run.feed_partial(update.partial)
        epochs = self.run.epochs
        if self._caught_up:  # new bytes are growth, and an epoch ending in them ended now
            if update.bytes_read:
                self.last_growth = time.monotonic()
                self.last_growth_wall = time.time()
            for index in range(max(known - 1, 0), len(epochs)):
                if epochs[index].ended_at is None:
                    epochs[index] = epochs[index]._replace(
                        ended_at=self.last_growth_wall, ended_at_source=EndTimeSource.FOLLOWED
                    )
        elif update.bytes_read < READ_BYTES:  # the file as it was when opened is read: what follows is new
            self._caught_up = True
            estimate_end_times(epochs, modification_time(self.path) or self._modified_at_open)
        return bool(update.bytes_read or update.events)

    def backfill_step(self) -> bool:
        """Scan one chunk of the earlier part; merge when done. True when something changed."""
        if self.backfill_done or self._scan is None or self._history is None:
            return False
        try:
            self.backfill_offset = next(self._scan)
            return True
        except StopIteration:
            pass
        history = self._history
        self.run.absorb_history(history, history.scanned_lines)
        self.follower.splitter.line_number += history.scanned_lines
        estimate_end_times(self.run.epochs, self._modified_at_open)
        self._cancel_backfill()
        return True

    def _cancel_backfill(self) -> None:
        self.backfill_done = True
        self._scan = None
        self._history = None

    def read_all(self) -> None:
        """Read the whole file as it is now (the tail and the history)."""
        while self.poll():
            pass
        while not self.backfill_done:
            self.backfill_step()

    def epoch_end_times(self) -> list[float]:
        """When the epochs ended (wall clock), oldest first; epochs with an unknown time left out."""
        return [e.ended_at for e in self.run.epochs if e.ended_at is not None]

    def training_started(self) -> float | None:
        """When the latest fit() started, as far as the epoch times tell (its first epoch's end minus its
        duration); None before the first epoch ends."""
        epochs = self.run.latest_fit_epochs()
        if not epochs or epochs[0].ended_at is None:
            return None
        return epochs[0].ended_at - (epochs[0].seconds or 0.0)

    def idle_seconds(self) -> float:
        """Seconds since the file last grew."""
        return time.monotonic() - self.last_growth

    def close(self) -> None:
        self.follower.close()
