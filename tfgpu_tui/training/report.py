"""Plain-text pieces shared by `tfgpu-tui log` and the Training tab: values, epoch rows, the status line."""

from __future__ import annotations

from tfgpu_tui.training.run import EpochRecord, TrainingRun, format_seconds


def format_value(value: float | None) -> str:
    """A metric as Keras prints it (4 decimals, scientific when tiny); nan/inf as words."""
    if value is None:
        return "-"
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return f"{value:.4f}" if abs(value) > 1e-3 or value == 0 else f"{value:.4e}"


def metric_names(epochs: list[EpochRecord]) -> list[str]:
    """Every metric name, in first-seen order, training metrics before the ``val_`` ones."""
    names: list[str] = []
    for epoch in epochs:
        names.extend(n for n in epoch.metrics if n not in names)
    return [n for n in names if not n.startswith("val_")] + [n for n in names if n.startswith("val_")]


def epoch_row(epoch: EpochRecord, names: list[str], show_run: bool) -> list[str]:
    """One table row: [fit run], epoch, duration, then the metrics in `names` order."""
    label = f"{epoch.epoch}/{epoch.total_epochs}" if epoch.total_epochs else str(epoch.epoch)
    cells = [str(epoch.fit_run)] if show_run else []
    cells += [label, format_seconds(epoch.seconds)]
    return cells + [format_value(epoch.metrics.get(name)) for name in names]


def status_parts(run: TrainingRun) -> list[tuple[str, str]]:
    """The status line as (text, tone) pieces, tone "", "strong", "good" or "bad"; empty before progress."""
    cur = run.current
    if cur.epoch is None and cur.step is None:
        return []
    parts = [
        (f"Epoch {cur.epoch or '?'}/{cur.total_epochs or '?'}", "strong"),
        (f"step {cur.step or 0}/{cur.total_steps or '?'}", ""),
    ]
    stopped = run.stopped_by()
    if stopped:
        parts.append((f"stopped ({stopped.message})", "bad"))
    elif cur.finished:
        parts.append(("finished", "good"))
    else:
        parts.append((f"epoch ETA {format_seconds(cur.eta_seconds)}", ""))
        total_eta = run.training_eta_seconds()
        if total_eta is not None:
            parts.append((f"training ETA {format_seconds(total_eta)}", ""))
    if cur.step_seconds and cur.steps_per_second:
        parts.append((f"{format_seconds(cur.step_seconds)}/step  {cur.steps_per_second:.1f} steps/s", ""))
    if cur.samples_per_second:
        parts.append((f"{cur.samples_per_second:,.0f} samples/s", ""))
    return parts


def status_text(run: TrainingRun) -> str:
    """The status line and the latest metrics as one plain line."""
    parts = status_parts(run)
    if not parts:
        return "no Keras progress found yet"
    metrics = [f"{name} {format_value(value)}" for name, value in run.current.metrics.items()]
    return "   ".join([text for text, _ in parts] + metrics)
