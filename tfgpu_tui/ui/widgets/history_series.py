"""The colours of a GPU's plotted history (the series themselves are the core's, gpu/history.py; the plot
widget is history_plot.py, which loads plotext)."""

from __future__ import annotations

# Line colours; the GPU card colours its "Util" and "Mem" labels the same, so it doubles as the legend.
UTILIZATION_COLOR = "cyan"
MEMORY_COLOR = "magenta"
