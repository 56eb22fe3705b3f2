"""Issue 41 with the real thing: two real TensorFlow ranks under a real Open MPI ``mpirun --tag-output``
(one raises), and a real TensorFlow custom loop (tf.GradientTape) that diverges to NaN and prints its own
lines. Each output goes to a file as ``... > train.log 2>&1`` does, and `tfgpu-tui log` reads it back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfgpu_tui.cli import main

pytestmark = [pytest.mark.e2e, pytest.mark.tf]

HANG_GUARD_SECONDS = 300  # two TensorFlow imports on a loaded 2-core machine; a hang fails, never blocks

RANK_SCRIPT = textwrap.dedent(
    """
    import os
    import numpy as np
    import keras

    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    keras.utils.set_random_seed(rank)
    x = np.random.rand(64, 4).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    layers = [keras.Input((4,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)]
    model = keras.Sequential(layers)
    model.compile("adam", "mse")
    model.fit(x, y, epochs=2, batch_size=16, verbose=2)
    if rank == 1:
        raise ValueError("rank 1 found an empty data shard")
    """
)

NAN_LOOP_SCRIPT = textwrap.dedent(
    """
    import tensorflow as tf

    x = tf.random.stateless_normal((32, 3), seed=(1, 2))
    y = tf.reduce_sum(x, axis=1, keepdims=True) * 100.0
    w = tf.Variable(tf.ones((3, 1)))
    optimizer = tf.keras.optimizers.SGD(learning_rate=1e6)  # far too high: the loss overflows, then is NaN
    for step in range(1, 41):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
        print(f"epoch 1, step {step}: loss {float(loss):.4f}", flush=True)
    """
)


def run_to_log(command: list[str], log: Path, unbuffered: bool = True) -> None:
    """Run `command` with stdout and stderr into `log` (CPU only), within the hang guard. Buffered, Python
    writes stderr a whole line at a time: Open MPI then tags whole lines, never one rank's line in pieces."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    with log.open("wb") as handle:
        subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, timeout=HANG_GUARD_SECONDS)


def log_json(log: Path, capsys) -> tuple[int, dict]:
    code = main(["log", "--json", str(log)])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun (Debian's openmpi-bin) is not installed")
def test_a_rank_that_raises_under_mpirun_is_named_with_its_error_and_rank(tmp_path, capsys):
    script = tmp_path / "train_rank.py"
    script.write_text(RANK_SCRIPT)
    log = tmp_path / "train.log"
    mpirun = ["mpirun", "--tag-output", "--allow-run-as-root", "--oversubscribe", "-np", "2"]
    run_to_log([*mpirun, sys.executable, str(script)], log, unbuffered=False)
    text = log.read_text(errors="replace")
    assert "[1,1]<stderr>:ValueError: rank 1 found an empty data shard" in text, text[-3000:]
    code, data = log_json(log, capsys)
    assert code == 1
    error = next(p for p in data["problems"] if p["id"] == "EXCEPTION")
    assert error["rank"] == 1 and error["severity"] == "critical"
    assert "ValueError: rank 1 found an empty data shard" in error["message"]
    # both ranks trained two epochs: the count is one rank's, not their sum, and ranks did not mix
    assert [e["epoch"] for e in data["epochs"]] == [1, 2] and len(data["runs"]) == 1


def test_a_custom_loop_that_diverges_is_reported_as_nan(tmp_path, capsys):
    script = tmp_path / "loop.py"
    script.write_text(NAN_LOOP_SCRIPT)
    log = tmp_path / "loop.log"
    run_to_log([sys.executable, str(script)], log)
    text = log.read_text(errors="replace")
    assert "loss nan" in text, text[-3000:]  # the loop really diverged and printed it
    code, data = log_json(log, capsys)
    assert code == 1
    nan = next(p for p in data["problems"] if p["id"] == "NAN_LOSS")
    assert nan["severity"] == "critical" and ("nan" in nan["message"] or "inf" in nan["message"])
    assert data["current"]["epoch"] == 1 and data["current"]["step"] == 40  # `epoch 1, step N` is clear
