"""Host details for GPU processes (user, command, CPU, memory, TensorFlow loaded?, Jupyter kernel), the
TensorFlow processes running on the CPU, and the host's own CPU and memory.

Per-PID details are cached by (pid, create time): the static parts (user, command line, Jupyter kernel,
whether it is one of tfgpu-tui's own children) are read once; each refresh reads only the changing ones (and
asks the cached Jupyter lookup for a kernel's state). The whole-host scan for TensorFlow on the CPU runs every
CPU_SCAN_SECONDS, in the background for the app. Every fact comes from a ``ProcessFacts`` (proc/facts.py).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tfgpu_tui.gpu import kill
from tfgpu_tui.gpu.attribution import Attributed, attribute
from tfgpu_tui.gpu.kernel_argv import kernel_connection_file
from tfgpu_tui.gpu.model import HostState, HostStats, JupyterKernel, ProcessRow
from tfgpu_tui.gpu.refresh import Periodic
from tfgpu_tui.gpu.source import GpuProcess, GpuReading, SignalOutcome
from tfgpu_tui.proc.device_files import DeviceFileScanner, in_own_pid_namespace
from tfgpu_tui.proc.facts import (
    CpuBaseline,
    ProcessFacts,
    ProcessStat,
    PsutilFacts,
    cpu_percent_between,
)
from tfgpu_tui.proc.marks import argv_is_child, environ_is_child
from tfgpu_tui.text_clean import clean_line

if TYPE_CHECKING:
    from tfgpu_tui.gpu.jupyter import JupyterResolver

TF_RECHECK_SECONDS = 2.0  # a process may import TensorFlow after it starts
GPU_TF_RECHECK_SECONDS = 10.0  # a GPU process has usually loaded its framework before it holds a context
CPU_SCAN_SECONDS = 1.5  # a CPU fallback is to be flagged within 5 s
OTHER_RECHECK_SECONDS = 30.0  # a process that is not Python: its comm changes only on exec
# inside a container, every local process's NVIDIA files are read again when what NVML lists changes, at most
# this often (what one such read costs: docs/containers.md); new ones at every sample
FULL_RESCAN_SECONDS = 5.0
HIDDEN_GPUS = ("", "-1", "none", "void", "nodevfiles")  # CUDA_VISIBLE_DEVICES values that hide every GPU
MIN_CPU_WINDOW_SECONDS = 0.2  # a PID on several GPUs is read more than once per refresh


def gpus_hidden(environ: bytes | None) -> bool:
    """Whether the environment hides every GPU from CUDA (``CUDA_VISIBLE_DEVICES`` empty or -1)."""
    for entry in (environ or b"").split(b"\0"):
        if entry.startswith(b"CUDA_VISIBLE_DEVICES="):
            return entry.split(b"=", 1)[1].decode(errors="replace").strip().lower() in HIDDEN_GPUS
    return False


def host_stats(cpu_percent: float, facts: ProcessFacts) -> HostStats | None:
    """The host's CPU use (as given), core count, memory and load average."""
    try:
        total, available = facts.host_memory()
        load = os.getloadavg() if hasattr(os, "getloadavg") else None
    except (OSError, ValueError, KeyError):
        return None
    return HostStats(
        cpu_percent=cpu_percent,
        cpu_count=os.cpu_count() or 1,
        memory_used_mib=(total - available) / 2**20,
        memory_total_mib=total / 2**20,
        load_average=load,
    )


class HostUsage:
    """The host's CPU use since the previous reading (at least MIN_CPU_WINDOW_SECONDS before), and its
    memory; a one-shot's first reading is its CPU baseline."""

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        baseline: CpuBaseline | None = None,
        facts: ProcessFacts | None = None,
    ) -> None:
        self._clock = clock
        self._facts = facts or PsutilFacts()
        # (read at, busy and total CPU seconds then) and the last percentage worked out
        self._times = (baseline.taken, baseline.host) if baseline else (clock(), (0.0, 0.0))
        self._percent: float | None = None

    def stats(self) -> HostStats | None:
        now = self._clock()
        if self._percent is None or now - self._times[0] >= MIN_CPU_WINDOW_SECONDS:
            try:
                times = self._facts.host_cpu_times()
            except (OSError, ValueError):
                return None
            self._percent = cpu_percent_between(self._times[1], times)  # since boot at first
            self._times = (now, times)
        return host_stats(self._percent, self._facts)


