"""Running Python processes and TensorFlow jobs of this user, read from /proc (and psutil for start
times): their interpreters (the environment TensorFlow was loaded from, ``/proc/PID/maps``; else
``/proc/PID/exe``), their commands, whether a job still runs. tfgpu-tui's own children are left out."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from tfgpu_tui.proc.marks import argv_is_child, environ_is_child

PROC = "/proc"
MAX_PROCESSES = 16  # running processes looked at (the first found)
SITE_PACKAGES = re.compile(rb"(/\S+?)/lib(?:64)?/python\d+\.\d+/(?:site|dist)-packages/tensorflow/")


class Job(NamedTuple):
    """One of this user's running TensorFlow processes."""

    pid: int
    command: str  # its first words, e.g. "python train.py"
    started: float | None = None  # psutil's create_time


def prefix_python(prefix: str) -> str | None:
    """The environment `prefix`'s interpreter (``<prefix>/bin/python3``), None without one."""
    for name in ("python3", "python"):
        path = os.path.join(prefix, "bin", name)
        if os.access(path, os.X_OK):
            return path
    return None


def executable_of(pid: int) -> str | None:
    """The binary the process runs (``/proc/PID/exe``), None when unreadable."""
    try:
        return os.readlink(f"{PROC}/{pid}/exe")
    except OSError:
        return None


def process_interpreter(pid: int) -> str | None:
    """The interpreter of a running TensorFlow process: the environment its TensorFlow was loaded from
    (``<prefix>/bin/python3``), else ``/proc/PID/exe``."""
    try:
        with open(f"{PROC}/{pid}/maps", "rb") as handle:
            match = SITE_PACKAGES.search(handle.read(64 << 20))
    except OSError:
        match = None
    python = prefix_python(match.group(1).decode(errors="replace")) if match else None
    return python or executable_of(pid)


def other_pids(own_pid: int | None = None) -> list[int]:
    """Every process's PID but this one's (`own_pid`), in order; empty when /proc cannot be listed."""
    own_pid = os.getpid() if own_pid is None else own_pid
    try:
        return sorted(int(n) for n in os.listdir(PROC) if n.isdigit() and int(n) != own_pid)
    except OSError:
        return []


def python_process(pid: int, uid: int) -> tuple[list[str], bytes] | None:
    """The argv and raw environ of `uid`'s Python process `pid`, None when it is another user's, not Python,
    gone, or one of tfgpu-tui's own children."""
    from tfgpu_tui.proc.facts import read_environ

    try:
        if os.stat(f"{PROC}/{pid}").st_uid != uid:
            return None
        if not Path(f"{PROC}/{pid}/comm").read_bytes().startswith(b"python"):
            return None
        argv = Path(f"{PROC}/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    environ = read_environ(pid) or b""
    if argv_is_child(argv) or environ_is_child(environ):
        return None
    return argv, environ


def short_command(argv: list[str]) -> str:
    """A command line's first words (``python train.py``)."""
    return " ".join(part for part in argv[:3] if part)


def process_started(pid: int) -> float | None:
    """When process `pid` started (psutil's create_time), None when it is gone or a zombie."""
    import psutil  # here: the dashboard's first frame imports this module, and needs no process facts

    try:
        process = psutil.Process(pid)
        return None if process.status() == psutil.STATUS_ZOMBIE else process.create_time()
    except psutil.Error:
        return None


def job_running(pid: int, started: float | None) -> bool:
    """Whether the job `pid` that started at `started` still runs (a PID used again by another process is
    not it)."""
    now = process_started(pid)
    return now is not None and (started is None or now == started)


def tensorflow_processes(
    own_pid: int | None = None, uid: int | None = None, pids: Iterable[int] | None = None
) -> list[Job]:
    """This user's (`uid`) Python processes with TensorFlow loaded, tfgpu-tui's own children left out.
    `pids` limits the look to those processes (all others of the machine by default)."""
    from tfgpu_tui.proc.facts import tensorflow_loaded

    uid = os.getuid() if uid is None else uid
    found: list[Job] = []
    for pid in other_pids(own_pid) if pids is None else pids:
        seen = python_process(pid, uid)
        if seen is None or not tensorflow_loaded(pid):
            continue
        started = process_started(pid)
        if started is not None:
            found.append(Job(pid, short_command(seen[0]), started))
        if len(found) >= MAX_PROCESSES:
            break
    return found


def running_pythons(
    own_pid: int | None = None, uid: int | None = None, pids: Iterable[int] | None = None
) -> list[tuple[int, str, str]]:
    """(PID, interpreter, first words of its command) of this user's running Python processes
    (tfgpu-tui's own children left out): the interpreter is the path it was started as when absolute (a
    venv's bin/python), else its environment's, else its binary. `pids` limits the look to those processes
    (all others of the machine by default)."""
    uid = os.getuid() if uid is None else uid
    found: list[tuple[int, str, str]] = []
    for pid in other_pids(own_pid) if pids is None else pids:
        seen = python_process(pid, uid)
        python = _started_as(pid, *seen) if seen is not None else None
        if seen is not None and python:
            found.append((pid, python, short_command(seen[0])))
            if len(found) >= MAX_PROCESSES:
                break
    return found


def _started_as(pid: int, argv: list[str], environ: bytes) -> str | None:
    """The interpreter a process runs: argv[0] when an absolute path to an executable, else that of the
    environment it was started in ($VIRTUAL_ENV / $CONDA_PREFIX), else /proc/PID/exe."""
    if argv and os.path.isabs(argv[0]) and os.access(argv[0], os.X_OK):
        return argv[0]
    for line in environ.split(b"\0"):
        name, _, value = line.partition(b"=")
        if name in (b"VIRTUAL_ENV", b"CONDA_PREFIX") and value:
            python = prefix_python(value.decode(errors="replace"))
            if python:
                return python
    return executable_of(pid)
