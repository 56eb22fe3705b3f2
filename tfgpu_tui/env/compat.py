"""TensorFlow build matrix, `tensorflow[and-cuda]` pins and CUDA driver minimums (shipped CSV tables).

Sources are in ``tfgpu_tui/data/compat_tables.md``. Pure: no I/O but reading the shipped tables once.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

BUILD_MATRIX_FILE = "tf_build_matrix.csv"
PINS_FILE = "tf_and_cuda_pins.csv"
DRIVER_MIN_FILE = "cuda_driver_min.csv"

_NUMBERS = re.compile(r"\d+(?:\.\d+)*")


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """The leading dotted number of `text` as a tuple (``"2.16.1rc0"`` -> (2, 16, 1)); None without one."""
    if not text:
        return None
    match = _NUMBERS.search(text)
    return tuple(int(part) for part in match.group(0).split(".")) if match else None


def major_minor(text: str | None) -> tuple[int, int] | None:
    """(major, minor) of a version string; a bare major gives minor 0."""
    numbers = version_tuple(text)
    if not numbers:
        return None
    return (numbers[0], numbers[1] if len(numbers) > 1 else 0)


@dataclass(frozen=True)
class BuildRow:
    """One tested Linux GPU build: TF version -> Python range, CUDA and cuDNN (major.minor)."""

    tf_version: str
    python_min: tuple[int, int]
    python_max: tuple[int, int]
    cuda: str
    cudnn: str
    source_note: str

    @property
    def python_range(self) -> str:
        return f"{self.python_min[0]}.{self.python_min[1]}-{self.python_max[0]}.{self.python_max[1]}"

    def supports_python(self, version: tuple[int, int]) -> bool:
        return self.python_min <= version <= self.python_max


@dataclass(frozen=True)
class Pin:
    """One `extra == "and-cuda"` requirement of a TF release."""

    tf_version: str
    package: str
    spec: str  # e.g. "==12.5.82" or ">=12.5.82,<13.0"


@dataclass(frozen=True)
class DriverMinimum:
    """The drivers a CUDA toolkit release needs on Linux x86_64."""

    cuda_toolkit: str  # as written, e.g. "12.5 Update 1"
    cuda: tuple[int, int]
    toolkit_driver: tuple[int, ...]  # the recommended driver for this exact toolkit
    compat_floor: tuple[int, ...]  # the minor-version-compatibility floor for the whole major
    source_note: str
    toolkit_driver_text: str  # as NVIDIA writes it ("555.42.02": the zero matters to readers)
    compat_floor_text: str


def _read_rows(name: str) -> list[dict[str, str]]:
    text = resources.files("tfgpu_tui.data").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines(keepends=True)))


def _python_bounds(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    low, _, high = text.partition("-")
    low_version, high_version = major_minor(low), major_minor(high or low)
    if low_version is None or high_version is None:
        raise ValueError(f"bad python_versions cell: {text!r}")
    return low_version, high_version


@lru_cache(maxsize=1)
def build_matrix() -> tuple[BuildRow, ...]:
    """Every row of the Linux GPU build matrix, newest first."""
    rows = []
    for row in _read_rows(BUILD_MATRIX_FILE):
        low, high = _python_bounds(row["python_versions"])
        rows.append(BuildRow(row["tf_version"], low, high, row["cuda"], row["cudnn"], row["source_note"]))
    return tuple(rows)


_PIN = re.compile(r"^\s*(?P<package>[A-Za-z0-9_.\-]+)\s*\(?(?P<spec>[^;)]*)\)?\s*;")


def parse_requirement(text: str) -> tuple[str, str] | None:
    """(package, spec without spaces) of a conditional requirement such as
    ``nvidia-cudnn-cu12 (==8.9.4.25) ; extra == 'and-cuda'``; None when it is not one."""
    match = _PIN.match(text)
    if not match:
        return None
    spec = ",".join(part.strip() for part in match.group("spec").split(","))
    return match.group("package"), spec.replace(" ", "")


@lru_cache(maxsize=1)
def and_cuda_pins() -> tuple[Pin, ...]:
    """Every `tensorflow[and-cuda]` requirement, TF 2.14.0 onwards."""
    pins = []
    for row in _read_rows(PINS_FILE):
        pin = parse_requirement(row["requirement"])
        if pin is None:
            raise ValueError(f"bad requirement: {row['requirement']!r}")
        pins.append(Pin(row["tf_version"], *pin))
    return tuple(pins)


_FLOOR_EXACT = re.compile(r"needs (\d+(?:\.\d+)+) \(Linux\)")
_FLOOR_MAJOR = re.compile(r">=\s*(\d+)")


def _driver_text(cell: str) -> str:
    match = _NUMBERS.search(cell)
    if match is None:
        raise ValueError(f"bad driver cell: {cell!r}")
    return match.group(0)


@lru_cache(maxsize=1)
def driver_minimums() -> tuple[DriverMinimum, ...]:
    """Every CUDA toolkit release with its Linux driver minimums, newest first."""
    rows = []
    for row in _read_rows(DRIVER_MIN_FILE):
        cuda = major_minor(row["cuda_toolkit"])
        compat = row["minor_version_compat_min"]
        floor_match = _FLOOR_EXACT.search(compat) or _FLOOR_MAJOR.search(compat)
        if cuda is None or floor_match is None:
            raise ValueError(f"bad driver row: {row}")
        toolkit_text, floor_text = _driver_text(row["toolkit_driver_linux_x86_64"]), floor_match.group(1)
        rows.append(
            DriverMinimum(
                row["cuda_toolkit"],
                cuda,
                version_tuple(toolkit_text) or (),
                version_tuple(floor_text) or (),
                row["source_note"],
                toolkit_text,
                floor_text,
            )
        )
    return tuple(rows)


def build_row_for(tf_version: str | None) -> BuildRow | None:
    """The tested build for a TF version: same major.minor (``2.16.2`` -> the ``2.16.1`` row), else None."""
    wanted = major_minor(tf_version)
    if wanted is None:
        return None
    for row in build_matrix():
        if major_minor(row.tf_version) == wanted:
            return row
    return None


def pins_for(tf_version: str | None) -> dict[str, str]:
    """package -> version spec of `tensorflow[and-cuda]` for a TF release (same major.minor); {} if none."""
    wanted = major_minor(tf_version)
    exact = [pin for pin in and_cuda_pins() if pin.tf_version == tf_version]
    chosen = exact or [pin for pin in and_cuda_pins() if major_minor(pin.tf_version) == wanted]
    return {pin.package: pin.spec for pin in chosen}


@dataclass(frozen=True)
class DriverRequirement:
    """What a CUDA version asks of the driver: a hard floor and a recommended version."""

    cuda: tuple[int, int]
    hard_floor: tuple[int, ...]
    recommended: tuple[int, ...]
    recommended_for: str  # the toolkit release the recommendation comes from
    hard_floor_text: str
    recommended_text: str


def driver_requirement(cuda_version: str | None) -> DriverRequirement | None:
    """The driver needed by TF's CUDA version (e.g. ``"12.5.1"``), None when the table has no such CUDA."""
    wanted = major_minor(cuda_version)
    if wanted is None:
        return None
    same_minor = [row for row in driver_minimums() if row.cuda == wanted]
    if not same_minor:
        return None
    lowest = min(same_minor, key=lambda row: row.toolkit_driver)
    return DriverRequirement(
        wanted,
        lowest.compat_floor,
        lowest.toolkit_driver,
        lowest.cuda_toolkit,
        lowest.compat_floor_text,
        lowest.toolkit_driver_text,
    )


def format_version(numbers: tuple[int, ...]) -> str:
    """(525, 60, 13) -> "525.60.13"."""
    return ".".join(str(part) for part in numbers)
