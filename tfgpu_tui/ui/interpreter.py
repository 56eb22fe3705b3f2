"""The app's one interpreter (env/interpreter_choice.py) for the Environment tab, the Batch probe and the
header: a signal tells each of them when it changes, and `p` opens the picker from either tab."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from textual.app import App
from textual.dom import DOMNode
from textual.signal import Signal

from tfgpu_tui.env.interpreter_choice import InterpreterChoice
from tfgpu_tui.env.targets import (
    Candidate,
    Target,
    picker_candidates,
    picker_order,
    resolve_target,
    with_versions,
)
from tfgpu_tui.proc.python_processes import tensorflow_processes
from tfgpu_tui.settings import Settings

DEMO_WHY = "the demo's simulated machine"


class SharedInterpreter:
    """One per app (``app.interpreter``). `current` and `choose_again` block (worker threads only); the rest
    is called from the event loop."""

    # Where candidates come from, as attributes so that a test can limit them to its own processes.
    find_jobs = staticmethod(tensorflow_processes)  # this user's running TensorFlow jobs
    find_interpreters = staticmethod(picker_candidates)  # what p lists

    def __init__(self, app: App, settings: Settings) -> None:
        self._app = app
        self.demo = settings.demo
        resolve = self._demo_target if settings.demo else self._resolve
        self.choice = InterpreterChoice(settings.python, resolve)
        self.changed: Signal[Target] = Signal(app, "interpreter-changed")
        self._rechoosing = False
        if settings.demo:
            self.choice.current()  # at once: nothing to ask

    @property
    def target(self) -> Target | None:
        """The interpreter in use; None until first chosen."""
        return self.choice.target

    def _resolve(self, python: str | None) -> Target:
        return resolve_target(python, tf_processes=self.find_jobs)

    @staticmethod
    def _demo_target(python: str | None) -> Target:
        from tfgpu_tui.gpu.simulated import DEMO_MACHINE

        return Target(DEMO_MACHINE.python, DEMO_WHY, reason="demo")

    def current(self) -> Target:
        """The interpreter in use, chosen now if there is none yet (worker thread)."""
        return self._told(self.choice.target, self.choice.current())

    def choose_again(self) -> Target:
        """Choose again, forgetting a job that has ended (worker thread); a pick with p stays."""
        try:
            return self._told(self.choice.target, self.choice.choose_again())
        finally:
            self._rechoosing = False

    def _told(self, before: Target | None, after: Target) -> Target:
        """`after`, the subscribers told (from a worker thread) when it differs from `before`."""
        if after != before:
            with contextlib.suppress(RuntimeError):  # the app has stopped meanwhile
                self._app.call_from_thread(self.changed.publish, after)
        return after

    def pick(self, python: str) -> None:
        """Use `python` everywhere from now on."""
        self.changed.publish(self.choice.pick(python))

    def start_choosing(self) -> None:
        """Choose in a worker thread when nothing is chosen yet (the header's first line)."""
        if self.choice.target is None:
            self._app.run_worker(self.current, thread=True, group="interpreter", exit_on_error=False)

    def forget_ended_job(self) -> None:
        """When the interpreter in use is a TensorFlow job that has ended, choose again (worker thread)."""
        if not self._rechoosing and self.choice.job_ended():
            self._rechoosing = True
            self._app.run_worker(self.choose_again, thread=True, group="interpreter", exit_on_error=False)

    def open_picker(self) -> None:
        """List every interpreter found with its TensorFlow version (found in a worker thread); the one picked
        is used by all three at once."""
        if self.demo:
            self._app.notify(
                "The demo uses the simulated machine's Python; without --demo, p lists this machine's.",
                severity="warning",
            )
            return
        self._app.notify("Looking for Python interpreters...", timeout=3)
        self._app.run_worker(self._find_and_offer, thread=True, group="picker", exit_on_error=False)

    def _find_and_offer(self) -> None:
        candidates = picker_order(with_versions(self.find_interpreters()))
        target = self.choice.target
        if target is not None and target.python not in [c.python for c in candidates]:
            candidates.append(Candidate(target.python, target.why))
        self._app.call_from_thread(self._offer, candidates, target.python if target else "")

    def _offer(self, candidates: list[Candidate], current: str) -> None:
        from tfgpu_tui.ui.widgets.target_picker import TargetPicker

        def picked(python: str | None) -> None:
            if python and python != current:
                self.pick(python)

        self._app.push_screen(TargetPicker(candidates, current), picked)


def shared_interpreter(node: DOMNode) -> SharedInterpreter:
    """The app's SharedInterpreter (`TfgpuApp.interpreter`)."""
    shared = getattr(node.app, "interpreter", None)
    if not isinstance(shared, SharedInterpreter):
        raise RuntimeError(f"{type(node.app).__name__} has no SharedInterpreter as .interpreter")
    return shared


def subscribe(node: DOMNode, callback: Callable[[Target], object]) -> SharedInterpreter:
    """Call `callback` with each new interpreter from now on, and with the current one if there is one."""
    shared = shared_interpreter(node)
    shared.changed.subscribe(node, callback)
    if shared.target is not None:
        callback(shared.target)
    return shared


def home_short(path: str) -> str:
    """`path` with the home directory written ``~``."""
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + os.sep) else path


def environment_of(python: str) -> str:
    """The environment's folder of an interpreter in ``<prefix>/bin/``, else the interpreter itself."""
    folder, name = os.path.split(python)
    in_bin = name.startswith("python") and os.path.basename(folder) == "bin"
    return os.path.dirname(folder) if in_bin else python


def interpreter_forms(target: Target) -> list[str]:
    """Ways to say the interpreter in use and why, longest first (the header takes the longest that fits)."""
    python = home_short(target.python)
    prefix = home_short(environment_of(target.python))
    reason = target.reason or target.why
    brief = f"job {target.pid}" if target.pid is not None else reason
    forms = [f"Python: {python} ({reason})", f"{python} ({reason})", f"{prefix} ({reason})"]
    return [*forms, f"{prefix} ({brief})", prefix] if brief != reason else [*forms, prefix]


def interpreter_line(target: Target) -> str:
    """One line for a tab: ``Python: ~/venv/bin/python (activated venv)``."""
    return interpreter_forms(target)[0]
