"""A followed training log's state as ``tfgpu_training_*`` gauges (label ``log``: the file's path)."""

from __future__ import annotations

from collections.abc import Callable

from tfgpu_tui.training.log_state import LogState
from tfgpu_tui.training.readout import RunReadout


def _loss(run: RunReadout) -> float | None:
    value = run.current.metrics.get("loss")
    if value is None and run.epochs:
        value = run.epochs[-1].metrics.get("loss")
    return value


def _finished(run: RunReadout) -> float:
    return 1.0 if run.current.finished else 0.0


# (name, help, reading); a reading that is None is not exported
TRAINING_GAUGES: tuple[tuple[str, str, Callable[[RunReadout], float | None]], ...] = (
    ("tfgpu_training_epoch", "Current epoch (1-based, as printed).", lambda r: r.current.epoch),
    (
        "tfgpu_training_epochs",
        "Total epochs of the fit() (N of 'Epoch k/N').",
        lambda r: r.current.total_epochs,
    ),
    ("tfgpu_training_step", "Current step within the epoch.", lambda r: r.current.step),
    ("tfgpu_training_steps", "Steps per epoch.", lambda r: r.current.total_steps),
    ("tfgpu_training_loss", "Latest loss (the running value of the current epoch).", _loss),
    (
        "tfgpu_training_eta_seconds",
        "Estimated seconds left for the whole fit(): this epoch's ETA plus the remaining epochs.",
        lambda r: r.training_eta_seconds(),
    ),
    (
        "tfgpu_training_epoch_eta_seconds",
        "Keras's ETA for the current epoch.",
        lambda r: r.current.eta_seconds,
    ),
    (
        "tfgpu_training_samples_per_second",
        "Samples per second (known when the log gives the batch size).",
        lambda r: r.current.samples_per_second,
    ),
    ("tfgpu_training_steps_per_second", "Steps per second.", lambda r: r.current.steps_per_second),
    ("tfgpu_training_finished", "1 when the fit() finished, else 0.", _finished),
    ("tfgpu_training_epochs_done", "Epochs finished in the log (all fit() calls).", lambda r: len(r.epochs)),
)


def training_values(state: LogState) -> list[tuple[str, str, float]]:
    """(metric name, help, value) for each known reading of one log; NaN and inf losses are kept as such."""
    values: list[tuple[str, str, float]] = []
    for name, help_text, read in TRAINING_GAUGES:
        value = read(state.run)
        if value is not None:
            values.append((name, help_text, float(value)))
    values.append(("tfgpu_training_idle_seconds", "Seconds since the log last grew.", state.idle_seconds))
    return values


def last_epoch_metrics(run: RunReadout) -> dict[str, float]:
    """The metrics printed at the end of the last finished epoch (loss, val_loss, accuracy ...)."""
    if not run.epochs:
        return {}
    return {name: float(value) for name, value in run.epochs[-1].metrics.items()}
