"""The Textual face of tfgpu-tui: the app, one module per tab, shared widgets."""
