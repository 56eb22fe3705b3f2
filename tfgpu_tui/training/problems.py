"""What can go wrong in a training log, beyond the known TensorFlow messages: tracebacks, NaN loss, the OOM
killer, a stalled or deleted log, and the good news that training finished."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum

from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.env.diagnoses import Diagnosis, load_signatures

KILLED = re.compile(r"^\s*Killed\s*$|\b\d+\s+Killed\s+\S|^\S*: line \d+: +\d+ Killed\b")
TRACEBACK_START = "Traceback (most recent call last):"
#: Python prints this before a traceback it swallowed (an error in ``__del__`` at interpreter exit, e.g.
#: TF 1.x's ``BaseSession.__del__`` ... ``TypeError: 'NoneType' object is not callable``): noise.
IGNORED_EXCEPTION = "Exception ignored in"
TRACEBACK_CHAINS = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)
# Windows PowerShell 5 wraps a native program's first stderr line as an error record when it is redirected
# (`python train.py 2>&1 > train.log`): ``python : Traceback ...``, then ``At line:1 char:1``, ``+ ...`` lines
# and indented ``+ CategoryInfo ...`` before the rest of the traceback.
POWERSHELL_PREFIX = re.compile(r"^[\w.-]+ : (?=Traceback \(most recent call last\):)")
POWERSHELL_RECORD = re.compile(r"^(?:At .*:\d+ char:\d+$|\+ )")
NAN_FIX = (
    "Lower the learning rate, clip gradients (optimizer clipnorm=1.0), check the inputs for NaN/inf "
    "(tf.debugging.check_numerics), and with mixed precision keep the loss scaling on."
)
KILLED_FIX = (
    "Usually the Linux OOM killer (host RAM, not GPU memory): check `dmesg -T | grep -i -E 'killed|oom'`; "
    "lower host memory use (smaller shuffle buffer, cache() on disk, fewer parallel calls) or get more RAM."
)
STALL_FIX = (
    "Check the process is alive (`ps -p PID`, the Monitor tab): it may have died without a message, hung in "
    "input loading or a collective, or be buffering print output (run Python with -u)."
)
DELETED_FIX = (
    "Restart training with its output redirected to a new file and follow that one "
    "(`tfgpu-tui log --follow NEW.log`, or o in the Training tab)."
)
DELETED_MESSAGE = "The log was deleted while training wrote to it: its new output goes where no one can read."


class ProblemId(str, Enum):
    """The problems found by the training code itself (known TensorFlow messages use their signature id)."""

    EXCEPTION = "EXCEPTION"
    NAN_LOSS = "NAN_LOSS"
    KILLED = "KILLED"
    FINISHED = "FINISHED"
    STALL = "STALL"
    FILE_DELETED = "FILE_DELETED"
    NO_CHECKPOINT = "NO_CHECKPOINT"

    def __str__(self) -> str:
        return self.value


#: Each problem of the training code's own, in a few words (headers, the problems pane).
PROBLEM_TITLES: dict[str, str] = {
    ProblemId.EXCEPTION: "Training stopped by an error",
    ProblemId.NAN_LOSS: "Loss is NaN",
    ProblemId.KILLED: "Training killed",
    ProblemId.FINISHED: "Training finished",
    ProblemId.STALL: "No new output",
    ProblemId.FILE_DELETED: "Log deleted",
    ProblemId.NO_CHECKPOINT: "No recent checkpoint",
}
OOM_TITLE = "Out of GPU memory"
#: An exception line that means the run ran out of memory (TensorFlow, XLA, Keras 3 on JAX).
OOM_EXCEPTION = re.compile(r"ResourceExhaustedError|OutOfMemoryError|RESOURCE_EXHAUSTED|OOM when allocating")
#: The known signature whose fix an out-of-memory exception shares (one text, in log_signatures.csv).
OOM_SIGNATURE = "OOM_TENSOR"
EXCEPTION_FIX = (
    "Fix the error the traceback ends with (line {line} of the log); the last `File ...` line above it is "
    "where your code raised it."
)
#: The module path TensorFlow puts before its error names (``tensorflow.python.framework.errors_impl.``).
ERROR_MODULE = re.compile(r"^(?:[a-z_][\w]*\.)+(?=[A-Z]\w*(?:Error|Exception|Exhausted|Interrupt)\b)")


#: tf.debugging.check_numerics' words in the error it raises.
CHECK_NUMERICS_ERROR = "Tensor had"
#: Known-signature ids of TensorFlow advisories: warnings a run survives (shown as info) until it fails for
#: their reason. The others of the issue's list (cuDNN/cuBLAS factory "already registered", oneDNN, the NUMA
#: notice) are noise in the knowledge base and TF-TRT's "Could not find TensorRT" is optional: info already.
PTXAS = "PTXAS_MISSING"
ADVISORIES = frozenset({PTXAS})
ADVISORY_TEXTS = {
    PTXAS: (
        "ptxas not found (the driver compiled instead)",
        "TensorFlow did not find ptxas and let the NVIDIA driver compile its GPU kernels; the run went on. "
        "Only XLA (jit_compile=True) needs ptxas.",
    ),
}
#: Words of a ptxas line that reports a failure, not the advisory (XLA's op failing, an error's own lines).
PTXAS_FAILURE = re.compile(r"OP_REQUIRES failed|xla_ops|xla_compile|Not found:|NOT_FOUND|Error:")
#: An error about compiling GPU code (what a missing ptxas breaks), and one that names XLA.
COMPILE_ERROR = re.compile(r"ptxas|\bPTX\b|compil|libdevice|sass", re.IGNORECASE)
XLA_ERROR = re.compile(r"\bXLA\b|xla_|jit_compile|XlaRuntimeError", re.IGNORECASE)


def is_advisory(problem_id: str, line: str) -> bool:
    """Whether a known message is an advisory the run carries on after: ptxas not found while TensorFlow
    falls back to the driver (redzone allocator, autotuning), not XLA's op failing for want of it."""
    return problem_id in ADVISORIES and PTXAS_FAILURE.search(line) is None


