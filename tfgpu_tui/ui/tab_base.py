"""The base class of the four tabs: shared settings, and where focus goes when the tab opens."""

from __future__ import annotations

from textual.containers import Vertical
from textual.widgets import Input, TextArea

from tfgpu_tui.settings import Settings


class DashboardTab(Vertical):
    """One tab's body. Subclasses declare their own BINDINGS; they are active (and shown in the
    footer and the help screen) while focus is inside the tab."""

    DEFAULT_CSS = """
    DashboardTab { height: 1fr; }
    """
    TAB_ID: str = ""
    TAB_TITLE: str = ""

    def __init__(self, settings: Settings) -> None:
        super().__init__(id=f"{self.TAB_ID}-tab")
        self.settings = settings

    def reveal(self, target: str) -> None:
        """Bring `target` (something this tab knows by id) into view; tabs with linkable items override it."""

    def focus_default(self) -> None:
        """Give focus to the tab's main widget: its first focusable descendant that does not take text
        (so that the app's keys, such as 1-4 to switch tabs, keep working), else itself."""
        focusable = [widget for widget in self.query("*") if widget.focusable]
        for widget in focusable:
            if not isinstance(widget, (Input, TextArea)):
                widget.focus()
                return
        if self.focusable:
            self.focus()
        elif focusable:
            focusable[0].focus()
