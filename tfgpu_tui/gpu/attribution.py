"""Which local process is each NVML entry, inside a PID namespace of its own: a pure step with a stated basis.

Inside a container NVML lists host PIDs (drivers before 535.113), or this namespace's PIDs with other
namespaces' processes left out (535.113 on); per-process memory is 0 there until 565.57, and utilisation
samples carry host PIDs until 570.86 (../shared/research/containers.md). A PID number alone therefore proves
nothing: a local process counts as an entry's only if it holds that GPU's device file. Per GPU:

- ``nvml``: the listed PID is a local holder of the GPU's file;
- ``device-file``: the GPU's only entry left and its only local holder left (every local process read):
  certain on an exclusively rented GPU;
- ``start-order``: several left on both sides, paired by listed-PID order against start order: a guess;
- ``other-namespace``: no local holder is left: another container's or the host's, never signalled;
- ``unresolved``: more entries left than holders: some are ours, which ones is not known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tfgpu_tui.gpu.model import Attribution, ProcessRow
from tfgpu_tui.gpu.source import GpuProcess

if TYPE_CHECKING:
    from tfgpu_tui.proc.device_files import Holding

NOT_REPORTED = "not reported by this driver inside a container"
ESTIMATED = (
    "≈ the whole GPU's use: the driver does not report this process's own, and it is the GPU's only holder"
)
TRANSLATED_SAMPLES = (570, 86)  # from this driver on, our own utilisation samples carry our PIDs


@dataclass(frozen=True)
class Attributed:
    """One NVML entry joined (or not) to a local process."""

    process: GpuProcess  # as NVML listed it
    basis: Attribution
    local_pid: int | None  # the process of this namespace it is, or None
    memory_mib: float | None
    memory_note: str | None = None
    memory_estimated: bool = False
    sm_percent: float | None = None


def driver_at_least(version: str | None, wanted: tuple[int, int]) -> bool:
    """Whether a driver version string such as "570.86.15" is at least `wanted` (major, minor)."""
    try:
        parts = tuple(int(part) for part in (version or "").split(".")[:2])
    except ValueError:
        return False
    return len(parts) == 2 and parts >= wanted


Join = tuple[Attribution, "int | None"]  # the basis, and the local PID it names


def _pair(entries: dict[int, GpuProcess], holders: list[Holding], complete: bool) -> dict[int, Join]:
    """Join one GPU's entries (position -> entry) that NVML's PIDs did not explain to its local holders left
    over."""
    if not holders or len(entries) > len(holders):
        basis = Attribution.OTHER_NAMESPACE if not holders else Attribution.UNRESOLVED
        return {at: (basis, None) for at in entries}
    if len(entries) == 1 and len(holders) == 1 and complete:
        return {at: (Attribution.DEVICE_FILE, holders[0].pid) for at in entries}
    by_pid = sorted(entries, key=lambda at: entries[at].pid)
    by_start = sorted(holders, key=lambda holder: (holder.start_ticks, holder.pid))
    return {at: (Attribution.START_ORDER, holder.pid) for at, holder in zip(by_pid, by_start, strict=False)}


def attribute(
    entries: Sequence[GpuProcess],
    minors: Mapping[int, int | None],
    device_used_mib: Mapping[int, float | None],
    holders: Mapping[int, Holding],
    complete: bool,
    driver_version: str | None,
) -> list[Attributed]:
    """Join NVML's entries to this namespace's processes.

    Args:
        entries: NVML's process entries (PID as listed, memory, SM % from samples with that PID).
        minors: GPU index -> its minor number (None: unknown, so no local holder can be matched to it).
        device_used_mib: GPU index -> the device's used memory (for the sole holder's estimate).
        holders: PID -> the NVIDIA files that local process holds.
        complete: whether every local process could be read (else a lone pairing is only a guess).
        driver_version: the driver's version string, for whether our utilisation samples carry our PIDs.

    Returns:
        One Attributed per entry, in the entries' order.
    """
    by_gpu: dict[int, dict[int, GpuProcess]] = {}  # GPU -> position -> entry
    for at, entry in enumerate(entries):
        by_gpu.setdefault(entry.gpu_index, {})[at] = entry
    joined: dict[int, Join] = {}
    for gpu, listed in by_gpu.items():
        minor = minors.get(gpu)
        gpu_holders = [] if minor is None else [h for h in holders.values() if minor in h.minors]
        local = {h.pid for h in gpu_holders}
        joined.update({at: (Attribution.NVML, e.pid) for at, e in listed.items() if e.pid in local})
        left = {at: e for at, e in listed.items() if e.pid not in local}
        matched = {e.pid for e in listed.values() if e.pid in local}
        if left:
            joined.update(_pair(left, [h for h in gpu_holders if h.pid not in matched], complete))
    translated = any(basis is Attribution.NVML for basis, _ in joined.values())
    samples_ours = not translated or driver_at_least(driver_version, TRANSLATED_SAMPLES)
    results = [_with_readings(entry, *joined[at], samples_ours) for at, entry in enumerate(entries)]
    return _estimate_sole_holders(results, device_used_mib, holders, minors)


def _with_readings(entry: GpuProcess, basis: Attribution, pid: int | None, samples_ours: bool) -> Attributed:
    """Memory and SM % as far as this driver reports them for the entry."""
    memory = entry.memory_mib if entry.memory_mib else None  # 0 for a live context: not reported
    note = None if memory is not None else NOT_REPORTED
    sm = entry.sm_percent if samples_ours else None
    return Attributed(entry, basis, pid, memory, note, False, sm)


def _estimate_sole_holders(
    results: list[Attributed],
    device_used_mib: Mapping[int, float | None],
    holders: Mapping[int, Holding],
    minors: Mapping[int, int | None],
) -> list[Attributed]:
    """Where a GPU's one entry is ours, its memory is not reported and we are its only holder, its memory is
    about the device's use (labelled as such)."""
    count: dict[int, int] = {}
    for result in results:
        count[result.process.gpu_index] = count.get(result.process.gpu_index, 0) + 1
    out = []
    for result in results:
        gpu = result.process.gpu_index
        minor = minors.get(gpu)
        used = device_used_mib.get(gpu)
        sole = (
            result.memory_mib is None
            and result.local_pid is not None
            and count[gpu] == 1
            and used
            and minor is not None
            and [h.pid for h in holders.values() if minor in h.minors] == [result.local_pid]
        )
        if sole:
            result = Attributed(result.process, result.basis, result.local_pid, used, ESTIMATED, True,
                                result.sm_percent)  # fmt: skip
        out.append(result)
    return out


