"""How a batch scheduler (SLURM, PBS/Torque, LSF) or a launcher ends a job, read from the job's output.

Each end is named in words with its fix: more time, more memory, resubmit; and in every case resume from
the last checkpoint. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class EndKind(str, Enum):
    """Why the scheduler ended the job."""

    TIME_LIMIT = "time_limit"
    MEMORY = "memory"
    CANCELLED = "cancelled"
    NODE_FAILURE = "node_failure"
    PREEMPTED = "preempted"
    RANK_SIGNAL = "rank_signal"
    OTHER = "other"


RESUME = (
    "resume from the last checkpoint (save one each epoch: keras.callbacks.BackupAndRestore or "
    "ModelCheckpoint)"
)
TITLES = {
    EndKind.TIME_LIMIT: "Job reached its time limit",
    EndKind.MEMORY: "Job ran out of its memory limit",
    EndKind.CANCELLED: "Job cancelled",
    EndKind.NODE_FAILURE: "Job's node failed",
    EndKind.PREEMPTED: "Job preempted",
    EndKind.RANK_SIGNAL: "A rank was killed",
    EndKind.OTHER: "Job ended by the scheduler",
}
FIXES = {
    EndKind.TIME_LIMIT: (
        "Request more time (SLURM `--time=HH:MM:SS`, PBS `-l walltime=`, LSF `-W`) and " + RESUME + "."
    ),
    EndKind.MEMORY: (
        "Request more memory (SLURM `--mem=` or `--mem-per-cpu=`, PBS `-l mem=`, LSF `-R 'rusage[mem=...]'`) "
        "or lower host memory use (smaller shuffle buffer, fewer parallel calls), then " + RESUME + "."
    ),
    EndKind.CANCELLED: "The job was cancelled (scancel, qdel, bkill, or an administrator): resubmit it and "
    + RESUME
    + ".",
    EndKind.NODE_FAILURE: "Resubmit the job (SLURM `--requeue` does it for you) and " + RESUME + ".",
    EndKind.PREEMPTED: "Resubmit the job (or ask for a partition without preemption) and " + RESUME + ".",
    EndKind.RANK_SIGNAL: (
        "A signal ended this rank and mpirun stopped the others: signal 9 is usually the Linux OOM killer "
        "(check `dmesg -T | grep -i oom` on that node); lower host memory use, then " + RESUME + "."
    ),
    EndKind.OTHER: "Resubmit the job with the resources it needs and " + RESUME + ".",
}

# SLURM: ``slurmstepd[-node]: error: *** JOB 123 ON node CANCELLED AT <time> DUE TO TIME LIMIT ***``, the
# same from ``srun``, and the older ``slurmstepd: *** JOB 123 CANCELLED AT <time> DUE TO TIME LIMIT on n1
# ***``.
SLURM_CANCELLED = re.compile(
    r"(?:slurmstepd(?:-[\w.-]+)?|srun):(?: error:)? \*\*\* (?P<what>JOB|STEP) (?P<job>\S+) "
    r"(?:ON (?P<node>\S+) )?"
    r"CANCELLED AT (?P<at>\S+)(?: DUE TO (?P<due>[A-Z ]+?))?(?: [Oo][Nn] (?P<node2>\S+))? \*\*\*"
)
SLURM_OOM = re.compile(
    r"(?:slurmstepd(?:-[\w.-]+)?|srun): error: (?:Detected \d+ oom[-_]kill events?"
    r"|Job \d+ exceeded memory limit|.*?: tasks? [\d,-]+: Out Of Memory)"
)
SLURM_NODE_FAILURE = re.compile(r"srun: error: Node failure on (?P<node>\S+)")
# PBS/Torque: ``=>> PBS: job killed: walltime 3611 exceeded limit 3600``, ``... mem 42mb exceeded limit ...``.
PBS_KILLED = re.compile(r"PBS: job killed: (?P<resource>walltime|p?v?mem|ncpus|cput|node)\b(?P<rest>.*)")
# LSF: ``TERM_RUNLIMIT: job killed after reaching LSF run time limit.`` (one line of the job report).
LSF_TERM = re.compile(r"^\s*TERM_(?P<reason>[A-Z_]+): (?P<rest>.*)")
# Open MPI: ``mpirun noticed that process rank 1 with PID 4242 on node n1 exited on signal 9 (Killed).``
MPI_SIGNAL = re.compile(r"noticed that process rank (?P<rank>\d+) with PID \d+ on node \S+ exited on signal")

SLURM_DUE = {
    "TIME LIMIT": EndKind.TIME_LIMIT,
    "NODE FAILURE": EndKind.NODE_FAILURE,
    "PREEMPTION": EndKind.PREEMPTED,
}
PBS_RESOURCES = {"walltime": EndKind.TIME_LIMIT, "cput": EndKind.TIME_LIMIT, "node": EndKind.NODE_FAILURE}
LSF_REASONS = {
    "RUNLIMIT": EndKind.TIME_LIMIT,
    "CPULIMIT": EndKind.TIME_LIMIT,
    "MEMLIMIT": EndKind.MEMORY,
    "SWAP": EndKind.MEMORY,
    "OWNER": EndKind.CANCELLED,
    "ADMIN": EndKind.CANCELLED,
    "FORCE_OWNER": EndKind.CANCELLED,
    "FORCE_ADMIN": EndKind.CANCELLED,
    "PREEMPT": EndKind.PREEMPTED,
    "HOST": EndKind.NODE_FAILURE,
    "UNREACH": EndKind.NODE_FAILURE,
}
MAX_QUOTE = 160
ENDED_HOW = {
    EndKind.TIME_LIMIT: " at its time limit",
    EndKind.MEMORY: " for using more memory than it requested",
    EndKind.CANCELLED: " because it was cancelled",
    EndKind.NODE_FAILURE: " because a node failed",
    EndKind.PREEMPTED: " to run another job (preemption)",
    EndKind.RANK_SIGNAL: "",
    EndKind.OTHER: "",
}


@dataclass(frozen=True)
class JobEnd:
    """A scheduler's (or launcher's) end of the job: what, the scheduler's own words, the fix."""

    kind: EndKind
    scheduler: str
    quote: str
    rank: int | None = None

    @property
    def title(self) -> str:
        return TITLES[self.kind]

    @property
    def fix(self) -> str:
        return FIXES[self.kind]

    @property
    def message(self) -> str:
        """``SLURM ended the job at its time limit (JOB 123 ON n1 CANCELLED AT ... DUE TO TIME LIMIT).``"""
        quote = self.quote[:MAX_QUOTE]
        if self.kind is EndKind.RANK_SIGNAL:
            return f"Rank {self.rank} was killed by a signal and mpirun ended the job ({quote})."
        return f"{self.scheduler} ended the job{ENDED_HOW[self.kind]} ({quote})."


