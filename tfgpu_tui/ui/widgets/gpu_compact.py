"""The compact GPU view: one line per GPU (index, name, utilisation and memory bars, temperature, power), for
short terminals and many GPUs, as nvitop compacts its device rows."""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from tfgpu_tui.gpu.model import DeviceSample
from tfgpu_tui.ui.widgets.gpu_format import NA, bar, level_style, number_text, zero_util_text

NAME_WIDTH = 14
MIN_BAR, MAX_BAR = 4, 30


def short_name(name: str) -> str:
    """The model without the vendor: `NVIDIA A100-SXM4-80GB` -> `A100-SXM4-80GB`."""
    return name.removeprefix("NVIDIA ").removeprefix("Tesla ")


def _gib(mib: float | None) -> str:
    return NA if mib is None else f"{mib / 1024:.1f}"


def render_compact_line(sample: DeviceSample, width: int) -> Text:
    """One GPU in one line of `width` cells; the bars take what the figures leave."""
    name = short_name(sample.name)
    name = name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    text.append(f"{sample.index:>2} ", style="bold")
    text.append(f"{name:<{NAME_WIDTH}}")
    if sample.lost:
        text.append("  LOST: fell off the bus; check `dmesg | grep -i xid`", style="bold red")
        return text
    util = number_text(sample.utilization_percent, "%")
    memory = f"{_gib(sample.memory_used_mib)}/{_gib(sample.memory_total_mib)}G"
    zero = zero_util_text(sample.zero_util_seconds)  # 0 % while TensorFlow holds memory
    zero = f" {zero}" if zero else ""
    tail = f" {number_text(sample.temperature_c, '°C'):>5} {number_text(sample.power_w)}/"
    tail += f"{number_text(sample.power_limit_w)}W"
    fixed = (
        3
        + NAME_WIDTH
        + len(" Util ")
        + len(f" {util:>4}{zero}")
        + len(" Mem ")
        + len(f" {memory:>11}")
        + len(tail)
    )
    bar_width = max(MIN_BAR, min(MAX_BAR, (width - fixed) // 2))
    util_value, mem_value = sample.utilization_percent, sample.memory_percent
    text.append(" Util ", style="bold")
    text.append_text(bar(util_value, bar_width, level_style(util_value)))
    text.append(f" {util:>4}")
    text.append(zero, style="bold yellow")
    text.append(" Mem ", style="bold")
    text.append_text(bar(mem_value, bar_width, level_style(mem_value, warn=80.0, critical=95.0)))
    text.append(f" {memory:>11}")
    text.append(tail)
    return text


class GpuCompactList(Widget):
    """Every GPU, one line each; repainted only when a reading or the width changes."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's own parameter name
        super().__init__(id=id)
        self.devices: list[DeviceSample] = []

    def show(self, devices: list[DeviceSample]) -> None:
        """Display these readings (skipped when identical to the last ones)."""
        if devices == self.devices:
            return
        count_changed = len(devices) != len(self.devices)
        self.devices = list(devices)
        self.refresh(layout=count_changed)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.devices)

    def render(self) -> Text:
        width = self.content_region.width
        text = Text(no_wrap=True, end="")
        for position, device in enumerate(self.devices):
            if position:
                text.append("\n")
            text.append_text(render_compact_line(device, width))
        return text