@dataclass
class _Known:
    """Cached facts about one process, valid while its create time is unchanged."""

    create_time: float
    state: HostState
    user: str | None = None
    uid: int | None = None
    command: str | None = None
    jupyter: JupyterKernel | None = None
    tensorflow: bool | None = None
    tf_checked: float = 0.0
    tf_recheck: float = GPU_TF_RECHECK_SECONDS  # a GPU process that is not Python: OTHER_RECHECK_SECONDS
    tf_checked_size: int | None = None  # its address space's size when its maps were last read
    last_cpu: float | None = None
    last_time: float | None = None
    cpu_percent: float | None = None
    cmdline: list[str] = field(default_factory=list)
    own_child: bool = False
    gpus_hidden: bool = False


@dataclass(frozen=True)
class _Scanned:
    """What the scan for TensorFlow on the CPU last learnt of a process."""

    create_time: float  # 0.0 for a process that is not Python (known by its name alone)
    tensorflow: bool | None  # None: its maps could not be read
    checked: float
    recheck: float  # seconds until it is looked at again
    size: int | None = None  # its address space's size when its maps were read


def maps_unchanged(size_then: int | None, stat: ProcessStat) -> bool:
    """Whether a process's address space has kept the size it had when its maps were read (both known):
    loading a library maps it, which changes the size, so its maps need no new look for TensorFlow."""
    return size_then is not None and stat.virtual_bytes == size_then