def attribution_tag(row: ProcessRow) -> str:
    """A few words for a row's command column and `gpus`: NVML's PID where it differs, and the basis where it
    is not NVML's own PID ("" on the host and for a local process NVML names by its own PID)."""
    basis = row.attribution
    if basis is None or (basis is Attribution.NVML and row.host_pid is None):
        return ""
    if not basis.local:
        kind = "unresolved" if basis is Attribution.UNRESOLVED else "other namespace"
        return f"{kind}: NVML PID {row.nvml_pid}"
    if basis.guess:  # "probably" first: a narrow command column keeps the label's first words
        return f"probably NVML PID {row.nvml_pid}, by start order" if row.host_pid is not None else "probably"
    return f"NVML PID {row.nvml_pid}, by device file" if row.host_pid is not None else "by device file"


def memory_tag(row: ProcessRow) -> str:
    """Why a row's GPU memory is not a reported figure ("" when it is)."""
    if row.memory_estimated:
        return "memory ≈ the GPU's use"
    return "memory not reported by this driver" if row.memory_note == NOT_REPORTED else ""


def basis_sentence(row: ProcessRow) -> str:
    """One plain sentence on how this row was joined to the process it names (for the kill dialog); "" on
    the host, where NVML's PID is the process's own."""
    basis, gpu = row.attribution, row.gpu_index
    if basis is None:
        return ""
    if basis is Attribution.NVML:
        return f"NVML lists it under this PID, and it holds GPU {gpu}'s device file."
    if basis is Attribution.DEVICE_FILE:
        return (
            f"NVML lists PID {row.nvml_pid}, which is no process here; this is the only process here that "
            f"holds GPU {gpu}'s device file, and that entry is the GPU's only one left: it is this process."
        )
    if basis is Attribution.START_ORDER:
        return (
            f"Probably: NVML lists PID {row.nvml_pid}, which is no process here; several processes here hold "
            f"GPU {gpu}'s device file and were paired with NVML's entries by start order, which is a guess."
        )
    if basis is Attribution.UNRESOLVED:
        return (
            f"NVML's PID {row.nvml_pid} is no process here; GPU {gpu} has more entries than processes here "
            "that hold its device file, so which entries are this container's is not known."
        )
    return f"NVML's PID {row.nvml_pid} is no process here, and no process here holds GPU {gpu}'s device file."
