"""The one interpreter the dashboard's Environment tab, Batch probe and header use, kept between uses: given
(``--python``), picked (the `p` picker), else chosen by `targets.resolve_target`. A chosen TensorFlow job that
has ended is told by `job_ended`, so that the next choice forgets it."""

from __future__ import annotations

import threading
from collections.abc import Callable

from tfgpu_tui.env.targets import Target, resolve_target
from tfgpu_tui.proc.python_processes import job_running

PICKED = "chosen with p"


class InterpreterChoice:
    """The current `Target`. `current` and `choose_again` may block (they ask interpreters in child
    processes): call them from worker threads; `pick` and `job_ended` return at once."""

    def __init__(self, python: str | None, resolve: Callable[[str | None], Target] = resolve_target) -> None:
        """`python`: the ``--python`` setting, None where the user gave none; `resolve` chooses from it."""
        self._python = python
        self._resolve = resolve
        self._picked: Target | None = None
        self._target: Target | None = None
        self._choosing = threading.Lock()  # one choice at a time
        self._setting = threading.Lock()  # short: a pick never waits for a choice

    @property
    def target(self) -> Target | None:
        """The interpreter in use, None until first chosen."""
        return self._target

    def current(self) -> Target:
        """The interpreter in use, chosen now when there is none yet."""
        with self._choosing:
            return self._target or self._store(self._find())

    def choose_again(self) -> Target:
        """Choose again (a pick with p stays): a job that has ended is no longer a candidate."""
        with self._choosing:
            return self._store(self._find())

    def pick(self, python: str) -> Target:
        """Use `python` from now on (the `p` picker), until another pick."""
        known = self._target.candidates if self._target else ()
        with self._setting:
            self._picked = self._target = Target(python, PICKED, known, PICKED)
            return self._target

    def job_ended(self) -> bool:
        """Whether the interpreter in use was chosen as a running TensorFlow job that has ended since."""
        target = self._target
        return target is not None and target.pid is not None and not job_running(target.pid, target.started)

    def _find(self) -> Target:
        return self._picked or self._resolve(self._python)

    def _store(self, target: Target) -> Target:
        """Keep `target` unless a pick came while it was being chosen."""
        with self._setting:
            if self._picked is None or target is self._picked:
                self._target = target
            return self._target or target
