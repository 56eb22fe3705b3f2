"""Checkpoint discovery on a temporary tree, and the no-checkpoint rule with its near misses."""

from __future__ import annotations

import os
from pathlib import Path

from tfgpu_tui.training.checkpoints import (
    Checkpoint,
    CheckpointPolicy,
    checkpoint_status,
    find_checkpoints,
    is_checkpoint,
)


def _touch(path: Path, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    os.utime(path, (mtime, mtime))


def test_finds_keras_h5_weights_and_index_files_newest_first(tmp_path: Path) -> None:
    _touch(tmp_path / "ckpt" / "epoch-001.keras", 1000)
    _touch(tmp_path / "ckpt" / "model.weights.h5", 3000)
    _touch(tmp_path / "tf_ckpts" / "checkpoint", 2000)
    _touch(tmp_path / "tf_ckpts" / "ckpt-3.index", 2500)
    _touch(tmp_path / "notes.txt", 4000)
    _touch(tmp_path / ".git" / "x.keras", 5000)
    found = find_checkpoints([tmp_path])
    names = [checkpoint.path.name for checkpoint in found]
    assert names == ["model.weights.h5", "ckpt-3.index", "checkpoint", "epoch-001.keras"]


def test_depth_limit_and_missing_root(tmp_path: Path) -> None:
    _touch(tmp_path / "a" / "b" / "c" / "d" / "deep.keras", 1000)
    assert find_checkpoints([tmp_path], max_depth=2) == []
    assert len(find_checkpoints([tmp_path], max_depth=4)) == 1
    assert find_checkpoints([tmp_path / "missing"]) == []


def test_same_file_from_two_roots_counted_once(tmp_path: Path) -> None:
    _touch(tmp_path / "run" / "m.keras", 1000)
    assert len(find_checkpoints([tmp_path, tmp_path / "run"])) == 1


def test_is_checkpoint() -> None:
    assert is_checkpoint("best.keras") and is_checkpoint("w.weights.h5") and is_checkpoint("checkpoint")
    assert not is_checkpoint("train.log") and not is_checkpoint("checkpoints.txt")


POLICY = CheckpointPolicy(max_epochs=5, max_minutes=30)


def test_warns_after_six_epochs_without_checkpoint_but_not_four() -> None:
    newest = Checkpoint(Path("m.keras"), modified=1000.0, size_bytes=1)
    ends_six = [1000.0 + 60 * i for i in range(1, 7)]
    warned = checkpoint_status(newest, ends_six, 900.0, ends_six[-1], POLICY)
    assert "6 epochs since the last checkpoint" in warned.warning
    ends_four = ends_six[:4]
    assert checkpoint_status(newest, ends_four, 900.0, ends_four[-1], POLICY).warning == ""


def test_warns_on_minutes_when_epochs_are_long() -> None:
    newest = Checkpoint(Path("m.keras"), modified=0.0, size_bytes=1)
    assert "31 minutes" in checkpoint_status(newest, [], 0.0, 31 * 60.0, POLICY).warning
    assert checkpoint_status(newest, [], 0.0, 29 * 60.0, POLICY).warning == ""


def test_no_checkpoint_at_all_counts_from_training_start() -> None:
    ends = [100.0 * i for i in range(1, 8)]
    status = checkpoint_status(None, ends, 0.0, ends[-1], POLICY)
    assert "no checkpoint has been written" in status.warning
    assert checkpoint_status(None, [], None, None, POLICY).warning == ""
