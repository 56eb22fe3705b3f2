"""The cells of a `tmux capture-pane -e` screen with the colours they are drawn in (SGR parsed), for tests
that ask whether text is visible against its background."""

from __future__ import annotations

import re
from dataclasses import dataclass

SEQUENCE = re.compile(r"\x1b\[([0-9;:]*)m")
DEFAULT_FG, DEFAULT_BG = "default-fg", "default-bg"


@dataclass(frozen=True)
class Cell:
    row: int
    column: int
    char: str
    fg: str  # "0".."15", "256:n", "rgb:r,g,b" or DEFAULT_FG/DEFAULT_BG (after reverse video)
    bg: str
    bold: bool
    dim: bool
    reverse: bool


@dataclass
class _Pen:
    fg: str = DEFAULT_FG
    bg: str = DEFAULT_BG
    bold: bool = False
    dim: bool = False
    reverse: bool = False

    def apply(self, codes: list[int]) -> None:
        index = 0
        while index < len(codes):
            code = codes[index]
            if code == 0:
                self.__init__()  # type: ignore[misc]
            elif code == 1:
                self.bold = True
            elif code == 2:
                self.dim = True
            elif code == 22:
                self.bold = self.dim = False
            elif code == 7:
                self.reverse = True
            elif code == 27:
                self.reverse = False
            elif 30 <= code <= 37 or 90 <= code <= 97:
                self.fg = str(code - 30 if code < 90 else code - 82)
            elif 40 <= code <= 47 or 100 <= code <= 107:
                self.bg = str(code - 40 if code < 100 else code - 92)
            elif code == 39:
                self.fg = DEFAULT_FG
            elif code == 49:
                self.bg = DEFAULT_BG
            elif code in (38, 48) and index + 1 < len(codes):
                if codes[index + 1] == 5 and index + 2 < len(codes):
                    colour, index = f"256:{codes[index + 2]}", index + 2
                else:
                    colour, index = "rgb:" + ",".join(map(str, codes[index + 2 : index + 5])), index + 4
                if code == 38:
                    self.fg = colour
                else:
                    self.bg = colour
            index += 1


def cells(captured: str) -> list[Cell]:
    """Every cell that shows a character (not a space), with the colours it is drawn in."""
    pen = _Pen()
    found: list[Cell] = []
    for row, line in enumerate(captured.split("\n")):
        column = 0
        for part in re.split(r"(\x1b\[[0-9;:]*m)", line):
            match = SEQUENCE.fullmatch(part)
            if match:
                pen.apply([int(code or 0) for code in re.split("[;:]", match.group(1))])
                continue
            for char in part:
                if not char.isspace():
                    fg, bg = (pen.bg, pen.fg) if pen.reverse else (pen.fg, pen.bg)
                    found.append(Cell(row, column, char, fg, bg, pen.bold, pen.dim, pen.reverse))
                column += 1
    return found


def same_colour(fg: str, bg: str) -> bool:
    """Whether text in `fg` on `bg` cannot be seen: the same colour (the terminal's default background is
    taken as black, its default foreground as white, as in most dark terminals)."""
    return (DEFAULT_BG if fg == "0" else fg).replace(DEFAULT_FG, "7") == (
        DEFAULT_BG if bg == "0" else bg
    ).replace(DEFAULT_FG, "7")


def invisible(captured: str) -> list[Cell]:
    return [cell for cell in cells(captured) if same_colour(cell.fg, cell.bg)]


# xterm's default palette for the 16 standard colours (what a TERM=xterm terminal shows unless its user
# changed it); 256-colour and RGB cells are not measured here.
XTERM_16 = [
    (0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205),
    (229, 229, 229), (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255),
    (0, 255, 255), (255, 255, 255),
]  # fmt: skip
# Text must stand out from its background by this contrast ratio (WCAG's formula) in that palette. The
# standard colours put readable pairs such as white on cyan (Textual's cursor row) at 2.0 and unreadable ones
# such as bright red on grey, or any colour on itself, at 1.0.
MIN_CONTRAST = 1.5


def _luminance(colour: str, default: str) -> float | None:
    """The relative luminance of a 16-colour cell colour (the default ones as `default`), None for others."""
    colour = default if colour in (DEFAULT_FG, DEFAULT_BG) else colour
    if not colour.isdigit():
        return None

    def linear(channel: int) -> float:
        value = channel / 255
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    red, green, blue = XTERM_16[int(colour)]
    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast(fg: str, bg: str) -> float | None:
    """WCAG's contrast ratio of `fg` on `bg` in xterm's palette (default foreground white, default background
    black, as in most dark terminals); None where either is not one of the 16 colours."""
    light, dark = _luminance(fg, "7"), _luminance(bg, "0")
    if light is None or dark is None:
        return None
    light, dark = max(light, dark), min(light, dark)
    return (light + 0.05) / (dark + 0.05)


def hard_to_read(captured: str) -> list[Cell]:
    """The cells whose text hardly stands out from its background (under MIN_CONTRAST in xterm's palette)."""
    found = []
    for cell in cells(captured):
        ratio = contrast(cell.fg, cell.bg)
        if (ratio is not None and ratio < MIN_CONTRAST) or same_colour(cell.fg, cell.bg):
            found.append(cell)
    return found
