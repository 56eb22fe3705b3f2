"""JupyterLab's terminal in headless Chromium, for tests: a real `jupyter lab` on 127.0.0.1 with a token, one
terminal opened through the app's own command, keys typed over the DevTools protocol, and the text read from
xterm.js's screen buffer.

JupyterLab is started with `expose_app_in_browser`, so the page's `window.jupyterapp` reaches the terminal
widget and its xterm.js object. Each page gets two recorders: one on the browser's clipboard API (what
really reached the clipboard) and one on xterm.js's OSC 52 handler (what the program asked for; the handler
passes the sequence on unchanged).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.helpers.devtools import Browser, chromium_missing
from tests.helpers.waiting import wait_for

TOKEN = "tfgpu-tui-test-token"
# Runs in the page before JupyterLab: every write to the clipboard API is recorded, and passed on.
CLIPBOARD_RECORDER_JS = """(() => {
  window.__clipboardWrites = [];
  const clipboard = navigator.clipboard;
  if (clipboard) {
    const writeText = clipboard.writeText && clipboard.writeText.bind(clipboard);
    clipboard.writeText = (text) => { window.__clipboardWrites.push(String(text));
      return writeText ? writeText(text).catch(() => undefined) : Promise.resolve(); };
    const write = clipboard.write && clipboard.write.bind(clipboard);
    clipboard.write = (items) => { window.__clipboardWrites.push("[ClipboardItem]");
      return write ? write(items).catch(() => undefined) : Promise.resolve(); };
  }
  const execCommand = document.execCommand.bind(document);
  document.execCommand = (name, ...rest) => {
    if (String(name).toLowerCase() === "copy") window.__clipboardWrites.push(String(getSelection()));
    return execCommand(name, ...rest);
  };
})()"""
TERMINAL_JS = "window.jupyterapp.shell.currentWidget.content"
READ_SCREEN_JS = f"""(() => {{
  const terminal = {TERMINAL_JS}._term, buffer = terminal.buffer.active, rows = [];
  for (let y = 0; y < terminal.rows; y++) {{
    const line = buffer.getLine(buffer.viewportY + y);
    rows.push(line ? line.translateToString(true, 0, terminal.cols) : "");
  }}
  return rows.join("\\n");
}})()"""
OSC52_RECORDER_JS = f"""(() => {{
  window.__osc52 = [];
  {TERMINAL_JS}._term.parser.registerOscHandler(52, (data) => {{ window.__osc52.push(data); return false; }});
  return true;
}})()"""


def jupyterlab_missing() -> str | None:
    """Why JupyterLab's terminal cannot be started here, or None."""
    try:
        import jupyter_server_terminals  # noqa: F401
        import jupyterlab  # noqa: F401
    except ImportError as error:
        return f"JupyterLab is not installed in the test interpreter ({error.name}): pip install jupyterlab"
    return chromium_missing()


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """waiting.wait_for, polling every 0.2 s; a generous hang guard, not a timing assertion."""
    return wait_for(condition, timeout, what, step=0.2)


