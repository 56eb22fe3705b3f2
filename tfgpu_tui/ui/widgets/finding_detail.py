"""The Environment tab's detail: the selected finding's title, what was found and why it matters
(`FindingDetail`), and its fix (`FixPane`), full width under the list and the detail.

The fix is wrapped to the terminal's width, so all of it is readable without scrolling, and it has its rows to
itself, so a shell command copied off the screen with the mouse still runs: it breaks only outside quotes,
each continued line ending in `` \\`` (`wrap_fix`). The tab's `c` copies the fix as it is.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from tfgpu_tui.env.findings import Finding, Status
from tfgpu_tui.ui.text_fit import break_long_words

#: Theme variables for each status (so themes and NO_COLOR apply).
STATUS_STYLE = {
    Status.OK: "$success",
    Status.WARNING: "$warning",
    Status.FAILURE: "bold $error",
    Status.SKIPPED: "dim",
    Status.PENDING: "$accent",
}
TAB_NAMES = {"monitor": "Monitor"}
CONTINUATION = " \\"
INDENT = "  "  # continued command lines are indented (outside a word only)


def _shell_words(code: str) -> tuple[list[str], str]:
    """The command's words (split at unquoted spaces, where a line may break) and its trailing
    ``# comment`` ('' if none)."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    comment = ""
    for index, char in enumerate(code):
        if not quote and char == "#" and (index == 0 or code[index - 1].isspace()):
            comment = code[index:]
            break
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == " ":
            words.append("".join(current))
            current = []
            continue
        current.append(char)
    words.append("".join(current))
    return [word for word in words if word], comment


def _split_word(word: str, room: int) -> list[str]:
    """A word longer than ``room`` cut into parts that a backslash-newline can join again: never inside
    single quotes; a part that cannot be cut stays whole (and long)."""
    parts: list[str] = []
    start, quote = 0, ""
    for index, char in enumerate(word):
        if index - start >= room - 1 and not quote:
            parts.append(word[start:index])
            start = index
        if quote and char == quote:
            quote = ""
        elif not quote and char in "'\"":
            quote = char
    parts.append(word[start:])
    return [part for part in parts if part]


def is_command(line: str) -> bool:
    """Whether a fix line is a shell command to paste (``export ...``, ``/venv/bin/python -m pip ...``,
    perhaps with a ``# comment``) rather than a sentence: one starts with a capital letter, quotes commands
    in backticks or introduces one after a colon."""
    code = _shell_words(line.strip())[0]
    text = " ".join(code)
    return bool(code) and not text[0].isupper() and "`" not in text and not any(w.endswith(":") for w in code)


def wrap_command(line: str, width: int) -> list[str]:
    """A shell command in lines of at most ``width`` cells that the shell reads as the same command: breaks
    between words end in `` \\`` and the next line is indented; a word too long for a line is cut with a
    bare ``\\`` (the shell joins it back); a trailing ``# comment`` gets lines of its own starting ``#``."""
    if len(line) <= width:
        return [line]
    pieces, comment = _shell_words(line.rstrip())
    lines: list[str] = []
    current = ""
    for number, piece in enumerate(pieces):
        room = width if number == len(pieces) - 1 and not comment else width - len(CONTINUATION)
        candidate = f"{current} {piece}" if current else piece
        if len(candidate) <= room:
            current = candidate
            continue
        if len(INDENT + piece) > room and "'" in piece:  # cannot be cut: a line of its own, not indented
            if current:
                lines.append(current + CONTINUATION)
            current = piece
        elif len(INDENT + piece) > room:  # longer than a line: cut where it stands
            *heads, current = _split_word(candidate, width - 1)
            lines += [head + "\\" for head in heads]
        elif current:
            lines.append(current + CONTINUATION)
            current = INDENT + piece
        else:
            current = piece
    if current:
        lines.append(current)
    if comment:
        if lines and len(lines[-1]) + 3 + len(comment) <= width:
            lines[-1] += "   " + comment
        else:
            text = comment.lstrip("#").strip()
            lines += ["# " + part for part in textwrap.wrap(text, max(width - 2, 8))]
    return lines


