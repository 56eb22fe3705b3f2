"""Ground truth: real Keras training output, redirected to files as `python train.py > train.log 2>&1` does,
parsed back and compared with History.history (to the printed precision; exactly for JsonLinesLogger)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfgpu_tui.training.watch import LogWatch

pytestmark = [pytest.mark.e2e, pytest.mark.tf]

TRAIN_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import keras
    from tfgpu_tui.keras import JsonLinesLogger

    out = sys.argv[1]
    keras.utils.set_random_seed(1)
    x = np.random.rand(256, 6).astype("float32")
    y = (x.sum(axis=1) > 3).astype("int32")
    histories = {}
    for verbose in (1, 2):
        model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(2, activation="softmax")])
        model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
        # redirect fd 1 and 2 to the log file, exactly like a shell redirection
        sys.stdout.flush(); sys.stderr.flush()
        log = os.open(f"{out}/verbose{verbose}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        saved = os.dup(1), os.dup(2)
        os.dup2(log, 1); os.dup2(log, 2)
        logger = JsonLinesLogger(f"{out}/verbose{verbose}.jsonl", batch_size=16, batch_interval_seconds=0)
        history = model.fit(x, y, epochs=3, batch_size=16, validation_split=0.25, verbose=verbose,
                            callbacks=[logger])
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(saved[0], 1); os.dup2(saved[1], 2)
        histories[verbose] = history.history
    with open(f"{out}/history.json", "w") as handle:
        json.dump(histories, handle)
    """
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("keras_run")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1"}
    subprocess.run([sys.executable, "-c", TRAIN_SCRIPT, str(out)], check=True, env=env, timeout=300)
    return out


def parsed(path: Path):
    watch = LogWatch(path)
    watch.read_all()
    watch.close()
    return watch.run


def printed_tolerance(value: float) -> float:
    """Half a unit of the last printed digit: .4f above 1e-3, .4e below."""
    return 5e-5 if abs(value) > 1e-3 else max(abs(value) * 5e-5, 1e-12)


@pytest.mark.parametrize("verbose", [1, 2])
def test_progress_output_matches_history(trained, verbose):
    history = json.loads((trained / "history.json").read_text())[str(verbose)]
    run = parsed(trained / f"verbose{verbose}.log")
    assert [e.epoch for e in run.epochs] == [1, 2, 3]
    assert all(e.total_epochs == 3 and e.steps == 12 for e in run.epochs)
    assert set(run.epochs[0].metrics) == set(history)
    for name, values in history.items():
        for record, value in zip(run.epochs, values, strict=True):
            assert record.metrics[name] == pytest.approx(value, abs=printed_tolerance(value)), name
    assert run.current.finished
    assert not [p for p in run.problem_list() if p.severity.name != "INFO"]


@pytest.mark.parametrize("verbose", [1, 2])
def test_json_lines_logger_is_exact(trained, verbose):
    history = json.loads((trained / "history.json").read_text())[str(verbose)]
    run = parsed(trained / f"verbose{verbose}.jsonl")
    assert [e.epoch for e in run.epochs] == [1, 2, 3] and {e.source for e in run.epochs} == {"json"}
    for name, values in history.items():
        assert [e.metrics[name] for e in run.epochs] == values
    assert run.current.batch_size == 16 and run.current.samples_per_second
