"""One line about the host and the monitor itself: CPU, memory, load, driver, and the last refresh cost."""

from __future__ import annotations

from rich.text import Text

from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.sizes import used_of_total_text
from tfgpu_tui.ui.widgets.gpu_format import bar, level_style

BAR_WIDTH = 10


def render_host_line(snapshot: Snapshot, ui_ms: float | None = None, width: int | None = None) -> Text:
    """Host CPU and memory with bars, load average, driver, and the monitor's own cost: the last sample's
    `sample_ms` and `ui_ms`, what applying the previous snapshot to the widgets took. Within `width` cells
    (None: no limit) the least useful parts give way first: the load, the monitor's cost, the driver, the
    core count; the figures of CPU and memory and the SIMULATED mark always stay."""
    parts: list[tuple[int, Text]] = []  # (rank: the higher gives way first, text), in the line's order
    host = snapshot.host
    if host is None:
        known = "reading…" if snapshot.processes_pending else "unknown"
        parts.append((0, Text(f"Host: CPU and memory {known}", style="dim")))
    else:
        cpu = Text("Host ", style="bold")
        cpu.append("CPU ")
        cpu.append_text(bar(host.cpu_percent, BAR_WIDTH, level_style(host.cpu_percent)))
        cpu.append(f" {host.cpu_percent:.0f} %")
        parts += [(0, cpu), (1, Text(f" of {host.cpu_count} cores"))]
        if host.load_average is not None:
            parts.append((4, Text(", load " + " ".join(f"{load:.2f}" for load in host.load_average))))
        memory = 100.0 * host.memory_used_mib / host.memory_total_mib if host.memory_total_mib else None
        mem = Text("   Mem ")
        mem.append_text(bar(memory, BAR_WIDTH, level_style(memory, warn=80.0, critical=95.0)))
        mem.append(f" {used_of_total_text(host.memory_used_mib, host.memory_total_mib)}")
        parts.append((0, mem))
    driver = snapshot.driver
    if driver is not None and driver.driver_version:
        cuda = f" (CUDA {driver.cuda_driver_version})" if driver.cuda_driver_version else ""
        parts.append((2, Text(f"   driver {driver.driver_version}{cuda}", style="dim")))
    cost = Text(f"   refresh {snapshot.sample_ms:.1f} ms", style="dim")
    if ui_ms is not None:
        cost.append(f" + UI {ui_ms:.1f} ms", style="dim")
    parts.append((3, cost))
    if snapshot.simulated:
        parts.append((0, Text("   SIMULATED", style="bold magenta")))
    while width is not None and sum(part.cell_len for _, part in parts) > width:
        rank = max(rank for rank, _ in parts)
        if rank == 0:
            break
        parts = [(r, part) for r, part in parts if r != rank]
    return Text("").join(part for _, part in parts)
