"""Keras-3-style training output, byte for byte as ``model.fit(verbose=1)`` writes it into a redirected file.

Used by ``--demo``-style screenshots, tests and the 1 GB benchmark; the numbers are made up but the format is
the real one (ANSI codes, ``━`` bar, backspaces, ``\\r`` updates, ``val_`` metrics on the final update).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

BAR_WIDTH = 20


def _value(v: float) -> str:
    return f"{v:.4f}" if abs(v) > 1e-3 else f"{v:.4e}"


def _eta(seconds: float) -> str:
    seconds = int(seconds)
    if seconds > 3600:
        return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    if seconds > 60:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds}s"


def _bar(step: int, steps: int) -> str:
    done = BAR_WIDTH * step // steps
    return f"\x1b[32m{'━' * done}\x1b[0m\x1b[37m{'━' * (BAR_WIDTH - done)}\x1b[0m"


def keras3_update(step: int, steps: int, time_text: str, step_ms: int, metrics: dict[str, float]) -> str:
    """One Keras 3 progress update (no leading backspaces/\\r)."""
    width = len(str(steps))
    values = " - ".join(f"{k}: {_value(v)}" for k, v in metrics.items())
    counter = f"\x1b[1m{step:>{width}}/{steps}\x1b[0m"
    return f"{counter} {_bar(step, steps)} \x1b[1m{time_text}\x1b[0m {step_ms}ms/step - {values}"


def loss_at(epoch: int, step: int, steps: int) -> float:
    """A plausible, decreasing loss."""
    progress = epoch - 1 + step / steps
    return 2.3 * math.exp(-0.35 * progress) + 0.01 * math.sin(step / 25.0) * math.exp(-0.2 * progress) + 0.1


def keras3_epoch(epoch: int, epochs: int, steps: int, updates: int, step_ms: int = 42) -> Iterator[str]:
    """The text of one epoch: the ``Epoch k/N`` line and the progress line with `updates` updates."""
    yield f"Epoch {epoch}/{epochs}\n"
    previous = 0
    for index in range(1, updates + 1):
        step = max(1, steps * index // updates)
        if index < updates:
            metrics = {
                "accuracy": min(0.99, 0.3 + 0.6 * (1 - loss_at(epoch, step, steps) / 2.4)),
                "loss": loss_at(epoch, step, steps),
            }
            text = keras3_update(step, steps, _eta((steps - step) * step_ms / 1000), step_ms, metrics)
        else:
            loss = loss_at(epoch, steps, steps)
            metrics = {
                "accuracy": min(0.99, 0.3 + 0.6 * (1 - loss / 2.4)),
                "loss": loss,
                "val_accuracy": min(0.99, 0.28 + 0.6 * (1 - loss / 2.4)),
                "val_loss": loss * 1.08,
            }
            text = keras3_update(steps, steps, f"{steps * step_ms // 1000}s", step_ms, metrics)
        yield "\b" * previous + "\r" + text
        previous = len(text)
    yield "\n"


def keras3_log(
    epochs: int, steps: int, updates: int, done_epochs: int | None = None, partial_steps: int = 0
) -> str:
    """A whole log: `done_epochs` finished epochs (default all), then a current epoch at `partial_steps`."""
    done = epochs if done_epochs is None else done_epochs
    parts = [
        "I0000 00:00:1764671112.000000 1 gpu_device.cc:2020] Created device /job:localhost/replica:0/task:0"
        "/device:GPU:0 with 79078 MB memory:  -> device: 0, name: NVIDIA H100 80GB HBM3, pci bus id: "
        "0000:00:05.0, compute capability: 9.0\n"
    ]
    for epoch in range(1, done + 1):
        parts.extend(keras3_epoch(epoch, epochs, steps, updates))
    if partial_steps and done < epochs:
        lines = list(keras3_epoch(done + 1, epochs, steps, updates))
        keep = max(2, 1 + updates * partial_steps // steps)
        parts.extend(lines[:keep])
    return "".join(parts)


def demo_log() -> str:
    """A representative log for screenshots and demos: 7 of 20 epochs done, the 8th at step 300/469, and a
    TensorFlow memory warning near the top."""
    warning = (
        "W0000 00:00:1764671113.000000 1 bfc_allocator.cc:310] Allocator (GPU_0_bfc) ran out of memory "
        "trying to allocate 2.55GiB with freed_by_count=0. The caller indicates that this is not a failure, "
        "but this may mean that there could be performance gains if more memory were available.\n"
    )
    text = keras3_log(20, 469, 40, done_epochs=7, partial_steps=300)
    first_line_end = text.index("\n") + 1
    return text[:first_line_end] + warning + text[first_line_end:]
