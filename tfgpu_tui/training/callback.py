"""`JsonLinesLogger`: a Keras callback that writes each epoch's exact logs as JSON lines.

The precise alternative to parsing the progress bar (which rounds to 4 decimals). Keras is imported only when
the class is first asked for, so importing this module costs nothing; users import it as
``from tfgpu_tui.keras import JsonLinesLogger``.
"""

from __future__ import annotations

import json
import math
import os
import time
from functools import lru_cache
from pathlib import Path
from typing import Any


def json_logs(logs: dict | None) -> dict[str, float | str]:
    """Keras logs as JSON-safe numbers: tensors and NumPy scalars converted, nan/inf as strings."""
    found: dict[str, float | str] = {}
    for key, value in (logs or {}).items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        found[str(key)] = number if math.isfinite(number) else str(number)
    return found


def _keras_callback_base() -> type:
    """keras.callbacks.Callback of the Keras in use (tf_keras when TF_USE_LEGACY_KERAS is set)."""
    if os.environ.get("TF_USE_LEGACY_KERAS", "").lower() in ("1", "true", "yes"):
        import tf_keras as keras_module  # noqa: PLC0415 - lazy on purpose
    else:
        import keras as keras_module  # noqa: PLC0415 - lazy on purpose
    return keras_module.callbacks.Callback


@lru_cache(maxsize=1)
def json_lines_logger_class() -> type:
    """Build the callback class (imports Keras)."""
    base = _keras_callback_base()

    class JsonLinesLogger(base):  # type: ignore[misc, valid-type]
        """Write training events to `path`, one JSON object per line, for ``tfgpu-tui --log path``.

        Args:
            path: the JSON-lines file (appended to; created if missing).
            batch_size: your batch size, so the dashboard can show samples/s (Keras does not report it).
            batch_interval_seconds: at most one ``batch_end`` line per this many seconds.

        Events: ``train_begin`` (epochs, steps, batch_size), ``epoch_begin`` (epoch, epochs),
        ``batch_end`` (epoch, step, steps, logs, step_seconds, eta_seconds), ``epoch_end`` (epoch, epochs,
        steps, seconds, step_seconds, logs), ``train_end``. Epochs are 1-based, as Keras prints them; every
        line has ``time`` (Unix seconds).
        """

        def __init__(
            self,
            path: str | os.PathLike = "train.jsonl",
            batch_size: int | None = None,
            batch_interval_seconds: float = 1.0,
        ) -> None:
            super().__init__()
            self.path = Path(path)
            self.batch_size = batch_size
            self.batch_interval_seconds = batch_interval_seconds
            self._file: Any = None
            self._epoch = 0
            self._epoch_start = 0.0
            self._last_batch_write = 0.0

        def _write(self, event: str, **fields: Any) -> None:
            if self._file is None:
                self._file = self.path.open("a", encoding="utf-8", buffering=1)
            self._file.write(json.dumps({"event": event, "time": time.time(), **fields}) + "\n")

        def _params(self, name: str) -> Any:
            return (getattr(self, "params", None) or {}).get(name)

        def on_train_begin(self, logs: dict | None = None) -> None:
            self._write(
                "train_begin",
                epochs=self._params("epochs"),
                steps=self._params("steps"),
                batch_size=self.batch_size,
            )

        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self._epoch = epoch + 1
            self._epoch_start = self._last_batch_write = time.monotonic()
            self._write("epoch_begin", epoch=self._epoch, epochs=self._params("epochs"))

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            now = time.monotonic()
            if now - self._last_batch_write < self.batch_interval_seconds:
                return
            self._last_batch_write = now
            steps = self._params("steps")
            step_seconds = (now - self._epoch_start) / (batch + 1)
            eta = step_seconds * (steps - batch - 1) if steps else None
            self._write(
                "batch_end",
                epoch=self._epoch,
                step=batch + 1,
                steps=steps,
                logs=json_logs(logs),
                step_seconds=step_seconds,
                eta_seconds=eta,
            )

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            seconds = time.monotonic() - self._epoch_start
            steps = self._params("steps")
            self._write(
                "epoch_end",
                epoch=epoch + 1,
                epochs=self._params("epochs"),
                steps=steps,
                seconds=seconds,
                step_seconds=seconds / steps if steps else None,
                logs=json_logs(logs),
            )

        def on_train_end(self, logs: dict | None = None) -> None:
            self._write("train_end", logs=json_logs(logs))
            if self._file is not None:
                self._file.close()
                self._file = None

    JsonLinesLogger.__module__ = "tfgpu_tui.keras"
    return JsonLinesLogger
