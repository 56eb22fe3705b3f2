"""``/proc/PID/stat``: the few fields a refresh needs, and a CPU baseline of every process.

Kept apart from processes.py (which loads the kill path, and Jupyter discovery once a kernel is seen) so
that a one-shot ``gpus`` can take its CPU baseline before those load, and count their loading as part of its
CPU window.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

PROC = "/proc"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcStat:
    """The few fields of ``/proc/PID/stat`` a refresh needs."""

    state: str
    cpu_ticks: int
    start_ticks: int
    rss_pages: int
    parent_pid: int = 0


def parse_stat(data: bytes) -> ProcStat:
    """Parse the text of ``/proc/PID/stat``."""
    fields = data[data.rfind(b")") + 2 :].split()
    # fields[0] is field 3 (state); utime=14, stime=15, starttime=22, rss=24 (1-based in proc(5))
    cpu_ticks = int(fields[11]) + int(fields[12])
    return ProcStat(fields[0].decode(), cpu_ticks, int(fields[19]), int(fields[21]), int(fields[1]))


def read_stat(pid: int) -> ProcStat | None:
    """Read ``/proc/PID/stat``; None when the process does not exist (here)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            return parse_stat(handle.read())
    except (OSError, ValueError, IndexError):
        return None


def open_stat(pid: int) -> int | None:
    """A descriptor on ``/proc/PID/stat``: re-read with pread, it stays bound to this very process (a
    reused PID makes it fail with ESRCH), and it saves an open() per refresh."""
    try:
        return os.open(f"{PROC}/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


@dataclass(frozen=True)
class CpuBaseline:
    """CPU time of every process at one moment: the start of a one-shot's CPU window."""

    taken: float  # time.time() when read
    ticks: dict[int, tuple[int, int]]  # pid -> (start ticks, CPU ticks)
    host: tuple[float, float]  # the host's (busy, total) CPU seconds, see host_cpu_times

    def since(self, pid: int, start_ticks: int) -> int | None:
        """The CPU ticks `pid` had at the baseline, if it is still the same process (start time)."""
        entry = self.ticks.get(pid)
        return entry[1] if entry is not None and entry[0] == start_ticks else None


def host_cpu_times() -> tuple[float, float]:
    """The host's busy and total CPU seconds since boot (the ``cpu`` line of ``/proc/stat``), counted as
    psutil.cpu_percent counts them: guest time is already inside user and nice time; idle and iowait are not
    busy."""
    with open(f"{PROC}/stat", "rb") as handle:
        fields = [int(value) for value in handle.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice (older kernels list fewer)
    total = sum(fields[:8]) / CLOCK_TICKS
    idle = sum(fields[3:5]) / CLOCK_TICKS
    return total - idle, total


def cpu_percent_between(before: tuple[float, float], after: tuple[float, float]) -> float:
    """The host's CPU % (of all cores) between two host_cpu_times readings."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return round(min(max(100.0 * busy / total, 0.0), 100.0), 1) if total > 0 else 0.0


def take_baseline() -> CpuBaseline:
    """Read the CPU time of every process now (~1 ms per 100 processes)."""
    ticks: dict[int, tuple[int, int]] = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        names = []
    for name in names:
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None:
                ticks[int(name)] = (stat.start_ticks, stat.cpu_ticks)
    return CpuBaseline(time.time(), ticks, host_cpu_times())
