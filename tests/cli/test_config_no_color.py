"""`NO_COLOR` is honoured: Textual turns the dashboard monochrome when the variable is set."""

from __future__ import annotations

import pytest
from textual.filter import Monochrome, NoColor

from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp


def colour_filters(app: TfgpuApp) -> list[object]:
    return [f for f in app.get_line_filters() if isinstance(f, (Monochrome, NoColor))]


async def test_no_color_makes_the_dashboard_monochrome(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test():
        assert app.no_color
        assert colour_filters(app)


async def test_colours_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    app = TfgpuApp(Settings(demo=True))
    async with app.run_test():
        assert not app.no_color
        assert not colour_filters(app)
