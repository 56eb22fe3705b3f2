"""How a host's state and training progress read, in the Hosts table and on its detail screen."""

from __future__ import annotations

from rich.text import Text

from tfgpu_tui.durations import span_text
from tfgpu_tui.fleet.hosts import HostSnapshot, TrainingSummary


def training_text(runs: tuple[TrainingSummary, ...]) -> str:
    """The first followed log's progress (and how many more there are)."""
    if not runs:
        return "-"
    run = runs[0]
    if run.finished:
        text = f"done {run.epoch or '?'}/{run.total_epochs or '?'}"
    else:
        text = f"ep {run.epoch or '?'}/{run.total_epochs or '?'}"
        if run.step is not None:
            text += f" {run.step}/{run.total_steps or '?'}"
    if run.loss is not None:
        text += f" loss {run.loss:.4g}"
    if run.eta_seconds is not None and not run.finished:
        text += f" ETA {span_text(run.eta_seconds)}"
    return text + (f" (+{len(runs) - 1} more)" if len(runs) > 1 else "")


def simulated(host: HostSnapshot) -> bool:
    """Whether the host's GPUs come from an exporter's simulation (``export --demo``: series labelled
    ``simulated="true"``)."""
    return host.snapshot is not None and host.snapshot.simulated


def state_text(host: HostSnapshot) -> Text:
    """up, up with no GPU (and why), or DOWN and why; an up host whose GPUs are simulated says SIMULATED."""
    if not host.up:
        return Text(f"DOWN: {host.reason or 'not answering'}", style="bold red")
    text = Text(f"up, {host.reason}", style="yellow") if host.reason else Text("up", style="green")
    if simulated(host):
        text.append(" ")
        text.append("SIMULATED", style="reverse")
    return text
