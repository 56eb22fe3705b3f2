"""COLUMNS/LINES exported by a shell must not freeze the terminal app's size (issue 30 item 1)."""

from tfgpu_tui.cli import forget_inherited_terminal_size


def test_terminal_driver_forgets_inherited_size() -> None:
    environ = {"COLUMNS": "80", "LINES": "24", "TERM": "xterm"}
    forget_inherited_terminal_size(environ)
    assert environ == {"TERM": "xterm"}


def test_web_driver_keeps_its_size() -> None:
    environ = {"COLUMNS": "120", "LINES": "40", "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"}
    forget_inherited_terminal_size(environ)
    assert environ["COLUMNS"] == "120" and environ["LINES"] == "40"


def test_nothing_to_forget() -> None:
    environ: dict[str, str] = {}
    forget_inherited_terminal_size(environ)
    assert environ == {}
