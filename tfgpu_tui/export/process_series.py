"""Per-process series with bounded cardinality: the top N processes of each GPU by memory, plus one "other"
row per GPU that sums the rest; TensorFlow processes on the CPU the same way, by CPU %."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tfgpu_tui.export.names import CPU_GPU_LABEL, OTHER
from tfgpu_tui.gpu.model import ProcessRow

COMMAND_CHARS = 60
DEFAULT_TOP = 10


@dataclass(frozen=True)
class ProcessSeries:
    """The label values and readings of one exported process row (or of a GPU's "other" bucket)."""

    labels: tuple[str, ...]  # names.PROCESS_LABELS
    gpu_memory_mib: float | None
    sm_percent: float | None
    cpu_percent: float | None


def notebook_label(row: ProcessRow) -> str:
    """The notebook a Jupyter kernel runs (or ``kernel <id>`` when the server did not say); "" otherwise."""
    if row.jupyter is None:
        return ""
    return row.jupyter.notebook_path or f"kernel {row.jupyter.kernel_id}"


def short_command(command: str | None) -> str:
    """The program's base name and its first arguments, at most 60 characters."""
    if not command:
        return ""
    program, _, rest = command.strip().partition(" ")
    text = f"{os.path.basename(program)} {rest}".strip()
    return text if len(text) <= COMMAND_CHARS else text[: COMMAND_CHARS - 1] + "…"


def _labels(row: ProcessRow, gpu: str) -> tuple[str, ...]:
    """The label values: no series claims a local PID its row does not have (another namespace's entry)."""
    notebook = notebook_label(row)
    pid = "" if row.local_pid is None else str(row.pid)
    host_pid = "" if row.host_pid is None else str(row.host_pid)
    command = "" if notebook else short_command(row.command)
    return (gpu, pid, row.user or "", notebook, command, host_pid, row.basis or "")


def _total(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _bucket(gpu: str, rows: list[ProcessRow], top: int, key) -> list[ProcessSeries]:
    ranked = sorted(rows, key=key, reverse=True)
    kept = [
        ProcessSeries(_labels(r, gpu), r.gpu_memory_mib, r.sm_percent, r.cpu_percent) for r in ranked[:top]
    ]
    rest = ranked[top:]
    if rest:
        kept.append(
            ProcessSeries(
                (gpu, OTHER, "", "", "", "", ""),
                _total([r.gpu_memory_mib for r in rest]),
                _total([r.sm_percent for r in rest]),
                _total([r.cpu_percent for r in rest]),
            )
        )
    return kept


def process_series(rows: list[ProcessRow], top: int = DEFAULT_TOP) -> list[ProcessSeries]:
    """Every GPU's top `top` processes by GPU memory and an "other" bucket; CPU TensorFlow rows by CPU %."""
    by_gpu: dict[str, list[ProcessRow]] = {}
    for row in rows:
        gpu = CPU_GPU_LABEL if row.gpu_index is None else row.device_label  # "0:2": MIG device 2 of GPU 0
        by_gpu.setdefault(gpu, []).append(row)
    series: list[ProcessSeries] = []
    for gpu, members in by_gpu.items():
        if gpu == CPU_GPU_LABEL:
            series += _bucket(gpu, members, top, lambda r: r.cpu_percent or 0.0)
        else:
            series += _bucket(gpu, members, top, lambda r: r.gpu_memory_mib or 0.0)
    return series