class HostInspector:
    """The real host: process details, CPU TensorFlow processes, host stats and the safe kill."""

    def __init__(
        self,
        background: bool = True,
        clock: Callable[[], float] = time.time,
        cpu_baseline: CpuBaseline | None = None,
        own_namespace: bool | None = None,
        facts: ProcessFacts | None = None,
    ) -> None:
        self._clock = clock
        self._facts = facts or PsutilFacts()
        # a one-shot's CPU window opens at its baseline, before most of the program has loaded
        self._baseline = cpu_baseline
        self._host = HostUsage(clock, cpu_baseline, self._facts)
        self._known: dict[int, _Known] = {}
        self._background = background
        self._jupyter: JupyterResolver | None = None  # with the first kernel seen (it loads an HTTP client)
        # in a PID namespace of its own (a container), NVML's PIDs are joined to local processes by the device
        # files these hold (attribution.py); on the host they are ours and nothing is scanned
        self._own_namespace = in_own_pid_namespace() if own_namespace is None else own_namespace
        self._scanner = DeviceFileScanner() if self._own_namespace else None
        self._entries: frozenset[tuple[int, int]] = frozenset()  # what NVML listed at the last scan
        self._rescan_due, self._rescanned_at = False, -FULL_RESCAN_SECONDS
        self._minors: dict[int, int | None] = {}  # GPU index -> minor, as of the last reading
        self._self_pid = os.getpid()
        # per `background`: in the app the first scan runs beside the first snapshot, which the first frame
        # waits for, so TensorFlow on the CPU is listed from the next snapshot on
        self._cpu_scan: Periodic[list[int] | None] = Periodic(
            self._scan_cpu_tensorflow, CPU_SCAN_SECONDS, None, background, clock
        )
        self._scan_known: dict[int, _Scanned] = {}

    @property
    def own_pid_namespace(self) -> bool:
        """Whether this runs in a PID namespace of its own (a container without --pid=host)."""
        return self._own_namespace

    # -- per-process details --------------------------------------------------------------------------------
    def _learn(self, pid: int, stat: ProcessStat) -> _Known:
        """Read the static details of a process seen for the first time."""
        if stat.zombie:
            return _Known(stat.create_time, HostState.ZOMBIE, command="<zombie: exited, not yet reaped>")
        try:
            info = self._facts.identity(pid)
        except ProcessLookupError:
            return _Known(stat.create_time, HostState.NO_SUCH_PROCESS)
        except (PermissionError, OSError, ValueError):
            return _Known(stat.create_time, HostState.NO_PERMISSION)
        cmdline = info.cmdline
        # Cleaned (text_clean.py): another process's argv or name must not drive our terminal.
        command = clean_line(" ".join(cmdline) if cmdline else f"[{info.name}]")
        known = _Known(
            stat.create_time,
            HostState.OK,
            clean_line(info.user) if info.user is not None else str(info.uid),
            info.uid,
            command,
            cmdline=cmdline,
            own_child=argv_is_child(cmdline) or environ_is_child(info.environ or b""),
            gpus_hidden=gpus_hidden(info.environ),
        )
        if not is_python(cmdline[0] if cmdline else info.name):  # a CUDA binary: its libraries are loaded
            known.tf_recheck = OTHER_RECHECK_SECONDS
        known.jupyter = self._kernel(cmdline)
        return known

    def _kernel(self, cmdline: list[str]) -> JupyterKernel | None:
        """The Jupyter kernel this command line runs (None for anything else), with its notebook when its
        server says; the server lookup loads with the first kernel seen."""
        if not cmdline or kernel_connection_file(cmdline) is None:
            return None
        if self._jupyter is None:
            from tfgpu_tui.gpu.jupyter import JupyterResolver

            self._jupyter = JupyterResolver(background=self._background)
        return self._jupyter.resolve(cmdline)

    def _row(self, pid: int, gpu_index: int | None, memory: float | None, sm: float | None) -> ProcessRow:
        """A row for one process, from the cache plus one fresh read of what changes."""
        known = self._known.get(pid)
        stat = self._facts.stat(pid)
        if stat is None:
            self._known.pop(pid, None)
            return ProcessRow(pid, gpu_index, memory, sm, HostState.NO_SUCH_PROCESS)
        if (
            known is None
            or known.create_time != stat.create_time  # the PID is another process's now
            or stat.zombie != (known.state is HostState.ZOMBIE)
        ):
            known = self._learn(pid, stat)
            self._known[pid] = known
            if self._baseline is not None and known.state is HostState.OK:
                seconds = self._baseline.since(pid, stat.create_time)
                if seconds is not None:
                    known.last_cpu, known.last_time = seconds, self._baseline.taken
        now = self._clock()
        if known.state is HostState.OK and (
            known.tensorflow is None or not known.tensorflow and now - known.tf_checked >= known.tf_recheck
        ):
            if known.tensorflow is None or not maps_unchanged(known.tf_checked_size, stat):
                known.tensorflow = self._facts.tensorflow_loaded(pid)
            known.tf_checked, known.tf_checked_size = now, stat.virtual_bytes
        if known.last_time is None or now - known.last_time >= MIN_CPU_WINDOW_SECONDS:
            if known.last_cpu is not None and known.last_time is not None:
                cpu = 100.0 * (stat.cpu_seconds - known.last_cpu) / (now - known.last_time)
                known.cpu_percent = round(max(cpu, 0.0), 1)
            known.last_cpu, known.last_time = stat.cpu_seconds, now
        if known.jupyter is not None and known.cmdline:  # cached lookup: state and last activity stay fresh
            known.jupyter = self._kernel(known.cmdline)
        return ProcessRow(
            pid,
            gpu_index,
            memory,
            sm,
            known.state,
            user=known.user,
            uid=known.uid,
            command=known.command,
            cpu_percent=known.cpu_percent,
            host_memory_mib=stat.rss_mib,
            running_seconds=max(0.0, now - known.create_time) if known.state is HostState.OK else None,
            create_time=known.create_time if known.state is HostState.OK else None,
            tensorflow_loaded=known.tensorflow,
            jupyter=known.jupyter,
            parent_pid=stat.parent_pid or None,
            own_child=known.own_child,
            gpus_hidden=known.gpus_hidden,
        )

    def describe(self, processes: list[GpuProcess], reading: GpuReading | None = None) -> list[ProcessRow]:
        """Host details for each GPU process; rows that cannot be resolved stay, with a marker. In a PID
        namespace of its own, each NVML entry is first joined to the local process it is (`reading` gives the
        GPUs' minors, used memory and the driver version)."""
        if self._scanner is None:
            rows = [self._row(p.pid, p.gpu_index, p.memory_mib, p.sm_percent) for p in processes]
        else:
            rows = [self._attributed_row(a) for a in self._attribute(self._scanner, processes, reading)]
        rows = [row if p.mig_index is None else replace(row, mig_index=p.mig_index)
                for row, p in zip(rows, processes, strict=True)]  # fmt: skip
        self._forget_except({row.pid for row in rows if row.local} | set(self._cpu_pids()))
        return rows

    def _attribute(
        self, scanner: DeviceFileScanner, processes: list[GpuProcess], reading: GpuReading | None
    ) -> list[Attributed]:
        """Join NVML's entries to local processes. Only the listed PIDs are read while each of them holds its
        GPU's file and reports its memory (drivers from 565 inside a container); otherwise every local process
        is: new ones at once, the others again when what NVML lists has changed (a new context opens a device
        file), at most every FULL_RESCAN_SECONDS."""
        devices = reading.devices if reading is not None else []
        self._minors = {d.index: d.minor_number for d in devices}
        entries = frozenset((p.gpu_index, p.pid) for p in processes)
        if entries != self._entries:
            self._entries, self._rescan_due = entries, True
        now = self._clock()
        if self._rescan_due and now - self._rescanned_at >= FULL_RESCAN_SECONDS:
            scanner.invalidate()  # every process is read again at the next scan (new ones always are)
            self._rescan_due, self._rescanned_at = False, now
        listed = {p.pid: scanner.holding(p.pid) for p in processes}
        direct = all(
            (held := listed[p.pid]) is not None and self._minors.get(p.gpu_index) in held.minors
            for p in processes
        ) and all(p.memory_mib for p in processes)
        if direct:
            holders, complete = {pid: h for pid, h in listed.items() if h is not None}, True
        else:
            scan = scanner.scan()
            holders, complete = scan.holders, scan.unreadable == 0
        driver = reading.driver.driver_version if reading is not None and reading.driver else None
        used = {d.index: d.memory_used_mib for d in devices}
        return attribute(processes, self._minors, used, holders, complete, driver)

    def _attributed_row(self, joined: Attributed) -> ProcessRow:
        """The row of one joined entry: a local process's details, or another namespace's entry as listed
        (never looked up here: its PID number may be an unrelated local process's)."""
        entry = joined.process
        if joined.local_pid is None:
            row = ProcessRow(entry.pid, entry.gpu_index, None, None, HostState.OTHER_NAMESPACE)
        else:
            row = self._row(joined.local_pid, entry.gpu_index, None, None)
        return replace(
            row,
            gpu_memory_mib=joined.memory_mib,
            sm_percent=joined.sm_percent,
            attribution=joined.basis,
            host_pid=entry.pid if entry.pid != joined.local_pid else None,
            memory_note=joined.memory_note,
            memory_estimated=joined.memory_estimated,
        )

    def holds_gpu(self, pid: int, gpu_index: int) -> bool | None:
        """Whether local process `pid` holds GPU `gpu_index`'s device file now (read afresh); None on the
        host, where NVML's PIDs are ours and nothing needs checking, or when its minor is unknown."""
        minor = self._minors.get(gpu_index)
        if self._scanner is None or minor is None:
            return None
        held = self._scanner.holding(pid, fresh=True)
        return held is not None and minor in held.minors

    def holders_of(self, gpu_index: int) -> list[ProcessRow]:
        """The local processes holding GPU `gpu_index`'s device file now (read afresh; empty on the host)."""
        minor = self._minors.get(gpu_index)
        if self._scanner is None or minor is None:
            return []
        self._scanner.invalidate()
        holders = self._scanner.scan().of_minor(minor)
        return [self._row(h.pid, gpu_index, None, None) for h in sorted(holders, key=lambda h: h.pid)]

    def _forget_except(self, pids: set[int]) -> None:
        for pid in [pid for pid in self._known if pid not in pids]:
            del self._known[pid]

    # -- TensorFlow on the CPU ------------------------------------------------------------------------------
    def _scan_cpu_tensorflow(self) -> list[int]:
        """PIDs of Python processes with TensorFlow loaded (all of them, GPU or not), cheaply re-scanned."""
        now = self._clock()
        found: list[int] = []
        seen: dict[int, _Scanned] = {}
        for pid in self._facts.pids():
            if pid == self._self_pid:
                continue
            previous = self._scan_known.get(pid)
            if previous and previous.tensorflow is False and now - previous.checked < previous.recheck:
                seen[pid] = previous  # no TensorFlow, not due for a recheck: its stat is not even read (CPU)
                continue
            if previous is None or previous.tensorflow is False:  # new, or due a recheck: its name first
                name = self._facts.name(pid)
                if name is None:
                    continue
                if not is_python(name):  # not Python: its name changes only on exec
                    seen[pid] = _Scanned(0.0, False, now, OTHER_RECHECK_SECONDS)
                    continue
            stat = self._facts.stat(pid)
            if stat is None or stat.zombie:
                continue
            same = previous is not None and previous.create_time == stat.create_time
            if same and previous is not None and previous.tensorflow is not False:
                seen[pid] = previous  # TensorFlow stays loaded; unreadable stays unreadable
            elif same and previous is not None and maps_unchanged(previous.size, stat):
                seen[pid] = _Scanned(stat.create_time, False, now, TF_RECHECK_SECONDS, stat.virtual_bytes)
            else:
                loaded = self._facts.tensorflow_loaded(pid)
                seen[pid] = _Scanned(stat.create_time, loaded, now, TF_RECHECK_SECONDS, stat.virtual_bytes)
            if seen[pid].tensorflow:
                found.append(pid)
        self._scan_known = seen
        return found

    def _cpu_pids(self) -> list[int]:
        """The latest scan's TensorFlow PIDs (none before the first scan has ended)."""
        return self._cpu_scan.get() or []

    def cpu_tensorflow(self, exclude: set[int]) -> list[ProcessRow]:
        """TensorFlow processes holding no GPU memory (not in ``exclude``), from the last background scan. In
        a PID namespace of its own, one that holds a GPU's device file is on that GPU, whatever NVML says."""
        rows = []
        for pid in self._cpu_pids():
            if pid in exclude or self._holds_any_gpu(pid):
                continue
            row = self._row(pid, None, None, None)
            if row.host_state is HostState.OK:
                rows.append(row)
        return rows

    def _holds_any_gpu(self, pid: int) -> bool:
        if self._scanner is None:
            return False
        held = self._scanner.holding(pid)
        return held is not None and held.holds_gpu

    # -- host and signals -----------------------------------------------------------------------------------
    def stats(self) -> HostStats | None:
        """The host's CPU and memory; the CPU % over at least MIN_CPU_WINDOW_SECONDS."""
        return self._host.stats()

    def terminate(
        self,
        row: ProcessRow,
        grace_seconds: float,
        on_progress: Callable[[str], None] | None = None,
        first_signal: signal.Signals = signal.SIGTERM,
    ) -> SignalOutcome:
        """The safe signal path of kill.py. In a PID namespace of its own, the process must still hold the
        row's GPU device file right before the signal (the evidence it is that GPU's process)."""

        def still_holds() -> str | None:
            if row.gpu_index is None or self.holds_gpu(row.pid, row.gpu_index) is not False:
                return None
            return f"it no longer holds GPU {row.gpu_index}'s device file: not the process that was shown"

        return kill.terminate_process(
            row.identity, grace_seconds, on_progress, first_signal=first_signal, still_valid=still_holds
        )

    def close(self) -> None:
        """Drop the caches."""
        self._known.clear()


def is_python(name: str) -> bool:
    """Whether a process name (comm, or argv[0]: a script's shebang puts its interpreter there) is Python's,
    so that it may import TensorFlow at any moment."""
    return os.path.basename(name).startswith("python") or "ipykernel" in name