class LabTerminal:
    """A terminal in a real JupyterLab page; `text()` is what the user sees in it."""

    def __init__(self, browser: Browser, url: str) -> None:
        self.browser = browser
        browser.open_page(url, before_load=CLIPBOARD_RECORDER_JS)
        wait_until(
            lambda: browser.evaluate(
                "!!(window.jupyterapp && window.jupyterapp.commands.hasCommand('terminal:create-new'))"
            ),
            "JupyterLab's page to load",
        )
        browser.evaluate("window.jupyterapp.commands.execute('terminal:create-new').then(() => true)")
        wait_until(lambda: browser.evaluate(f"!!({TERMINAL_JS}._term)"), "the terminal to open")
        wait_until(lambda: self.text().strip(), "the shell's prompt")
        browser.evaluate(OSC52_RECORDER_JS)

    def text(self) -> str:
        """The terminal's visible rows, trailing blanks dropped."""
        return str(self.browser.evaluate(READ_SCREEN_JS))

    def size(self) -> tuple[int, int]:
        cols, rows = self.browser.evaluate(f"[{TERMINAL_JS}._term.cols, {TERMINAL_JS}._term.rows]")
        return int(cols), int(rows)

    def wait_for_text(self, needle: str | Callable[[str], bool], timeout: float = 60.0) -> str:
        check = needle if callable(needle) else (lambda text: needle in text)
        last = [""]

        def found() -> str | None:
            last[0] = self.text()
            return last[0] if check(last[0]) else None

        try:
            return str(wait_until(found, f"{needle!r} in the terminal", timeout))
        except AssertionError as error:
            raise AssertionError(f"{error}; the terminal shows:\n{last[0]}") from None

    def focus(self) -> None:
        self.browser.evaluate(f"{TERMINAL_JS}._term.focus()")

    def resize(self, cols: int, rows: int) -> None:
        """Resize the browser window so that JupyterLab fits the terminal to `cols` x `rows` cells: one step
        from the cell size, then (rarely) a nudge. Steps are a second apart: JupyterLab sends each fit to the
        server, and two fits 150 ms apart while the app drew left the pty at its old size here."""
        for attempt in range(6):
            now_cols, now_rows, cell_w, cell_h, width, height = self.browser.evaluate(
                f"""(() => {{ const t = {TERMINAL_JS}._term,
                  screen = t.element.querySelector('.xterm-screen').getBoundingClientRect();
                  return [t.cols, t.rows, screen.width / t.cols, screen.height / t.rows,
                          innerWidth, innerHeight]; }})()"""
            )
            if (now_cols, now_rows) == (cols, rows):
                return
            margin = 0.5 if attempt == 0 else 0.0
            width += (cols - now_cols + margin) * cell_w if now_cols != cols else 0
            height += (rows - now_rows + margin) * cell_h if now_rows != rows else 0
            self.browser.set_viewport(round(width), round(height))
            with contextlib.suppress(AssertionError):
                wait_until(lambda before=(now_cols, now_rows): self.size() != before, "a refit", 5)
            time.sleep(1)
        raise AssertionError(f"the terminal did not fit {cols}x{rows}: {self.size()}")

    def type(self, text: str) -> None:
        self.focus()
        self.browser.type_text(text)

    def find(self, needle: str) -> tuple[int, int]:
        """(row, column) where `needle` first appears on screen."""
        for row, line in enumerate(self.text().split("\n")):
            if needle in line:
                return row, line.index(needle)
        raise AssertionError(f"{needle!r} is not on the terminal:\n{self.text()}")

    def cell_centre(self, row: int, column: float) -> tuple[float, float]:
        """The page coordinates of the middle of a cell."""
        x, y, cell_w, cell_h = self.browser.evaluate(
            f"""(() => {{ const t = {TERMINAL_JS}._term,
              s = t.element.querySelector('.xterm-screen').getBoundingClientRect();
              return [s.x, s.y, s.width / t.cols, s.height / t.rows]; }})()"""
        )
        return x + (column + 0.5) * cell_w, y + (row + 0.5) * cell_h

    def click_text(self, needle: str) -> None:
        """A left click on the first cell of `needle` where it first appears on screen."""
        self.browser.click(*self.cell_centre(*self.find(needle)))

    def press_enter(self) -> None:
        self.focus()
        self.browser.press("Enter", "Enter", 13, "\r")

    def shift_drag_select(self, row: int, first: int, last: int) -> str:
        """Select cells `first`..`last` of a row with shift+drag, as a user copies from a program that uses
        the mouse; returns xterm.js's selection."""
        self.browser.drag(self.cell_centre(row, first - 0.4), self.cell_centre(row, last + 0.4), shift=True)
        return str(self.browser.evaluate(f"{TERMINAL_JS}._term.getSelection()"))

    def clipboard_writes(self) -> list[str]:
        return list(self.browser.evaluate("window.__clipboardWrites || []"))

    def osc52_requests(self) -> list[str]:
        return list(self.browser.evaluate("window.__osc52 || []"))


@contextlib.contextmanager
def jupyter_lab(tmp_path: Path) -> Iterator[str]:
    """`jupyter lab` on a free loopback port with its own config, data and home folders; yields its URL.
    Its terminals run bash without startup files, the test interpreter's scripts first on PATH."""
    port = free_loopback_port()
    home = tmp_path / "lab-home"
    root = tmp_path / "lab-root"
    for folder in (home, root):
        folder.mkdir(parents=True, exist_ok=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("JUPYTER", "JPY_", "TMUX", "COLUMNS", "LINES", "TFGPU_TUI"))
    }
    env.update(
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        XDG_CONFIG_HOME=str(home / "xdg"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PS1="lab$ ",
    )
    arguments = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",
        """--ServerApp.terminado_settings={"shell_command": ["/bin/bash", "--norc", "--noprofile"]}""",
    ]
    if os.geteuid() == 0:
        arguments.append("--allow-root")
    log = tmp_path / "jupyter-lab.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            arguments, env=env, cwd=root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        url = f"http://127.0.0.1:{port}/lab?token={TOKEN}"

        def answers() -> bool:
            if server.poll() is not None:
                raise AssertionError(f"jupyter lab exited early:\n{log.read_text(errors='replace')[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", timeout=2):
                    return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False

        wait_until(answers, "jupyter lab to answer", timeout=60)
        yield url
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=10)
                break


@contextlib.contextmanager
def lab_terminal(tmp_path: Path) -> Iterator[LabTerminal]:
    """A JupyterLab terminal in headless Chromium; everything is stopped afterwards."""
    profile = tmp_path / "chromium-profile"
    with jupyter_lab(tmp_path) as url:
        browser = Browser(profile)
        try:
            yield LabTerminal(browser, url)
        finally:
            browser.close()
            shutil.rmtree(profile, ignore_errors=True)
