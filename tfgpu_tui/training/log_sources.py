"""From a process to the file its output goes to, and from a log file back to the process writing it.

This is how `nohup python train.py > train.log 2>&1 &` jobs are found without typing a path:
``/proc/PID/fd/1`` (stdout) and ``/proc/PID/fd/2`` (stderr) are symlinks to what the streams point at.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import psutil

_DELETED_SUFFIX = " (deleted)"


class OutputKind(Enum):
    """What a process's standard output or error is connected to."""

    FILE = "file"
    DELETED_FILE = "deleted file"
    PIPE = "pipe"
    TERMINAL = "terminal"
    SOCKET = "socket"
    NULL = "/dev/null"
    CLOSED = "closed"
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class ProcessOutput:
    """Where one process writes: the log file when there is one, otherwise why there is none."""

    pid: int
    kind: OutputKind
    path: Path | None
    stream: str  # "stdout" or "stderr": the stream the answer was taken from
    detail: str = ""

    @property
    def message(self) -> str:
        """A sentence for the user about where this process's output goes."""
        if self.kind is OutputKind.FILE:
            return f"PID {self.pid} writes its {self.stream} to {self.path}"
        reasons = {
            OutputKind.DELETED_FILE: f"its {self.stream} goes to a file that was deleted ({self.path}); "
            "the data is only reachable through /proc while the process lives",
            OutputKind.PIPE: f"its {self.stream} goes to a pipe (another program reads it), not to a file",
            OutputKind.TERMINAL: f"its {self.stream} goes to a terminal ({self.detail}), not to a file; "
            "start it as `nohup python train.py > train.log 2>&1 &` to get a log",
            OutputKind.SOCKET: f"its {self.stream} goes to a socket, not to a file",
            OutputKind.NULL: f"its {self.stream} is discarded (/dev/null)",
            OutputKind.CLOSED: f"its {self.stream} is closed",
            OutputKind.UNREADABLE: f"cannot see where its output goes: {self.detail}",
        }
        return f"PID {self.pid}: {reasons[self.kind]}"


def _classify(pid: int, fd: int, proc_root: Path) -> ProcessOutput:
    stream = "stdout" if fd == 1 else "stderr"
    link = proc_root / str(pid) / "fd" / str(fd)
    try:
        target = os.readlink(link)
    except FileNotFoundError:
        if not (proc_root / str(pid)).exists():
            return ProcessOutput(pid, OutputKind.UNREADABLE, None, stream, "no such process")
        return ProcessOutput(pid, OutputKind.CLOSED, None, stream)
    except PermissionError:
        return ProcessOutput(
            pid, OutputKind.UNREADABLE, None, stream, "permission denied (another user's process)"
        )
    except OSError as error:
        return ProcessOutput(pid, OutputKind.UNREADABLE, None, stream, error.strerror or str(error))
    if target.startswith("pipe:"):
        return ProcessOutput(pid, OutputKind.PIPE, None, stream, target)
    if target.startswith("socket:"):
        return ProcessOutput(pid, OutputKind.SOCKET, None, stream, target)
    if target == "/dev/null":
        return ProcessOutput(pid, OutputKind.NULL, None, stream)
    if target.startswith(("/dev/pts/", "/dev/tty")) or target == "/dev/console":
        return ProcessOutput(pid, OutputKind.TERMINAL, None, stream, target)
    if target.endswith(_DELETED_SUFFIX):
        return ProcessOutput(pid, OutputKind.DELETED_FILE, Path(target[: -len(_DELETED_SUFFIX)]), stream)
    if target.startswith("/"):
        return ProcessOutput(pid, OutputKind.FILE, Path(target), stream)
    return ProcessOutput(pid, OutputKind.UNREADABLE, None, stream, f"unexpected target {target!r}")


def process_output(pid: int, proc_root: Path = Path("/proc")) -> ProcessOutput:
    """Where `pid` writes its output: stdout if that is a regular file, else stderr if that is, else
    the most telling answer about stdout."""
    stdout = _classify(pid, 1, proc_root)
    if stdout.kind is OutputKind.FILE:
        return stdout
    stderr = _classify(pid, 2, proc_root)
    if stderr.kind is OutputKind.FILE:
        return stderr
    return stdout


@dataclass(frozen=True)
class LogWriter:
    """The process that writes a log file: who it is, and whether it is still alive."""

    pid: int
    command: str
    create_time: float | None
    alive: bool
    exit_status: int | None = None

    def describe(self) -> str:
        """One line for the Training tab."""
        state = "alive" if self.alive else "exited"
        if not self.alive and self.exit_status is not None:
            state = f"exited with status {self.exit_status}"
        return f"PID {self.pid} ({state}): {self.command}"


def find_log_writer(log_path: Path) -> LogWriter | None:
    """The first process whose stdout or stderr is `log_path` (the same file, by device and inode)."""
    try:
        wanted = log_path.stat()
    except OSError:
        return None
    for proc in psutil.process_iter(["pid"]):
        for fd in (1, 2):
            try:
                target = os.stat(f"/proc/{proc.pid}/fd/{fd}")
            except OSError:
                continue
            if (target.st_dev, target.st_ino) == (wanted.st_dev, wanted.st_ino):
                return _writer_from(proc)
    return None


def _writer_from(proc: psutil.Process) -> LogWriter:
    try:
        with proc.oneshot():
            command = " ".join(proc.cmdline()) or proc.name()
            return LogWriter(proc.pid, command, proc.create_time(), proc.is_running())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return LogWriter(proc.pid, "?", None, False)


def refresh_writer(writer: LogWriter) -> LogWriter:
    """The same writer, re-checked: alive only if the PID still belongs to the same process.

    The exit status of a process that is not our child cannot be read on Linux; it stays None.
    """
    try:
        proc = psutil.Process(writer.pid)
        same = writer.create_time is None or abs(proc.create_time() - writer.create_time) < 0.05
        alive = same and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        alive = False
    return LogWriter(writer.pid, writer.command, writer.create_time, alive, writer.exit_status)
