"""The Textual face of tfgpu-tui: the app, one module per tab, shared widgets."""

from pathlib import Path

#: The app's stylesheet: the Monitor, the header, the kill dialog and what every tab shares (the other tabs,
#: widgets and screens carry their own DEFAULT_CSS).
APP_STYLESHEET = Path(__file__).with_name("app.tcss")
