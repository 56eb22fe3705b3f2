"""Plain-text pieces shared by `tfgpu-tui log` and the Training tab: values, epoch rows, the status line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tfgpu_tui.training.readout import RunReadout
from tfgpu_tui.training.records import EpochRecord, FinishReason, format_seconds

LR_COLUMN = "lr→"  # the learning rate a callback set during the epoch
FINISH_WORDS = {
    FinishReason.COMPLETED: "finished",
    FinishReason.EARLY_STOPPING: "finished (early stopping)",
    FinishReason.TERMINATED_ON_NAN: "stopped by TerminateOnNaN",
    FinishReason.EXCEPTION: "stopped by an exception",
    FinishReason.KILLED: "killed",
}


def format_value(value: float | None) -> str:
    """A metric as Keras prints it (4 decimals, scientific when tiny); nan/inf as words."""
    if value is None:
        return "-"
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return f"{value:.4f}" if abs(value) > 1e-3 or value == 0 else f"{value:.4e}"


def metric_names(epochs: Sequence[EpochRecord]) -> list[str]:
    """Every metric name, in first-seen order, training metrics before the ``val_`` ones."""
    names: list[str] = []
    for epoch in epochs:
        names.extend(n for n in epoch.metrics if n not in names)
    return [n for n in names if not n.startswith("val_")] + [n for n in names if n.startswith("val_")]


def has_lr_changes(epochs: Sequence[EpochRecord]) -> bool:
    """Whether the epoch table needs the `LR_COLUMN`."""
    return any(epoch.lr_change is not None for epoch in epochs)


def epoch_row(epoch: EpochRecord, names: list[str], show_run: bool, show_lr: bool = False) -> list[str]:
    """One table row: [fit run], epoch, duration, the metrics in `names` order, [the learning rate set]."""
    label = f"{epoch.epoch}/{epoch.total_epochs}" if epoch.total_epochs else str(epoch.epoch)
    cells = [str(epoch.fit_run)] if show_run else []
    cells += [label, format_seconds(epoch.seconds)]
    cells += [format_value(epoch.metrics.get(name)) for name in names]
    if show_lr:
        cells.append("" if epoch.lr_change is None else f"{epoch.lr_change:.4g}")
    return cells


def metrics_text(metrics: Mapping[str, float]) -> str:
    """``loss 1.5500  accuracy 0.6100``."""
    return "  ".join(f"{name} {format_value(value)}" for name, value in metrics.items())


def evaluation_text(run: RunReadout) -> str:
    """``evaluation (run 2): loss 1.5500  accuracy 0.6100``; "" when the last run has none."""
    info = run.latest_info()
    if info is None or info.evaluation is None:
        return ""
    which = f" (run {info.index})" if len(run.run_infos) > 1 else ""
    return f"evaluation{which}: {metrics_text(info.evaluation.metrics)}"


def status_parts(run: RunReadout) -> list[tuple[str, str]]:
    """The status line as (text, tone) pieces, tone "", "strong", "good" or "bad"; empty before progress."""
    cur = run.current
    if cur.epoch is None and cur.step is None:
        return []
    parts = [(f"run {run.fit_run}", "")] if run.fit_run > 1 else []
    epoch = "?" if cur.epoch is None else cur.epoch  # a custom loop may count from epoch 0
    parts.append((f"Epoch {epoch}/{cur.total_epochs or '?'}", "strong"))
    if cur.step is not None or cur.total_steps:  # a custom loop's epoch marker may carry no step
        parts.append((f"step {cur.step or 0}/{cur.total_steps or '?'}", ""))
    stopped = run.stop_reason()
    reason = run.finish_reason()
    if stopped:
        parts.append((f"stopped: {stopped}", "bad"))
    elif cur.finished or reason is not None:
        parts.append(
            (
                FINISH_WORDS.get(reason, "finished") if reason else "finished",
                "good" if cur.finished else "bad",
            )
        )
    elif cur.eta_seconds is not None or cur.total_steps:  # Keras' progress tells one; a custom loop not
        parts.append((f"epoch ETA {format_seconds(cur.eta_seconds)}", ""))
        total_eta = run.training_eta_seconds()
        if total_eta is not None:
            parts.append((f"training ETA {format_seconds(total_eta)}", ""))
    running = not stopped and not cur.finished and reason is None
    if running and cur.step_seconds and cur.steps_per_second:  # a run that ended has no live rate
        parts.append((f"{format_seconds(cur.step_seconds)}/step  {cur.steps_per_second:.1f} steps/s", ""))
    if running and cur.samples_per_second:
        parts.append((f"{cur.samples_per_second:,.0f} samples/s", ""))
    return parts


def status_text(run: RunReadout) -> str:
    """The status line and the latest metrics as one plain line."""
    parts = status_parts(run)
    if not parts:
        return "no Keras progress found yet"
    metrics = [f"{name} {format_value(value)}" for name, value in run.current.metrics.items()]
    return "   ".join([text for text, _ in parts] + metrics)