def as_advisory(problem: Problem) -> Problem:
    """An advisory's problem as information: the run survived it."""
    title, message = ADVISORY_TEXTS[str(problem.id)]
    return replace(problem, severity=Severity.INFO, title=title, message=message)


def title_for(problem_id: ProblemId | str) -> str:
    """A problem id in a few words: the training code's own titles, else the id in words."""
    return PROBLEM_TITLES.get(str(problem_id)) or str(problem_id).replace("_", " ").capitalize()


@dataclass(frozen=True)
class Problem:
    """One thing the user should know about a training log (immutable: safe to hand to another thread).

    Attributes:
        id: a `ProblemId`, or a known-signature id from `env/diagnoses.py` (``OOM_TENSOR``).
        severity: how urgent.
        message: what happened.
        fix: what to do ("" when nothing).
        line_number: where it was seen (1-based), None when not from a line.
        line: the line itself ("" when not from a line).
        count: how many times it was seen.
        title: the problem in a few words (filled from the id when not given).
        rank: the rank that printed it, when a launcher's prefix said (``[1,0]<stderr>:``, ``srun --label``).
    """

    id: ProblemId | str
    severity: Severity
    message: str
    fix: str = ""
    line_number: int | None = None
    line: str = ""
    count: int = 1
    title: str = ""
    rank: int | None = None

    def __post_init__(self) -> None:
        if not self.title:
            object.__setattr__(self, "title", title_for(self.id))

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: id, title, severity, line_number, rank, message, fix, line, count."""
        return {
            "id": str(self.id),
            "title": self.title,
            "severity": self.severity.name.lower(),
            "line_number": self.line_number,
            "rank": self.rank,
            "message": self.message,
            "fix": self.fix,
            "line": self.line,
            "count": self.count,
        }

    def where(self) -> str:
        """``rank 1, line 40``: where the problem was seen, "" when nowhere in particular."""
        parts = [f"rank {self.rank}"] if self.rank is not None else []
        parts += [f"line {self.line_number}"] if self.line_number else []
        return ", ".join(parts)

    def to_alert(self, subject: str) -> Alert:
        """The problem as a header alert."""
        kind = f"training_{str(self.id).lower()}"
        short = f"{self.title}: {subject}" if subject else self.title
        return Alert(kind, self.severity, self.message, self.fix, subject, short=short)


def fixes_to_show(problems: list[Problem]) -> list[str]:
    """Each problem's fix as a list beside it: "" where it is the same as one shown above (an out-of-memory
    error and the allocation it failed share their fix)."""
    seen: set[str] = set()
    shown = []
    for problem in problems:
        shown.append("" if problem.fix in seen else problem.fix)
        seen.add(problem.fix)
    return shown


def from_diagnosis(diagnosis: Diagnosis) -> Problem:
    """A known-message match as a problem."""
    return Problem(
        diagnosis.id,
        diagnosis.severity,
        diagnosis.message,
        diagnosis.fix,
        diagnosis.line_number,
        diagnosis.line,
        title=diagnosis.title,
    )


def oom_fix() -> str:
    """What to do when a run ran out of GPU memory (the knowledge base's fix for OOM_TENSOR)."""
    return next(s.fix for s in load_signatures() if s.id == OOM_SIGNATURE)


def error_name(exception_line: str) -> str:
    """``tensorflow.python.framework.errors_impl.ResourceExhaustedError: Graph execution error:`` ->
    ``ResourceExhaustedError: Graph execution error``: the error without its module path or a trailing
    colon."""
    return ERROR_MODULE.sub("", exception_line.strip()).rstrip(":").strip()


def is_oom_exception(exception_line: str) -> bool:
    """Whether an exception line means the run ran out of memory."""
    return OOM_EXCEPTION.search(exception_line) is not None


def is_killed_line(text: str) -> bool:
    """``Killed`` from the shell (the OOM killer's SIGKILL as bash reports it)."""
    return len(text) < 300 and KILLED.search(text) is not None


class TracebackTracker:
    """Finds the exception line that ends a Python traceback; tracebacks Python swallowed
    (``Exception ignored in: ...``) are skipped."""

    def __init__(self) -> None:
        self.inside = False
        self.ignoring = False  # the traceback being read follows "Exception ignored in"

    def feed(self, text: str) -> str | None:
        """Feed one line; returns the exception line when a (not ignored) traceback ends with it."""
        text = POWERSHELL_PREFIX.sub("", text, count=1)
        if text.startswith(IGNORED_EXCEPTION):
            self.ignoring, self.inside = True, False
            return None
        if text.startswith(TRACEBACK_START):
            self.inside = True
            return None
        if self.ignoring and not self.inside:
            self.ignoring = False  # a one-line report ("Exception ignored in: ..." + "BrokenPipeError: ...")
            return None
        if not self.inside:
            return None
        if not text.strip() or text[:1].isspace() or text.startswith(TRACEBACK_CHAINS):
            return None
        if POWERSHELL_RECORD.match(text):
            return None
        self.inside = False
        if self.ignoring:
            self.ignoring = False
            return None
        return text.strip()
