"""Which local processes hold NVIDIA device files; whether this process runs in a PID namespace of its own.

Inside a container NVML may speak in another namespace's PIDs (../shared/research/containers.md). What this
namespace can be sure of is which of its own processes hold `/dev/nvidiaN` open: a process that holds GPU
memory holds an NVIDIA file (a descriptor or a mapping), and the driver frees its memory when the last one
closes. A file is recognised by its path (`/dev/nvidia<N>`, as libnvidia-container names the nodes, with the
host's minor) and, where it is a character device, by its device number (major 195, minors 0-247). Holding
only `nvidiactl` or `nvidia-uvm` means holding the driver, GPU unknown.

Reading `/proc/PID/fd` needs the same user or CAP_SYS_PTRACE: a process whose descriptors cannot be read is
counted as unreadable, so that nothing is concluded as if the scan were complete.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from tfgpu_tui.proc.facts import PROC

INIT_PID_NAMESPACE_INODE = 0xEFFFFFFC  # PROC_PID_INIT_INO (include/linux/proc_ns.h), fixed since Linux 3.8
NVIDIA_MAJOR = 195
GPU_MINORS = range(0, 248)  # 254 nvidia-modeset, 255 nvidiactl
_GPU_PATH = re.compile(rb"/dev/nvidia(\d+)\Z")
_MAPPED_GPU = re.compile(rb" /dev/nvidia(\d+)$", re.MULTILINE)
DRIVER_PATHS = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


def in_own_pid_namespace(proc: str = PROC) -> bool:
    """Whether this process runs in a PID namespace other than the initial one (a container without
    --pid=host), from the namespace's inode: the initial one's is fixed. Unknown (no /proc/self/ns, Linux
    before 3.8) counts as the initial one, as NVML's PIDs were always taken to be local before."""
    try:
        return os.stat(f"{proc}/self/ns/pid").st_ino != INIT_PID_NAMESPACE_INODE
    except OSError:
        return False


@dataclass(frozen=True)
class Holding:
    """The NVIDIA files one local process holds, as of one scan."""

    pid: int
    start_ticks: int  # with the PID, what makes the process the same one
    minors: frozenset[int]  # N of each /dev/nvidiaN it holds open or mapped
    driver: bool  # it holds nvidiactl / nvidia-uvm (or a GPU file)

    @property
    def holds_gpu(self) -> bool:
        return bool(self.minors)


def _minor_of(target: str, link: str) -> int | None:
    """The GPU minor of an open `/dev/nvidia*` file: its device number where it is NVIDIA's character device
    (major 195, minor 0-247), else the N of a `/dev/nvidiaN` name (the test stand-ins are regular files);
    None for nvidiactl, nvidia-uvm and the like."""
    try:
        info = os.stat(link)
    except OSError:
        info = None
    if info is not None and stat.S_ISCHR(info.st_mode) and os.major(info.st_rdev) == NVIDIA_MAJOR:
        return os.minor(info.st_rdev) if os.minor(info.st_rdev) in GPU_MINORS else None
    match = _GPU_PATH.match(os.fsencode(target))
    return int(match.group(1)) if match else None


def scan_process(pid: int, proc: str = PROC) -> Holding | None:
    """The NVIDIA files `pid` holds; None when its descriptors cannot be read (gone, or not ours to read)."""
    start = _start_ticks(pid, proc)  # read first: a PID reused during the scan is not taken for this one
    if start is None:
        return None
    fd_dir = f"{proc}/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    minors: set[int] = set()
    driver = False
    for name in names:
        link = f"{fd_dir}/{name}"
        try:
            target = os.readlink(link)
        except OSError:
            continue
        if not target.startswith("/dev/nvidia"):  # libnvidia-container names every node so
            continue
        minor = _minor_of(target, link)
        if minor is not None:
            minors.add(minor)
        elif target.startswith(DRIVER_PATHS):
            driver = True
    if not minors:  # a mapping keeps the file (and the memory) as well as a descriptor does
        minors.update(_mapped_minors(pid, proc))
    return Holding(pid, start, frozenset(minors), driver or bool(minors))


def _mapped_minors(pid: int, proc: str) -> Iterable[int]:
    try:
        with open(f"{proc}/{pid}/maps", "rb") as handle:
            text = handle.read()
    except OSError:
        return ()
    if b"/dev/nvidia" not in text:
        return ()
    return {int(m.group(1)) for m in _MAPPED_GPU.finditer(text)}


def _start_ticks(pid: int, proc: str) -> int | None:
    try:
        with open(f"{proc}/{pid}/stat", "rb") as handle:
            data = handle.read()
        return int(data[data.rfind(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class HolderScan:
    """Every local process that holds an NVIDIA file, and how many processes could not be read."""

    holders: dict[int, Holding]
    unreadable: int

    def of_minor(self, minor: int) -> list[Holding]:
        """The holders of `/dev/nvidia<minor>`."""
        return [h for h in self.holders.values() if minor in h.minors]


class DeviceFileScanner:
    """Scans local processes for NVIDIA files, caching each by (PID, start time).

    `holding(pid)` reads one process (cached until its start time changes or `invalidate()`); `scan()` reads
    every process of the namespace, re-reading only new PIDs unless invalidated: a process opens a GPU file
    when it creates a context, which changes what NVML lists, and the caller invalidates on that.
    """

    def __init__(self, proc: str = PROC, self_pid: int | None = None) -> None:
        self._proc = proc
        self._self_pid = os.getpid() if self_pid is None else self_pid
        self._cache: dict[int, Holding | None] = {}  # None: unreadable
        self._scanned = False

    def invalidate(self) -> None:
        """Forget what was read: the next scan reads every process again."""
        self._cache.clear()
        self._scanned = False

    def holding(self, pid: int, fresh: bool = False) -> Holding | None:
        """The NVIDIA files `pid` holds (None: gone or unreadable); `fresh` reads it again. A cached answer
        is kept only while the process's start time is unchanged (one read of its stat)."""
        cached = self._cache.get(pid)
        if cached is not None and not fresh and _start_ticks(pid, self._proc) == cached.start_ticks:
            return cached
        found = scan_process(pid, self._proc)
        self._cache[pid] = found
        return found

    def scan(self) -> HolderScan:
        """Every local process's NVIDIA files (this dashboard's own excepted)."""
        try:
            pids = {int(name) for name in os.listdir(self._proc) if name.isdigit()}
        except OSError:
            return HolderScan({}, 0)
        pids.discard(self._self_pid)
        for pid in [pid for pid in self._cache if pid not in pids]:
            del self._cache[pid]
        for pid in pids:
            if pid not in self._cache or not self._scanned:
                self._cache[pid] = scan_process(pid, self._proc)
        self._scanned = True
        holders = {pid: h for pid, h in self._cache.items() if h is not None and h.driver}
        unreadable = sum(1 for h in self._cache.values() if h is None)
        return HolderScan(holders, unreadable)
