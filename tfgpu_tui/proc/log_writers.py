"""From a process to the file its output goes to, and from a log file back to the process writing it.

This is how `nohup python train.py > train.log 2>&1 &` jobs are found without typing a path:
``/proc/PID/fd/1`` (stdout) and ``/proc/PID/fd/2`` (stderr) are symlinks to what the streams point at.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import psutil

from tfgpu_tui.exit_status import describe_exit
from tfgpu_tui.proc.facts import tensorflow_loaded
from tfgpu_tui.text_clean import clean_line

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
    cwd: Path | None = None  # its working directory (checkpoints are often written there); None if unreadable

    def describe(self) -> str:
        """One line for the Training tab."""
        return f"PID {self.pid} ({self.state}): {self.command}"

    @property
    def state(self) -> str:
        """``alive``, ``exited``, ``exited with status N`` or ``was killed by signal N`` (the last two
        only for our own child)."""
        if self.alive:
            return "alive"
        if self.exit_status is None:
            return "exited"
        return describe_exit(self.exit_status)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: pid, command, alive, exit_status (null unless known)."""
        return {
            "pid": self.pid,
            "command": self.command,
            "alive": self.alive,
            "exit_status": self.exit_status,
        }


class StdioWalk:
    """Which processes write to which files, from one walk of /proc, taken when first asked: the logs that
    look for their writers in the same round share it."""

    def __init__(self) -> None:
        self._writers: dict[tuple[int, int], list[psutil.Process]] | None = None

    def writer_of(self, log_path: Path) -> LogWriter | None:
        """The process whose stdout or stderr is `log_path` (the same file, by device and inode); when
        several share it (``bash run.sh > train.log`` and the Python it starts), the most recently started
        one."""
        try:
            wanted = log_path.stat()
        except OSError:
            return None
        found = self._walk().get((wanted.st_dev, wanted.st_ino))
        if not found:
            return None
        return _writer_from(max(found, key=lambda proc: proc.info.get("create_time") or 0.0))

    def _walk(self) -> dict[tuple[int, int], list[psutil.Process]]:
        if self._writers is None:
            self._writers = {}
            for proc in psutil.process_iter(["pid", "create_time"]):
                files = set()
                for fd in (1, 2):
                    try:
                        target = os.stat(f"/proc/{proc.pid}/fd/{fd}")
                    except OSError:
                        continue
                    files.add((target.st_dev, target.st_ino))
                for file in files:
                    self._writers.setdefault(file, []).append(proc)
        return self._writers


def writer_for_pid(pid: int) -> LogWriter:
    """The writer we were told about (e.g. the Monitor's selected process); gone when the PID is gone."""
    try:
        return _writer_from(psutil.Process(pid))
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return LogWriter(pid, "?", None, False)


def _writer_from(proc: psutil.Process) -> LogWriter:
    try:
        with proc.oneshot():
            command = clean_line(" ".join(proc.cmdline()) or proc.name())  # another process's argv: cleaned
            return LogWriter(proc.pid, command, proc.create_time(), proc.is_running(), cwd=_cwd(proc))
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return LogWriter(proc.pid, "?", None, False)


def _cwd(proc: psutil.Process) -> Path | None:
    try:
        return Path(proc.cwd())
    except (psutil.Error, OSError):
        return None


def refresh_writer(writer: LogWriter) -> LogWriter:
    """The same writer, re-checked: alive only if the PID still belongs to the same process.

    The exit status is known only for our own child that has not been reaped yet (read without reaping it);
    for any other process Linux does not tell it, and it stays None.
    """
    status = writer.exit_status
    try:
        proc = psutil.Process(writer.pid)
        same = writer.create_time is None or abs(proc.create_time() - writer.create_time) < 0.05
        zombie = proc.status() == psutil.STATUS_ZOMBIE
        alive = same and not zombie
        if same and zombie and status is None:
            status = child_exit_status(writer.pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        alive = False
    return LogWriter(writer.pid, writer.command, writer.create_time, alive, status, writer.cwd)


def child_exit_status(pid: int) -> int | None:
    """The exit status of our exited, not yet reaped child (minus the signal number if a signal killed it),
    read with WNOWAIT so its owner can still reap it; None for anything else."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return None
    try:
        info = waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except (ChildProcessError, OSError):
        return None
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


@dataclass(frozen=True)
class LogCandidate:
    """A running TensorFlow process whose output goes to a regular file: a log worth following."""

    pid: int
    command: str
    path: Path
    stream: str


def tensorflow_logs(
    detector: Callable[[int], bool | None] = tensorflow_loaded, proc_root: Path = Path("/proc")
) -> list[LogCandidate]:
    """The logs of the running TensorFlow processes on this host, by PID.

    Cheap first: only processes whose stdout/stderr is a regular file get their memory maps read (by
    `detector`, the GPU core's TensorFlow check). Our own process is skipped.
    """
    found: list[LogCandidate] = []
    own = os.getpid()
    try:
        names = os.listdir(proc_root)
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == own:
            continue
        pid = int(name)
        output = process_output(pid, proc_root)
        if output.kind is not OutputKind.FILE or output.path is None or not detector(pid):
            continue
        writer = writer_for_pid(pid)
        if writer.alive:
            found.append(LogCandidate(pid, writer.command, output.path, output.stream))
    return sorted(found, key=lambda candidate: candidate.pid)
