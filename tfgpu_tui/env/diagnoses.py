"""Known TensorFlow/CUDA log messages -> what they mean and how to fix them.

The knowledge base is ``tfgpu_tui/data/log_signatures.csv`` (sources in ``log_signatures.md`` beside it).
Shared by the Environment tab (inspection stderr) and the Training tab (train.log lines). Pure: no I/O but
reading the shipped CSV once.
"""

from __future__ import annotations

import csv
import platform
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from tfgpu_tui.alerts import Severity

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
SIGNATURES_FILE = "log_signatures.csv"

# Category (a CSV column) -> how urgent a match is. Unknown categories count as warnings.
CATEGORY_SEVERITY: dict[str, Severity] = {
    "oom": Severity.CRITICAL,
    "host_oom": Severity.CRITICAL,
    "cudnn_init": Severity.CRITICAL,
    "arch_unsupported": Severity.CRITICAL,
    "version_mismatch": Severity.CRITICAL,
    "driver_too_old": Severity.CRITICAL,
    "install": Severity.CRITICAL,
    "config_order": Severity.CRITICAL,
    "keras_mismatch": Severity.CRITICAL,
    "missing_lib": Severity.WARNING,
    "silent_cpu_fallback": Severity.WARNING,
    "no_device": Severity.WARNING,
    "no_driver": Severity.WARNING,
    "driver_mismatch": Severity.WARNING,
    "driver_state": Severity.WARNING,
    "oom_warning": Severity.WARNING,
    "xla_toolchain": Severity.WARNING,
    "platform": Severity.WARNING,
    "perf": Severity.WARNING,
    "positive": Severity.INFO,
    "info": Severity.INFO,
    "noise": Severity.INFO,
    "optional_noise": Severity.INFO,
    "optional": Severity.INFO,  # a real message about something training does not need (TensorRT)
}
# Categories that describe a healthy setup or harmless noise, not a problem.
BENIGN_CATEGORIES = frozenset({"positive", "info", "noise", "optional_noise"})


@dataclass(frozen=True)
class Signature:
    """One known message: its pattern and what it means.

    Attributes:
        id: stable identifier, e.g. ``OOM_TENSOR``.
        category: kind of problem, e.g. ``oom``, ``missing_lib``, ``positive`` (healthy), ``noise``.
        level: the log level(s) TensorFlow uses for it, as written in the CSV.
        pattern: compiled regex matched anywhere in a line (named groups carry details).
        meaning: the reference note: what it means, its causes and versions.
        fix: what to do about it ("-" in the CSV becomes "").
        title: the problem in a few words, for a user ("Out of GPU memory").
        message: one plain sentence about the user's run, with ``{group}`` placeholders for the regex's
            named groups ("" for healthy and noise lines).
        tf_versions: TensorFlow versions that print it (an estimate).
        refs: issues and sources backing the entry.
        sample_line: a real (or constructed) line it matches.
    """

    id: str
    category: str
    level: str
    pattern: re.Pattern[str] = field(compare=False)
    meaning: str
    fix: str
    tf_versions: str = ""
    refs: str = ""
    sample_line: str = ""
    title: str = ""
    message: str = ""

    @property
    def severity(self) -> Severity:
        """How urgent a match is."""
        return CATEGORY_SEVERITY.get(self.category, Severity.WARNING)

    @property
    def is_problem(self) -> bool:
        """False for healthy-state and harmless-noise messages."""
        return self.category not in BENIGN_CATEGORIES