def job_end(text: str) -> JobEnd | None:
    """The scheduler's end of the job that `text` (one line) reports, or None."""
    if "***" in text and "CANCELLED AT" in text:
        match = SLURM_CANCELLED.search(text)
        if match:
            due = (match.group("due") or "").strip()
            kind = SLURM_DUE.get(due, EndKind.OTHER if due else EndKind.CANCELLED)
            return JobEnd(kind, "SLURM", match.group(0).split("*** ", 1)[1].rstrip(" *"))
    if "error:" in text and ("slurmstepd" in text or "srun" in text):
        match = SLURM_OOM.search(text)
        if match:
            return JobEnd(EndKind.MEMORY, "SLURM", _after(match.group(0), "error:"))
        match = SLURM_NODE_FAILURE.search(text)
        if match:
            return JobEnd(EndKind.NODE_FAILURE, "SLURM", _after(match.group(0), "error:"))
    if "PBS: job killed" in text:
        match = PBS_KILLED.search(text)
        if match:
            resource = match.group("resource")
            kind = PBS_RESOURCES.get(resource, EndKind.MEMORY if "mem" in resource else EndKind.OTHER)
            return JobEnd(kind, "PBS", match.group(0).strip())
    if "TERM_" in text:
        match = LSF_TERM.match(text)
        if match:
            kind = LSF_REASONS.get(match.group("reason"), EndKind.OTHER)
            return JobEnd(kind, "LSF", match.group(0).strip().rstrip("."))
    if "noticed that process rank" in text:
        match = MPI_SIGNAL.search(text)
        if match:
            return JobEnd(EndKind.RANK_SIGNAL, "mpirun", text.strip().rstrip("."), int(match.group("rank")))
    return None


def _after(text: str, marker: str) -> str:
    return text.split(marker, 1)[1].strip()
