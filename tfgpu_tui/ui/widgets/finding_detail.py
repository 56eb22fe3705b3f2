"""The Environment tab's detail pane: the selected finding's title, its fix, what was found, why it matters.

The fix is a command to paste, so it is never wrapped: it sits on its own lines in a box that scrolls sideways
(and the tab's `c` copies it).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import HorizontalScroll, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from tfgpu_tui.env.findings import Finding, Status

#: Theme variables for each status (so themes and NO_COLOR apply).
STATUS_STYLE = {
    Status.OK: "$success",
    Status.WARNING: "$warning",
    Status.FAILURE: "bold $error",
    Status.SKIPPED: "dim",
    Status.PENDING: "$accent",
}
TAB_NAMES = {"monitor": "Monitor"}


def head_content(finding: Finding) -> Content:
    """Title and status."""
    status = (f"  {finding.icon} {finding.status.value}", STATUS_STYLE[finding.status])
    return Content.assemble((finding.title, "bold"), status)


def tail_content(finding: Finding) -> Content:
    """What was found, why it matters, and the tab Enter opens."""
    parts: list[str | tuple[str, str]] = [finding.detail]
    if finding.why:
        parts += ["\n\n", ("Why it matters  ", "bold"), finding.why]
    if finding.link_tab:
        name = TAB_NAMES.get(finding.link_tab, finding.link_tab)
        parts += ["\n\n", ("Enter", "bold"), f" opens the {name} tab."]
    return Content.assemble(*parts)


class FindingDetail(VerticalScroll):
    """Shows `finding` (None: nothing selected)."""

    finding: reactive[Finding | None] = reactive(None, always_update=True)

    def compose(self) -> ComposeResult:
        yield Static(id="env-detail")
        yield Static("Fix  (c copies it):", id="env-fix-label")
        with HorizontalScroll(id="env-fix-scroll"):
            yield Static(id="env-fix")
        yield Static(id="env-why")

    def watch_finding(self, finding: Finding | None) -> None:
        head = self.query_one("#env-detail", Static)
        fix = self.query_one("#env-fix", Static)
        why = self.query_one("#env-why", Static)
        has_fix = finding is not None and bool(finding.fix)
        for widget in (self.query_one("#env-fix-label"), self.query_one("#env-fix-scroll")):
            widget.display = has_fix
        if finding is None:
            head.update("")
            why.update("")
            fix.update("")
            return
        head.update(head_content(finding))
        fix.update(Content(finding.fix))
        why.update(tail_content(finding))

    def text(self) -> str:
        """Everything the pane shows, as plain text (for tests and screen readers)."""
        parts = [str(self.query_one(f"#{name}", Static).render()) for name in ("env-detail", "env-why")]
        if self.finding is not None and self.finding.fix:
            parts.insert(1, self.finding.fix)
        return "\n".join(parts)