@dataclass(frozen=True)
class Diagnosis:
    """A line that matched a known signature.

    Attributes:
        signature: the entry it matched.
        line: the line itself (stripped of its line ending).
        line_number: 1-based line number in its source, None when unknown.
        details: the regex's named groups that matched (e.g. ``lib``, ``shape``).
    """

    signature: Signature
    line: str
    line_number: int | None = None
    details: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def id(self) -> str:
        return self.signature.id

    @property
    def severity(self) -> Severity:
        return self.signature.severity

    @property
    def is_problem(self) -> bool:
        return self.signature.is_problem

    @property
    def meaning(self) -> str:
        return self.signature.meaning

    @property
    def fix(self) -> str:
        return fill(self.signature.fix, self.details)

    @property
    def title(self) -> str:
        """The problem in a few words (the signature's title, else its id in words)."""
        return self.signature.title or self.id.replace("_", " ").capitalize()

    @property
    def message(self) -> str:
        """One sentence about the run that printed the line (the signature's message with the line's
        details filled in), else the reference meaning."""
        return fill(self.signature.message, self.details) if self.signature.message else self.meaning

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form: id, category, severity, line_number, line, meaning, fix, details."""
        return {
            "id": self.id,
            "category": self.signature.category,
            "severity": self.severity.name.lower(),
            "line_number": self.line_number,
            "line": self.line,
            "meaning": self.meaning,
            "fix": self.fix,
            "details": dict(self.details),
        }


def _clean(text: str) -> str:
    return "" if text.strip() == "-" else text.strip()


PLACEHOLDER = re.compile(r"\{(\w+)\}")


def detail_text(name: str, value: str) -> str:
    """A matched detail as a user reads it: a TensorFlow device path as its device (``GPU:0``)."""
    if name == "device" and "device:" in value:
        return value.rsplit("device:", 1)[1]
    return value


def fill(template: str, details: dict[str, str]) -> str:
    """`template` with each ``{name}`` replaced by that detail (a missing one by ``?``)."""
    return PLACEHOLDER.sub(lambda m: detail_text(m.group(1), details.get(m.group(1), "?")), template)


def parse_signatures(rows: Iterable[dict[str, str]]) -> tuple[Signature, ...]:
    """Signatures from CSV rows (dicts with the CSV's column names)."""
    return tuple(
        Signature(
            id=row["id"],
            category=row["category"],
            level=row["level"],
            pattern=re.compile(row["regex"]),
            meaning=_clean(row["meaning"]),
            fix=_clean(row["fix"]),
            tf_versions=row.get("tf_versions", ""),
            refs=_clean(row.get("refs", "")),
            sample_line=row.get("sample_line", ""),
            title=_clean(row.get("title", "")),
            message=_clean(row.get("message", "")),
        )
        for row in rows
    )


def load_signatures_file(path: Path) -> tuple[Signature, ...]:
    """Signatures from a CSV file with the columns of the shipped one."""
    with path.open(newline="", encoding="utf-8") as handle:
        return parse_signatures(csv.DictReader(handle))


@lru_cache(maxsize=1)
def load_signatures() -> tuple[Signature, ...]:
    """The shipped knowledge base (read once, then cached)."""
    return load_signatures_file(DATA_DIR / SIGNATURES_FILE)


# How cuInit error 303 (the driver's CUDA library could not initialise) is fixed on each platform.
PLATFORM_FIXES = {
    "Linux": "Check `nvidia-smi`: after a driver update reboot (the kernel module and libcuda must be the "
    "same version); in a container start it with `--gpus all` (NVIDIA_DRIVER_CAPABILITIES=compute,utility); "
    "without a driver install one (`sudo ubuntu-drivers install`).",
    "WSL2": "Under WSL2 install the NVIDIA driver on Windows only (remove any Linux driver inside WSL: "
    "`sudo apt remove --purge 'nvidia-*'` keeps /usr/lib/wsl/lib), then `wsl --update` and `wsl --shutdown`.",
    "Windows": "Reinstall the NVIDIA driver for your GPU and reboot until `nvidia-smi` lists it.",
}


# What in a log line tells the platform that wrote it (checked in this order).
PLATFORM_HINTS = (
    ("WSL2", re.compile(r"/usr/lib/wsl/|\bWSL2?\b")),
    ("Windows", re.compile(r"\.dll\b|\b[A-Za-z]:\\|\\tensorflow\\", re.IGNORECASE)),
    ("Linux", re.compile(r"\blib\w+\.so(?:\.\d+)*\b|/usr/lib/x86_64-linux-gnu/")),
)
UNKNOWN_PLATFORM = "the machine that wrote this log (its platform is not named in it)"


def platform_hint(line: str) -> str | None:
    """Linux, WSL2 or Windows where a log line shows it (a .dll, a drive letter, /usr/lib/wsl, a .so)."""
    for name, pattern in PLATFORM_HINTS:
        if pattern.search(line):
            return name
    return None


@lru_cache(maxsize=1)
def this_platform() -> str:
    """The platform this process runs on: Linux, WSL2 or Windows (other systems read as Linux)."""
    name = platform.system()
    if name == "Linux" and "microsoft" in platform.release().lower():
        name = "WSL2"
    return name if name in PLATFORM_FIXES else "Linux"


def platform_details(name: str | None) -> dict[str, str]:
    """The `{platform}` and `{platform_fix}` of a message about an error on platform `name`; None (the log
    does not say) gives each platform's fix."""
    if name in PLATFORM_FIXES:
        return {"platform": name, "platform_fix": PLATFORM_FIXES[name]}
    every = " ".join(f"On {key}: {fix}" for key, fix in PLATFORM_FIXES.items())
    return {"platform": UNKNOWN_PLATFORM, "platform_fix": every}


def diagnose_line(
    line: str,
    line_number: int | None = None,
    signatures: Iterable[Signature] | None = None,
    include_benign: bool = False,
    platform_name: str | None = None,
) -> Diagnosis | None:
    """The first signature matching `line`, or None.

    Args:
        line: one log line (any line ending is stripped).
        line_number: recorded in the diagnosis.
        signatures: the knowledge base to use (default: the shipped one).
        include_benign: also report healthy/noise messages (``is_problem`` False).
        platform_name: where the line was written (Linux, WSL2, Windows), for error codes whose meaning
            depends on it; None: the line's own hint, else every platform's explanation.
    """
    text = line.rstrip("\r\n")
    for signature in load_signatures() if signatures is None else signatures:
        if not include_benign and not signature.is_problem:
            continue
        match = signature.pattern.search(text)
        if match:
            details = {k: v for k, v in match.groupdict().items() if v is not None}
            if "{platform" in signature.message + signature.fix:
                details.update(platform_details(platform_name or platform_hint(text)))
            return Diagnosis(signature, text, line_number, details)
    return None


def diagnose_lines(
    lines: Iterable[str],
    signatures: Iterable[Signature] | None = None,
    include_benign: bool = False,
    first_line_number: int = 1,
    platform_name: str | None = None,
) -> list[Diagnosis]:
    """Every matching line of `lines`, in order, numbered from `first_line_number`. `platform_name`: where
    they were written; None: the latest platform hint of the lines so far (see `diagnose_line`)."""
    chosen = tuple(load_signatures() if signatures is None else signatures)
    found = []
    seen = platform_name
    for number, line in enumerate(lines, start=first_line_number):
        seen = platform_name or platform_hint(line) or seen
        diagnosis = diagnose_line(line, number, chosen, include_benign, seen)
        if diagnosis is not None:
            found.append(diagnosis)
    return found


def diagnose_text(
    text: str, include_benign: bool = False, platform_name: str | None = None
) -> list[Diagnosis]:
    """Every matching line of a block of text (e.g. a child process's captured stderr)."""
    return diagnose_lines(text.splitlines(), include_benign=include_benign, platform_name=platform_name)
