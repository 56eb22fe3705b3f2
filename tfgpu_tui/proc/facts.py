"""What the host says about its processes and itself, through psutil: the one place the inspector asks.

``HostInspector`` receives a ``ProcessFacts``; the real one is ``PsutilFacts``, and tests hand it their own,
so the inspector's logic runs without ``/proc``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

import psutil

PROC = "/proc"
# How often a process kept between refreshes is checked to be the same process (its PID not reused); the
# check also reads its parent. A zombie's parent (the one to end) is read at every refresh.
IDENTITY_CHECK_SECONDS = 5.0
TF_MARKERS = (b"libtensorflow", b"_pywrap_tensorflow")


@dataclass(frozen=True)
class ProcessStat:
    """What changes while a process lives, read together at each refresh."""

    zombie: bool
    create_time: float  # seconds since the epoch; with the PID, the process's identity
    cpu_seconds: float  # user + system
    rss_mib: float
    parent_pid: int  # as of the last identity check (PsutilFacts: at most IDENTITY_CHECK_SECONDS old)
    # the size of its address space: loading a library (TensorFlow's) changes it, so an unchanged size means
    # its maps need no new look; None: not known (then they are read again)
    virtual_bytes: int | None = None


@dataclass(frozen=True)
class ProcessIdentity:
    """What does not change while a process lives (short of an exec)."""

    uid: int
    user: str | None  # None: the uid has no name here (a container's user, say)
    cmdline: list[str]
    name: str  # the kernel's name for it, for processes without argv
    environ: bytes | None  # the raw environment; None: not readable (another user's process)


class ProcessFacts(Protocol):
    """The questions the inspector asks about the host."""

    def pids(self) -> list[int]: ...

    def stat(self, pid: int) -> ProcessStat | None:
        """None when the process does not exist (here) or cannot be read."""
        ...

    def identity(self, pid: int) -> ProcessIdentity:
        """Raises ProcessLookupError when it has gone, PermissionError when it may not be read."""
        ...

    def name(self, pid: int) -> str | None:
        """None when it cannot be read (gone)."""
        ...

    def tensorflow_loaded(self, pid: int) -> bool | None: ...

    def host_cpu_times(self) -> tuple[float, float]:
        """The host's busy and total CPU seconds since boot."""
        ...

    def host_memory(self) -> tuple[int, int]:
        """The host's total and available memory in bytes."""
        ...


def tensorflow_loaded(pid: int, proc: str = PROC) -> bool | None:
    """Whether the process has a TensorFlow library mapped; None when its maps cannot be read. Its maps are
    scanned for a marker (psutil's ``memory_maps`` parses ``smaps``, many times the cost)."""
    try:
        with open(f"{proc}/{pid}/maps", "rb") as handle:
            tail = b""
            while chunk := handle.read(1 << 16):
                block = tail + chunk
                if any(marker in block for marker in TF_MARKERS):
                    return True
                tail = block[-32:]
    except OSError:
        return None
    return False


def read_environ(pid: int) -> bytes | None:
    """The raw ``/proc/PID/environ`` (readable for one's own processes only); None when unreadable. Kept raw
    (psutil's ``environ()`` parses the same file) so that the child marker is matched exactly."""
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as handle:
            return handle.read(1 << 20)
    except OSError:
        return None


@dataclass
class _Kept:
    """A psutil Process kept between refreshes, with its parent and when its identity was last checked."""

    process: psutil.Process
    parent_pid: int
    checked: float  # the clock's time


