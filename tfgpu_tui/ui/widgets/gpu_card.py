"""One GPU's live readings as a compact card; fields the GPU does not report read N/A."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tfgpu_tui.gpu.model import DeviceSample
from tfgpu_tui.sizes import gib_figure
from tfgpu_tui.ui.widgets.gpu_format import bar, level_style, number_text, zero_util_text
from tfgpu_tui.ui.widgets.history_plot import MEMORY_COLOR, UTILIZATION_COLOR

BAR_WIDTH = 16


def render_card(sample: DeviceSample) -> Text:
    """The card's text: title line, utilisation and memory bars, then temperature, power, fan, clock."""
    text = Text()
    text.append(f"GPU {sample.index} ", style="bold")
    text.append(sample.name)
    if sample.performance_state is not None:
        text.append(f"  P{sample.performance_state}", style="dim")
    if sample.lost:
        text.append("  LOST", style="bold white on red")
        text.append("\nThe GPU stopped answering (fell off the bus or an XID error).")
        text.append("\nFix: check `dmesg | grep -i xid`; a reset or reboot is usually needed.", style="dim")
        return text
    if sample.mig_mode:
        count = len(sample.mig_devices)
        text.append(f"\nMIG mode: {count} MIG device{'s' if count != 1 else ''}; no utilisation reported")
        text.append("\nEach MIG device's memory: the compact view (c)", style="dim")
        text.append(f"\n{number_text(sample.temperature_c, ' °C'):>6}  ")
        text.append(f"{number_text(sample.power_w)}/{number_text(sample.power_limit_w)} W")
        return text
    util = sample.utilization_percent
    text.append("\nUtil ", style=f"bold {UTILIZATION_COLOR}")
    text.append_text(bar(util, BAR_WIDTH, level_style(util)))
    text.append(f" {number_text(util, ' %'):>6}")
    zero = zero_util_text(sample.zero_util_seconds)  # 0 % while TensorFlow holds memory, live from the start
    if zero:
        text.append(f" {zero}", style="bold yellow")
    memory = sample.memory_percent
    text.append("\nMem  ", style=f"bold {MEMORY_COLOR}")
    text.append_text(bar(memory, BAR_WIDTH, level_style(memory, warn=80.0, critical=95.0)))
    text.append(f" {gib_figure(sample.memory_used_mib)}/{gib_figure(sample.memory_total_mib)} GiB")
    text.append(f"\n{number_text(sample.temperature_c, ' °C'):>6}  ")
    power = f"{number_text(sample.power_w)}/{number_text(sample.power_limit_w)} W"
    text.append(
        f"{power}  Fan {number_text(sample.fan_percent, ' %')}  SM {number_text(sample.sm_clock_mhz, ' MHz')}"
    )
    return text


def unavailable_tooltip(sample: DeviceSample) -> str | None:
    """Why each N/A field is missing, one per line; None when every field was read."""
    if not sample.unavailable:
        return None
    return "\n".join(f"{name}: {why}" for name, why in sorted(sample.unavailable.items()))


class GpuCard(Static):
    """A bordered card of fixed size for one GPU; `show` repaints it only when its text changed."""

    def __init__(self, index: int) -> None:
        super().__init__(id=f"gpu-card-{index}")
        self.index = index
        self._last: DeviceSample | None = None
        self._text: Text | None = None

    def show(self, sample: DeviceSample) -> None:
        """Display this sample (skipped when identical to the last one)."""
        if sample == self._last:
            return
        if self._last is None or sample.unavailable != self._last.unavailable:
            self.tooltip = unavailable_tooltip(sample)
        self._last = sample
        self.set_class(sample.lost, "-lost")
        text = render_card(sample)
        if text != self._text:  # readings that round to the same figures repaint nothing
            self._text = text
            self.update(text, layout=False)  # the card's size is fixed: no re-layout of the screen
