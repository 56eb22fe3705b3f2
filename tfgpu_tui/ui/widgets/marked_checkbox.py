"""A checkbox that says its state without colour: ``▐X▌`` when on, ``▐ ▌`` when off (Textual draws the X in
both states and tells them apart by its colour only, which NO_COLOR and monochrome terminals drop)."""

from __future__ import annotations

from textual.widgets import Checkbox

ON, OFF = "X", " "


class MarkedCheckbox(Checkbox):
    """A Checkbox whose box holds an X only when it is checked."""

    def on_mount(self) -> None:
        self.BUTTON_INNER = ON if self.value else OFF

    def watch_value(self) -> None:
        self.BUTTON_INNER = ON if self.value else OFF
        super().watch_value()
        self.refresh()
