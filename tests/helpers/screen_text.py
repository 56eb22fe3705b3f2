"""The text of a running app's screen, line by line, read from its SVG screenshot (App.export_screenshot):
what the user sees, for tests that read every line of a tab."""

from __future__ import annotations

import html
import re

from textual.app import App

# Rich's SVG export: one <text> element per run of cells of one style, placed by x (12.2 per cell at its
# default font size) and clipped to its line
TEXT = re.compile(
    r'<text class="[^"]*" x="([0-9.]+)" y="[0-9.]+" textLength="[0-9.]+" '
    r'clip-path="url\(#[\w-]+-line-(\d+)\)">([^<]*)</text>'
)
CELL_WIDTH = 12.2


def screen_lines(app: App[object]) -> list[str]:
    """Every line of the app's screen as plain text (trailing spaces kept, one character a cell)."""
    width, height = app.size
    rows = [[" "] * width for _ in range(height)]
    for x, line, text in TEXT.findall(app.export_screenshot()):
        column = round(float(x) / CELL_WIDTH)
        for offset, char in enumerate(html.unescape(text).replace("\xa0", " ")):
            if column + offset < width:
                rows[int(line)][column + offset] = char
    return ["".join(row) for row in rows]
