"""The compact GPU view: one line per GPU (index, name, utilisation and memory bars, temperature, power), for
short terminals and many GPUs, as nvitop compacts its device rows."""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from tfgpu_tui.gpu.model import DeviceSample, MigDevice
from tfgpu_tui.sizes import gib_figure
from tfgpu_tui.ui.widgets.gpu_format import bar, level_style, number_text, zero_util_text

NAME_WIDTH = 14
MIN_BAR, MAX_BAR = 4, 30


def short_name(name: str) -> str:
    """The model without the vendor: `NVIDIA A100-SXM4-80GB` -> `A100-SXM4-80GB`."""
    return name.removeprefix("NVIDIA ").removeprefix("Tesla ")


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
    if sample.mig_mode:
        tail = f" {number_text(sample.temperature_c, '°C'):>5} {number_text(sample.power_w)}/"
        tail += f"{number_text(sample.power_limit_w)}W"
        known = sample.memory_used_mib is not None
        memory = (
            f"{gib_figure(sample.memory_used_mib)}/{gib_figure(sample.memory_total_mib)}G in all, "
            if known
            else ""
        )
        text.append(" MIG mode", style="bold")
        room = max(0, width - len(text) - len(tail))
        note = f": no utilisation reported; {memory}memory per MIG device"
        text.append(note[:room].ljust(room) if len(note) <= room else note[: max(0, room - 1)] + "…")
        text.append(tail)
        return text
    util = number_text(sample.utilization_percent, "%")
    memory = f"{gib_figure(sample.memory_used_mib)}/{gib_figure(sample.memory_total_mib)}G"
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


def render_mig_line(mig: MigDevice, width: int) -> Text:
    """One MIG device under its GPU: `0:2`, its profile, GPU/compute instance IDs and a memory bar."""
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    text.append(f"{mig.label:>4} ", style="bold")
    text.append(f"MIG {mig.profile or mig.name:<{NAME_WIDTH - 4}}"[: NAME_WIDTH + 1])
    if mig.lost:
        text.append(" LOST: this MIG device stopped answering", style="bold red")
        return text
    ids = f" GI {number_text(mig.gpu_instance_id)} CI {number_text(mig.compute_instance_id)}"
    memory = f"{gib_figure(mig.memory_used_mib)}/{gib_figure(mig.memory_total_mib)}G"
    fixed = len(text) + len(ids) + len(" Mem ") + len(f" {memory:>11}")
    bar_width = max(MIN_BAR, min(2 * MAX_BAR, width - fixed))
    text.append(ids, style="dim")
    text.append(" Mem ", style="bold")
    percent = mig.memory_percent
    text.append_text(bar(percent, bar_width, level_style(percent, warn=80.0, critical=95.0)))
    text.append(f" {memory:>11}")
    return text


def compact_line_count(devices: list[DeviceSample]) -> int:
    """Lines the compact view needs: one per GPU and one per MIG device."""
    return sum(1 + len(device.mig_devices) for device in devices)


class GpuCompactList(Widget):
    """Every GPU, one line each; repainted only when a reading or the width changes."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's own parameter name
        super().__init__(id=id)
        self.devices: list[DeviceSample] = []

    def show(self, devices: list[DeviceSample]) -> None:
        """Display these readings (skipped when identical to the last ones)."""
        if devices == self.devices:
            return
        count_changed = compact_line_count(devices) != compact_line_count(self.devices)
        self.devices = list(devices)
        self.refresh(layout=count_changed)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return compact_line_count(self.devices)

    def render(self) -> Text:
        width = self.content_region.width
        text = Text(no_wrap=True, end="")
        for position, device in enumerate(self.devices):
            if position:
                text.append("\n")
            text.append_text(render_compact_line(device, width))
            for mig in device.mig_devices:
                text.append("\n")
                text.append_text(render_mig_line(mig, width))
        return text
