"""One line about the host and the monitor itself: CPU, memory, load, driver, and the last refresh cost."""

from __future__ import annotations

from rich.text import Text

from tfgpu_tui.gpu.model import Snapshot
from tfgpu_tui.ui.widgets.gpu_format import bar, level_style

BAR_WIDTH = 10


def render_host_line(snapshot: Snapshot, ui_ms: float | None = None) -> Text:
    """Host CPU and memory with bars, load average, driver, and the monitor's own cost: the last sample's
    `sample_ms` and `ui_ms`, what applying the previous snapshot to the widgets took."""
    text = Text()
    host = snapshot.host
    if host is None:
        text.append("Host: CPU and memory unknown", style="dim")
    else:
        text.append("Host ", style="bold")
        text.append("CPU ")
        text.append_text(bar(host.cpu_percent, BAR_WIDTH, level_style(host.cpu_percent)))
        text.append(f" {host.cpu_percent:.0f} % of {host.cpu_count} cores")
        if host.load_average is not None:
            text.append(", load " + " ".join(f"{load:.2f}" for load in host.load_average))
        memory = 100.0 * host.memory_used_mib / host.memory_total_mib if host.memory_total_mib else None
        text.append("   Mem ")
        text.append_text(bar(memory, BAR_WIDTH, level_style(memory, warn=80.0, critical=95.0)))
        text.append(f" {host.memory_used_mib / 1024:.1f}/{host.memory_total_mib / 1024:.1f} GiB")
    driver = snapshot.driver
    if driver is not None and driver.driver_version:
        cuda = f" (CUDA {driver.cuda_driver_version})" if driver.cuda_driver_version else ""
        text.append(f"   driver {driver.driver_version}{cuda}", style="dim")
    text.append(f"   refresh {snapshot.sample_ms:.1f} ms", style="dim")
    if ui_ms is not None:
        text.append(f" + UI {ui_ms:.1f} ms", style="dim")
    if snapshot.simulated:
        text.append("   SIMULATED", style="bold magenta")
    return text
