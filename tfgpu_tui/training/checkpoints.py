"""Find the checkpoints a training run writes, and say when it has gone too long without one."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

CHECKPOINT_SUFFIXES = (".keras", ".h5", ".hdf5", ".index")
#: TensorFlow's checkpoint index file (tf.train.Checkpoint / Keras 2 `save_weights` in TF format).
CHECKPOINT_INDEX_NAME = "checkpoint"
_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv", "site-packages", ".ipynb_checkpoints"}


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint file and when it was last written."""

    path: Path
    modified: float
    size_bytes: int

    def age_seconds(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.modified)


def is_checkpoint(name: str) -> bool:
    """Whether a file name looks like a Keras/TensorFlow checkpoint: `*.keras`, `*.h5` (`*.weights.h5` too),
    a TF checkpoint's `*.index` file, or the `checkpoint` index that names the latest one."""
    return name == CHECKPOINT_INDEX_NAME or name.endswith(CHECKPOINT_SUFFIXES) or ".ckpt" in name


def find_checkpoints(
    roots: Iterable[Path], max_depth: int = 3, max_entries: int = 20_000
) -> list[Checkpoint]:
    """Checkpoint files under `roots` (each searched `max_depth` levels deep), newest first.

    Bounded: at most `max_entries` directory entries are looked at, so a huge tree never stalls the UI.
    """
    found: dict[Path, Checkpoint] = {}
    budget = max_entries
    for root in roots:
        stack = [(root, 0)]
        while stack and budget > 0:
            directory, depth = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                budget -= 1
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if depth < max_depth and entry.name not in _SKIP_DIRS:
                            stack.append((Path(entry.path), depth + 1))
                    elif entry.is_file() and is_checkpoint(entry.name):
                        stat = entry.stat()
                        path = Path(entry.path).resolve()
                        found[path] = Checkpoint(path, stat.st_mtime, stat.st_size)
                except OSError:
                    continue
    return sorted(found.values(), key=lambda checkpoint: checkpoint.modified, reverse=True)


@dataclass(frozen=True)
class CheckpointPolicy:
    """When a run without a fresh checkpoint deserves a warning (defaults: 5 epochs or 30 minutes)."""

    max_epochs: int = 5
    max_minutes: float = 30.0


@dataclass(frozen=True)
class CheckpointStatus:
    """The newest checkpoint, and the warning (empty when none is due)."""

    newest: Checkpoint | None
    warning: str


def checkpoint_status(
    newest: Checkpoint | None,
    epoch_end_times: list[float],
    training_started: float | None,
    last_activity: float | None,
    policy: CheckpointPolicy,
) -> CheckpointStatus:
    """Warn when training has run more than `policy.max_epochs` epochs or `policy.max_minutes` since the
    newest checkpoint (or since it started, when there is none).

    Args:
        newest: the newest checkpoint found, or None.
        epoch_end_times: wall-clock times at which epochs ended, oldest first.
        training_started: when training started (first log activity), or None if unknown.
        last_activity: when the log last grew (training time stops counting when it stops), or None.
        policy: the thresholds.
    """
    since = newest.modified if newest else training_started
    if since is None or last_activity is None:
        return CheckpointStatus(newest, "")
    epochs_since = sum(1 for end in epoch_end_times if end > since)
    minutes_since = (last_activity - since) / 60.0
    what = "since the last checkpoint" if newest else "and no checkpoint has been written"
    if epochs_since > policy.max_epochs:
        return CheckpointStatus(newest, f"{epochs_since} epochs {what}")
    if minutes_since > policy.max_minutes:
        return CheckpointStatus(newest, f"{minutes_since:.0f} minutes of training {what}")
    return CheckpointStatus(newest, "")


CHECKPOINT_FIX = (
    "Add a ModelCheckpoint callback so a reclaimed instance does not lose the run:\n"
    "    keras.callbacks.ModelCheckpoint('ckpt/epoch-{epoch:03d}.keras', save_freq='epoch')\n"
    "and copy checkpoints off the machine."
)
