"""notify beside real training: tensorflow-cpu children started with nohup, writing their logs, and notify
sending to a local json:// receiver (Apprise's JSON webhook). Exactly the expected events arrive, each once:
a run that finishes, a second that crashes with an out-of-memory traceback, a third that stalls; notify is
killed and restarted in the middle and repeats nothing. Nothing it writes holds the URL's token.

The children load TensorFlow and compile first, then wait for a go file, so each step is ordered by events
and the stall threshold (30 s) is only a generous bound on a tiny compiled epoch.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.nohup_child import start_nohup
from tests.helpers.notify_receiver import Receiver, receiving
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.tf]

TOKEN = "e2e-S3CRET-t0ken"
CHILD = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    import keras
    import tensorflow as tf

    mode, folder = sys.argv[1], sys.argv[2]
    keras.utils.set_random_seed(1)
    x = np.random.rand(64, 4).astype("float32")
    y = (x.sum(axis=1) > 2).astype("int32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4, activation="relu"),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)  # traced and compiled before the log gets a line
    open(os.path.join(folder, mode + ".ready"), "w").close()
    while not os.path.exists(os.path.join(folder, mode + ".go")):
        time.sleep(0.05)

    class Trouble(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 1 and mode == "crash":
                raise tf.errors.ResourceExhaustedError(
                    None, None, "OOM when allocating tensor with shape[8192,8192,64] and type float on "
                    "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc")
            if epoch == 1 and mode == "stall":
                sys.stdout.flush()
                time.sleep(3600)

    model.fit(x, y, epochs=3, batch_size=16, verbose=2, callbacks=[Trouble()])
    """
)
EVENTS = "finished,crashed,nan,stalled,writer_died"
MODES = ("finish", "crash", "stall")


def start_child(folder: Path, mode: str) -> int:
    """`nohup python child.py MODE FOLDER > MODE.log 2>&1 &` from a shell; returns the child's PID."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    return start_nohup(folder / "child.py", folder / f"{mode}.log", mode, str(folder), env=env)


class Notify:
    """One notify process and what it printed; `modes`: the children whose logs it follows by --log (none:
    it looks for the logs of running TensorFlow jobs itself). No settings file or $TFGPU_TUI_NOTIFY of the
    machine's reaches it."""

    def __init__(
        self,
        folder: Path,
        receiver: Receiver,
        name: str,
        modes: tuple[str, ...] = ("finish", "crash", "stall"),
    ) -> None:
        logs = [arg for mode in modes for arg in ("--log", str(folder / f"{mode}.log"))]
        args = [*logs, "--json", "--to", receiver.url, "--state", str(folder / "state.json")]
        args += ["--interval", "0.5", "--stall-minutes", "0.5", "--events", EVENTS, "--hostname", "trainbox"]
        self.out = folder / f"{name}.out"
        self.err = folder / f"{name}.err"
        env = {
            **os.environ,
            "XDG_RUNTIME_DIR": str(folder / "run"),
            "XDG_CONFIG_HOME": str(folder / "config"),
        }
        env.pop("TFGPU_TUI_NOTIFY", None)
        env.pop("TFGPU_TUI_CONFIG", None)
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tfgpu_tui", "notify", *args], stdout=out, stderr=err, env=env
            )
        wait_for(lambda: "watching" in self.err.read_text(), timeout=120)

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.read_text().splitlines()]


def ended(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_finished_crashed_stalled_each_once_across_a_restart(tmp_path: Path) -> None:
    (tmp_path / "child.py").write_text(CHILD)
    pids = {mode: start_child(tmp_path, mode) for mode in ("finish", "crash", "stall")}
    started: list[Notify] = []
    try:
        wait_for(lambda: all((tmp_path / f"{m}.ready").exists() for m in pids), timeout=600)
        with receiving(TOKEN) as receiver:

            def received(count: int) -> bool:
                return len(receiver.messages) >= count

            started.append(Notify(tmp_path, receiver, "first"))
            (tmp_path / "finish.go").touch()
            wait_for(lambda: received(1), timeout=300)
            started[0].process.kill()  # killed mid-run, no goodbye
            started[0].process.wait()
            started.append(Notify(tmp_path, receiver, "second"))
            (tmp_path / "crash.go").touch()
            wait_for(lambda: received(2), timeout=300)
            (tmp_path / "stall.go").touch()
            wait_for(lambda: received(3), timeout=300)
            assert not ended(pids["stall"])  # stalled, not dead
            started[1].process.send_signal(signal.SIGTERM)
            assert started[1].process.wait(timeout=60) == 0
            messages = receiver.messages
    finally:
        for notify in started:
            notify.process.kill()
            notify.process.wait()
        for pid in pids.values():
            if not ended(pid):
                os.kill(pid, signal.SIGKILL)
    titles = [m["title"] for m in messages]
    assert titles == [
        "Training finished on trainbox",
        "Training crashed on trainbox",
        "Training stalled on trainbox",
    ]
    finished, crashed, stalled = (m["message"] for m in messages)
    assert "epoch 3/3" in finished and "loss" in finished and "Wall time" in finished
    assert str(tmp_path / "finish.log") in finished
    assert "ran out of GPU memory" in crashed and "8192" in crashed and "batch" in crashed.lower()
    assert f"PID {pids['stall']}" in stalled and str(tmp_path / "stall.log") in stalled
    printed = [e["event"] for notify in started for e in notify.events()]
    assert printed == ["finished", "crashed", "stalled"]
    assert started[1].err.read_text().splitlines()[-1].startswith("tfgpu-tui notify: stopped by SIGTERM")
    written = [tmp_path / "state.json"] + [p for n in started for p in (n.out, n.err)]
    assert all(TOKEN not in path.read_text() for path in written)


def test_without_log_it_follows_the_log_of_a_running_tensorflow_job(tmp_path: Path) -> None:
    """No --log: notify finds the log a running TensorFlow job writes (its stdout, a file), as the Training
    tab does, and sends that run's end once. Other TensorFlow jobs on the machine may be found too: only
    this job's log is looked at."""
    (tmp_path / "child.py").write_text(CHILD)
    pid = start_child(tmp_path, "finish")
    log = tmp_path / "finish.log"
    notify = None
    try:
        wait_for(lambda: (tmp_path / "finish.ready").exists(), timeout=600)
        with receiving(TOKEN) as receiver:
            notify = Notify(tmp_path, receiver, "discovering", modes=())
            wait_for(lambda: f"following {log} (PID {pid}'s stdout)" in notify.err.read_text(), timeout=120)
            (tmp_path / "finish.go").touch()

            def ours() -> list[dict]:
                return [event for event in notify.events() if str(log) in event["subject"]]

            wait_for(ours, timeout=300)
            with contextlib.suppress(subprocess.TimeoutExpired):
                notify.process.wait(timeout=3)  # a few more rounds: nothing about this run is sent again
            sent = ours()
    finally:
        if notify is not None:
            notify.process.kill()
            notify.process.wait()
        if not ended(pid):
            os.kill(pid, signal.SIGKILL)
    assert [event["event"] for event in sent] == ["finished"], sent
    assert "epoch 3/3" in sent[0]["message"] and f"PID {pid}" in sent[0]["subject"]
