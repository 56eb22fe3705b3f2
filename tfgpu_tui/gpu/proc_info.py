"""Who a process is, and the host's memory, read straight from ``/proc`` (Linux).

The first sample describes every GPU process before the first frame; these reads give the same values psutil
gives (its Linux code reads the same files: real uid from ``status``, create time from the start ticks and
the boot time, argv from ``cmdline``), with fewer files opened per process and without loading psutil, which
only the kill path needs.
"""

from __future__ import annotations

import os
import pwd
import time
from dataclasses import dataclass

from tfgpu_tui.gpu.proc_stat import CLOCK_TICKS, PROC

BOOT_TIME_SECONDS = 1.0  # how long a boot time read is reused
_users: dict[int, str | None] = {}
_boot: list[float] = []  # [when read (monotonic), the boot time], once read


@dataclass(frozen=True)
class ProcInfo:
    """What does not change while a process lives (short of an exec)."""

    uid: int
    user: str | None  # None: the uid has no name here (a container's user, say)
    create_time: float  # seconds since the epoch
    cmdline: list[str]
    name: str  # the kernel's name for it (comm), for processes without argv


def boot_time() -> float:
    """When the host booted (``btime`` of ``/proc/stat``), read again after BOOT_TIME_SECONDS: the kernel
    works it out from the wall clock, so it moves when the clock is set, and the kill path compares create
    times (psutil reads it each time); a sample describing 64 new processes reads it once."""
    now = time.monotonic()
    if _boot and now - _boot[0] < BOOT_TIME_SECONDS:
        return _boot[1]
    with open(f"{PROC}/stat", "rb") as handle:
        for line in handle:
            if line.startswith(b"btime"):
                _boot[:] = [now, float(line.split()[1])]
                return _boot[1]
    raise RuntimeError("no btime line in /proc/stat")


def user_name(uid: int) -> str | None:
    """The login name of `uid` (cached: the password database is read once per uid)."""
    if uid not in _users:
        try:
            _users[uid] = pwd.getpwuid(uid).pw_name
        except KeyError:
            _users[uid] = None
    return _users[uid]


def split_cmdline(data: bytes) -> list[str]:
    """argv from ``/proc/PID/cmdline``, as psutil splits it: on NULs, or on spaces for a process that
    rewrote its title into one string."""
    if not data:
        return []
    separator = b"\0" if data.endswith(b"\0") else b" "
    if data.endswith(separator):
        data = data[:-1]
    parts = data.split(separator)
    if separator == b"\0" and len(parts) == 1 and b" " in data:
        parts = data.split(b" ")
    return [os.fsdecode(part) for part in parts]


def _real_uid(pid: int) -> int:
    with open(f"{PROC}/{pid}/status", "rb") as handle:
        for line in handle:
            if line.startswith(b"Uid:"):
                return int(line.split()[1])
    raise ProcessLookupError(pid)


def read_info(pid: int, start_ticks: int) -> ProcInfo:
    """The identity and command line of `pid`, whose ``stat`` gave `start_ticks`. Raises
    ProcessLookupError when it has gone and PermissionError when it may not be read."""
    try:
        uid = _real_uid(pid)
        try:
            with open(f"{PROC}/{pid}/cmdline", "rb") as handle:
                cmdline = split_cmdline(handle.read())
        except PermissionError:  # hidden by the kernel's settings: known by its name alone
            cmdline = []
        name = ""
        if not cmdline:
            with open(f"{PROC}/{pid}/comm", "rb") as handle:
                name = os.fsdecode(handle.read().rstrip(b"\n"))
    except FileNotFoundError:
        raise ProcessLookupError(pid) from None
    return ProcInfo(uid, user_name(uid), boot_time() + start_ticks / CLOCK_TICKS, cmdline, name)


def host_memory() -> tuple[int, int]:
    """The host's total and available memory in bytes (``MemTotal`` and ``MemAvailable`` of
    ``/proc/meminfo``, the figures psutil's ``virtual_memory()`` reports as total and available)."""
    fields: dict[bytes, int] = {}
    with open(f"{PROC}/meminfo", "rb") as handle:
        for line in handle:
            key, _, rest = line.partition(b":")
            if key in (b"MemTotal", b"MemAvailable", b"MemFree", b"Buffers", b"Cached"):
                fields[key] = int(rest.split()[0]) * 1024
    available = fields.get(b"MemAvailable")
    if available is None:  # kernels before 3.14
        available = fields.get(b"MemFree", 0) + fields.get(b"Buffers", 0) + fields.get(b"Cached", 0)
    return fields[b"MemTotal"], available