class PsutilFacts:
    """The real host, through psutil. `pids` limits `pids()` to those processes (while they run); every
    process of the host by default."""

    def __init__(
        self, pids: Collection[int] | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._only = None if pids is None else frozenset(pids)
        self._clock = clock
        self._users: dict[int, str | None] = {}
        self._processes: dict[int, _Kept] = {}  # kept between refreshes

    def pids(self) -> list[int]:
        pids = psutil.pids()
        alive = set(pids)
        for gone in [pid for pid in self._processes if pid not in alive]:
            del self._processes[gone]
        return pids if self._only is None else [pid for pid in pids if pid in self._only]

    def stat(self, pid: int) -> ProcessStat | None:
        # The Process is kept between refreshes, so that a refresh reads two files (stat, under oneshot(), and
        # statm). Its identity is checked every IDENTITY_CHECK_SECONDS, not at every refresh: ppid() makes
        # psutil compare the PID's process with this one (a second Process) and raise NoSuchProcess when the
        # PID is another's now; a process that has gone raises it at its next read.
        for cached in (True, False):
            kept = self._processes.get(pid) if cached else None
            try:
                now = self._clock()
                if kept is None:
                    process = psutil.Process(pid)
                    kept = self._processes[pid] = _Kept(process, process.ppid(), now)
                process = kept.process
                with process.oneshot():
                    zombie = process.status() == psutil.STATUS_ZOMBIE
                    if zombie or now - kept.checked >= IDENTITY_CHECK_SECONDS:
                        kept.parent_pid, kept.checked = process.ppid(), now
                    times = process.cpu_times()
                    memory = process.memory_info()
                    return ProcessStat(
                        zombie,
                        process.create_time(),
                        times.user + times.system,
                        memory.rss / 2**20,
                        kept.parent_pid,
                        memory.vms,
                    )
            except psutil.NoSuchProcess:
                self._processes.pop(pid, None)  # gone, or its PID reused: asked afresh once
            except (psutil.Error, OSError):
                return None
        return None

    def cpu_reading(self, pid: int) -> tuple[float, float] | None:
        """(create time, CPU seconds) of a process, None when it has gone or may not be read: what a CPU
        baseline needs, without the parent, memory or identity check of `stat` (nothing is kept)."""
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                times = process.cpu_times()
                return process.create_time(), times.user + times.system
        except (psutil.Error, OSError):
            return None

    def identity(self, pid: int) -> ProcessIdentity:
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                uid = process.uids().real
                try:
                    cmdline = process.cmdline()
                except psutil.AccessDenied:  # hidden by the kernel's settings: known by its name alone
                    cmdline = []
                name = process.name()
        except psutil.NoSuchProcess:
            raise ProcessLookupError(pid) from None
        except psutil.AccessDenied:
            raise PermissionError(pid) from None
        return ProcessIdentity(uid, self._user(uid), cmdline, name, read_environ(pid))

    def _user(self, uid: int) -> str | None:
        """The login name of `uid` (the password database is read once per uid)."""
        if uid not in self._users:
            import pwd

            try:
                self._users[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                self._users[uid] = None
        return self._users[uid]

    def name(self, pid: int) -> str | None:
        # whatever runs under the PID now: a kept Process reads its name as a new one would (one read)
        kept = self._processes.get(pid)
        try:
            return (kept.process if kept is not None else psutil.Process(pid)).name()
        except (psutil.Error, OSError):
            return None

    def tensorflow_loaded(self, pid: int) -> bool | None:
        return tensorflow_loaded(pid)

    def host_cpu_times(self) -> tuple[float, float]:
        # counted as psutil.cpu_percent counts them: guest time is inside user time; idle and iowait not busy
        times = psutil.cpu_times()
        total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
        idle = times.idle + getattr(times, "iowait", 0.0)
        return total - idle, total

    def host_memory(self) -> tuple[int, int]:
        memory = psutil.virtual_memory()
        return memory.total, memory.available


@dataclass(frozen=True)
class CpuBaseline:
    """CPU time of every process at one moment: the start of a one-shot's CPU window."""

    taken: float  # time.time() when read
    seconds: dict[int, tuple[float, float]]  # pid -> (create time, CPU seconds)
    host: tuple[float, float]  # the host's (busy, total) CPU seconds, see host_cpu_times

    def since(self, pid: int, create_time: float) -> float | None:
        """The CPU seconds `pid` had at the baseline, if it is still the same process (create time)."""
        entry = self.seconds.get(pid)
        return entry[1] if entry is not None and entry[0] == create_time else None


def take_baseline(facts: PsutilFacts | None = None) -> CpuBaseline:
    """Read the CPU time of every process now."""
    facts = facts or PsutilFacts()
    seconds: dict[int, tuple[float, float]] = {}
    for pid in facts.pids():
        reading = facts.cpu_reading(pid)
        if reading is not None:
            seconds[pid] = reading
    return CpuBaseline(time.time(), seconds, facts.host_cpu_times())


def cpu_percent_between(before: tuple[float, float], after: tuple[float, float]) -> float:
    """The host's CPU % (of all cores) between two host_cpu_times readings."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return round(min(max(100.0 * busy / total, 0.0), 100.0), 1) if total > 0 else 0.0
