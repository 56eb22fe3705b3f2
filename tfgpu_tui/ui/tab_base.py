"""The base class of the four tabs: shared settings, and where focus goes when the tab opens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.containers import Vertical

from tfgpu_tui.settings import Settings

if TYPE_CHECKING:
    from tfgpu_tui.gpu.model import Snapshot
    from tfgpu_tui.gpu.simulated import SimulatedSource


class DashboardTab(Vertical):
    """One tab's body. Subclasses declare their own BINDINGS; they are active (and shown in the
    footer and the help screen) while focus is inside the tab."""

    TAB_ID: str = ""
    TAB_TITLE: str = ""
    #: Below this many terminal columns the tab carries the class ``-narrow`` (panes stack vertically).
    NARROW_BELOW = 100
    #: Below this many terminal lines the tab carries the class ``-short`` (secondary panes shrink or hide).
    SHORT_BELOW = 30

    def __init__(self, settings: Settings) -> None:
        super().__init__(id=f"{self.TAB_ID}-tab")
        self.settings = settings

    def on_mount(self) -> None:
        self.apply_size_classes()  # before the first layout, so it is already the right one

    def offers(self, action: str) -> bool:
        """Whether the footer offers this action's key here (an action the session may not take is not
        offered; its key still says why not). Everything by default."""
        return True

    def release_files(self) -> None:
        """Remove what the tab wrote that would outlive the process (none by default)."""

    def observe_gpus(self, snapshot: Snapshot) -> None:
        """A whole GPU snapshot of the app's feed, for a tab that keeps something of it (none by default)."""

    def on_resize(self, event: events.Resize) -> None:
        """Keep the ``-narrow`` and ``-short`` classes in step with the terminal's size."""
        self.apply_size_classes()

    def apply_size_classes(self) -> None:
        """Set ``-narrow`` / ``-short`` from the terminal's size (the app's, so hidden tabs agree)."""
        width, height = self.app.size
        self.set_class(width < self.NARROW_BELOW, "-narrow")
        self.set_class(height < self.SHORT_BELOW, "-short")

    def simulated_gpus(self) -> SimulatedSource:
        """The GPU simulation of ``--demo`` (call from the event loop): the one the app's feed samples once
        it runs, so that a process ended there is gone in every tab; before that, a fresh simulation of the
        same machine."""
        from tfgpu_tui.gpu.feed import SnapshotFeed
        from tfgpu_tui.gpu.simulated import SimulatedSource

        feed = getattr(self.app, "feed", None)
        sampler = feed.sampler if isinstance(feed, SnapshotFeed) else None
        if sampler is not None and isinstance(sampler.source, SimulatedSource):
            return sampler.source
        return SimulatedSource(gpus=self.settings.demo_gpus)

    def reveal(self, target: str) -> None:
        """Bring `target` (something this tab knows by id) into view; tabs with linkable items override it."""

    def focus_default(self) -> None:
        """Give focus to the tab's main widget: its first focusable descendant that does not take text
        (so that the app's keys, such as 1-4 to switch tabs, keep working), else itself."""
        from textual.widgets import Input, TextArea  # TextArea is costly to import: only when needed

        focusable = [widget for widget in self.query("*") if widget.focusable]
        for widget in focusable:
            if not isinstance(widget, (Input, TextArea)):
                widget.focus()
                return
        if self.focusable:
            self.focus()
        elif focusable:
            focusable[0].focus()
