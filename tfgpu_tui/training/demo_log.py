"""A live SIMULATED training log for ``--demo``: a background thread writes Keras 3 ``verbose=1`` output
(`synthetic.py`, byte for byte the real format) into a temporary file, a few updates per second, epochs
advancing, and a checkpoint file every few epochs, so the Training tab has something real to follow."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

from tfgpu_tui.training.synthetic import keras3_epoch

DEMO_EPOCHS = 20
DEMO_STEPS = 120
DEMO_UPDATES_PER_EPOCH = 24
DEMO_UPDATE_SECONDS = 0.25  # 4 updates a second: an epoch every 6 s
DEMO_CHECKPOINT_EVERY = 3
DEMO_HISTORY_EPOCHS = 3  # written at once, so the plots and the epoch table have something from the start
SIMULATED_BANNER = "SIMULATED training log (--demo): the numbers are made up\n"


class DemoTrainingLog:
    """Writes a simulated training log into a temporary directory until `stop()`.

    Args:
        update_seconds: pause between progress updates.
        epochs, steps, updates: the shape of the simulated fit() (it starts over when done).
        history_epochs: epochs written at once when started; the rest are written live.
    """

    def __init__(
        self,
        update_seconds: float = DEMO_UPDATE_SECONDS,
        epochs: int = DEMO_EPOCHS,
        steps: int = DEMO_STEPS,
        updates: int = DEMO_UPDATES_PER_EPOCH,
        history_epochs: int = DEMO_HISTORY_EPOCHS,
    ) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="tfgpu-tui-demo-"))
        self.path = self.directory / "train.log"
        self.checkpoints = self.directory / "ckpt"
        self.update_seconds = update_seconds
        self.epochs, self.steps, self.updates = epochs, steps, updates
        self.history_epochs = min(history_epochs, epochs - 1)
        self.step_ms = max(1, int(1000 * update_seconds * updates / steps))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._write, name="tfgpu-tui-demo-log", daemon=True)

    def start(self) -> DemoTrainingLog:
        history = (
            "".join(keras3_epoch(epoch, self.epochs, self.steps, self.updates, self.step_ms))
            for epoch in range(1, self.history_epochs + 1)
        )
        self.path.write_text(SIMULATED_BANNER + "".join(history), encoding="utf-8")
        self._checkpoint_due(self.history_epochs)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop writing and delete the temporary directory."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _write(self) -> None:
        first = self.history_epochs + 1
        with self.path.open("a", encoding="utf-8") as handle:
            while not self._stop.is_set():
                for epoch in range(first, self.epochs + 1):
                    for piece in keras3_epoch(epoch, self.epochs, self.steps, self.updates, self.step_ms):
                        handle.write(piece)
                        handle.flush()
                        if not piece.startswith("Epoch") and self._stop.wait(self.update_seconds):
                            return
                    self._checkpoint_due(epoch)
                first = 1  # a new fit() after a pause
                if self._stop.wait(5 * self.update_seconds):
                    return

    def _checkpoint_due(self, epoch: int) -> None:
        """Write a (simulated) checkpoint after every `DEMO_CHECKPOINT_EVERY`-th epoch."""
        if epoch == 0 or epoch % DEMO_CHECKPOINT_EVERY:
            return
        self.checkpoints.mkdir(exist_ok=True)
        (self.checkpoints / f"epoch-{epoch:03d}.keras").write_text("simulated checkpoint\n", encoding="utf-8")
