"""Text built piece by piece (like rich.text.Text) with Textual styles, so colours can be theme variables
(``$error``, ``$warning``, ``$success``, ``$accent``) that follow the theme and NO_COLOR."""

from __future__ import annotations

from textual.content import Content

#: The tones the tabs use, as theme variables.
ERROR = "bold $error"
WARNING = "$warning"
SUCCESS = "$success"
ACCENT = "$accent"


class StyledText:
    """Append (text, style) pieces; `content()` gives the Content a Static shows. Text is never parsed as
    markup, so what comes from a log or a command line is shown as it is."""

    def __init__(self, text: str = "", style: str = "") -> None:
        self.pieces: list[tuple[str, str]] = []
        if text:
            self.append(text, style)

    def append(self, text: str, style: str = "") -> StyledText:
        """Add a piece; returns self."""
        if text:
            self.pieces.append((text, style))
        return self

    def rstrip(self) -> StyledText:
        """Drop trailing whitespace (a last newline); returns self."""
        while self.pieces and not self.pieces[-1][0].rstrip():
            self.pieces.pop()
        if self.pieces:
            text, style = self.pieces[-1]
            self.pieces[-1] = (text.rstrip(), style)
        return self

    @property
    def plain(self) -> str:
        """The text without styles."""
        return "".join(text for text, _ in self.pieces)

    def content(self) -> Content:
        """The pieces as Textual Content."""
        return Content.assemble(*((text, style) if style else text for text, style in self.pieces))

    def __str__(self) -> str:
        return self.plain