def wrap_fix(fix: str, width: int) -> list[str]:
    """Every line of a fix wrapped to ``width``: commands by `wrap_command`, sentences at spaces."""
    width = max(width, 20)
    lines: list[str] = []
    for line in fix.splitlines():
        if is_command(line):
            lines += wrap_command(line, width)
        else:
            lines += textwrap.wrap(line, width, break_on_hyphens=False) or [""]
    return lines


def head_content(finding: Finding) -> Content:
    """Title and status."""
    status = (f"  {finding.icon} {finding.status.value}", STATUS_STYLE[finding.status])
    return Content.assemble((finding.title, "bold"), status)


def tail_content(finding: Finding, width: int = 0) -> Content:
    """What was found, why it matters, and the tab Enter opens; a path longer than `width` broken after a
    "/" rather than inside a name."""
    detail, why = (break_long_words(text, width) for text in (finding.detail, finding.why))
    parts: list[str | tuple[str, str]] = [detail]
    if finding.why:
        parts += ["\n\n", ("Why it matters  ", "bold"), why]
    if finding.link_tab:
        name = TAB_NAMES.get(finding.link_tab, finding.link_tab)
        parts += ["\n\n", ("Enter", "bold"), f" opens the {name} tab."]
    return Content.assemble(*parts)


class FittedText(Static):
    """Text laid out for the widget's width by a function of that width, again whenever the width changes."""

    def __init__(self, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self._fit: Callable[[int], Content] = lambda width: Content()
        self._fitted_at = 0

    def fit_with(self, fit: Callable[[int], Content]) -> None:
        """Show `fit(width)` (width 0: not laid out yet), now and at every change of width."""
        self._fit = fit
        self._refit(self.content_region.width)

    def on_resize(self, event: events.Resize) -> None:
        if self.content_region.width != self._fitted_at:
            self._refit(self.content_region.width)

    def _refit(self, width: int) -> None:
        self._fitted_at = width
        self.update(self._fit(width))


class FixText(FittedText):
    """The fix, wrapped by `wrap_fix` to the widget's width."""

    fix = ""  # the fix shown, unwrapped

    def show(self, fix: str) -> None:
        """Show this fix."""
        self.fix = fix
        self.fit_with(lambda width: Content("\n".join(wrap_fix(fix, width) if width else fix.splitlines())))


class FixPane(Vertical):
    """The selected finding's fix under a label; hidden when it has none."""

    DEFAULT_CSS = """
    FixPane > Static { padding: 0 1; }
    FixPane #env-fix-label { text-style: bold; }
    FixPane #env-fix { width: 1fr; color: $accent; text-style: bold; text-wrap: nowrap; }
    """

    def compose(self) -> ComposeResult:
        yield Static("Fix  (c copies it):", id="env-fix-label")
        yield FixText(id="env-fix")

    def show(self, finding: Finding | None) -> None:
        """Show this finding's fix (None: nothing selected)."""
        fix = finding.fix if finding is not None else ""
        self.display = bool(fix)
        self.query_one(FixText).show(fix)


class FindingDetail(VerticalScroll):
    """Shows `finding` (None: nothing selected): title and status, what was found, why it matters."""

    DEFAULT_CSS = """
    FindingDetail > Static { padding: 0 1; }
    FindingDetail #env-why { margin-top: 1; }
    """

    finding: reactive[Finding | None] = reactive(None, always_update=True)

    def compose(self) -> ComposeResult:
        yield Static(id="env-detail")
        yield FittedText(id="env-why")

    def watch_finding(self, finding: Finding | None) -> None:
        head = self.query_one("#env-detail", Static)
        why = self.query_one("#env-why", FittedText)
        head.update(head_content(finding) if finding is not None else "")
        why.fit_with(lambda width: tail_content(finding, width) if finding is not None else Content())

    def text(self) -> str:
        """What the pane shows and the fix, as plain text (for tests and screen readers)."""
        parts = [str(self.query_one(f"#{name}", Static).render()) for name in ("env-detail", "env-why")]
        if self.finding is not None and self.finding.fix:
            parts.insert(1, self.finding.fix)
        return "\n".join(parts)
