"""The shipped compatibility tables: every row loads, and the look-ups the checks rely on."""

from __future__ import annotations

import csv
from importlib import resources

import pytest

from tfgpu_tui.env import compat


def _csv_rows(name: str) -> int:
    text = resources.files("tfgpu_tui.data").joinpath(name).read_text(encoding="utf-8")
    return len(list(csv.DictReader(text.splitlines(keepends=True))))


def test_every_row_of_every_table_loads() -> None:
    assert len(compat.build_matrix()) == _csv_rows(compat.BUILD_MATRIX_FILE) == 18
    assert len(compat.and_cuda_pins()) == _csv_rows(compat.PINS_FILE)
    assert len(compat.driver_minimums()) == _csv_rows(compat.DRIVER_MIN_FILE)
    assert all(row.source_note for row in compat.build_matrix() + compat.driver_minimums())
    assert all(pin.spec.startswith(("==", "<", ">")) for pin in compat.and_cuda_pins())


@pytest.mark.parametrize(
    ("tf_version", "expected"),
    [
        ("2.21.0", ("12.5", "9.3", "3.10-3.13")),
        ("2.16.2", ("12.3", "8.9", "3.9-3.12")),
        ("2.4.1", ("11.0", "8.0", "3.6-3.8")),
    ],
)
def test_build_row_matches_major_minor(tf_version: str, expected: tuple[str, str, str]) -> None:
    row = compat.build_row_for(tf_version)
    assert row is not None
    assert (row.cuda, row.cudnn, row.python_range) == expected


def test_unknown_versions_have_no_row() -> None:
    assert compat.build_row_for("2.99.0") is None
    assert compat.build_row_for(None) is None
    assert compat.build_row_for("nightly") is None


def test_python_range() -> None:
    row = compat.build_row_for("2.15.0")
    assert row is not None
    assert row.supports_python((3, 11)) and not row.supports_python((3, 12))


def test_driver_requirement_has_hard_floor_and_recommendation() -> None:
    cuda125 = compat.driver_requirement("12.5.1")
    assert cuda125 is not None
    assert (cuda125.hard_floor_text, cuda125.recommended_text) == ("525", "555.42.02")
    assert cuda125.recommended_for == "12.5 GA"
    cuda118 = compat.driver_requirement("11.8")
    assert cuda118 is not None and cuda118.hard_floor_text == "450.80.02"
    assert compat.driver_requirement("9.0") is None


def test_pins_exact_and_ranges() -> None:
    assert compat.pins_for("2.18.0")["nvidia-cudnn-cu12"] == "==9.3.0.75"
    assert compat.pins_for("2.21.0")["nvidia-cudnn-cu12"] == "<10.0,>=9.3.0.75"
    assert compat.pins_for("2.16.2")["nvidia-cudnn-cu12"] == "==8.9.7.29"  # same major.minor
    assert compat.pins_for("2.13.0") == {}


def test_version_parsing() -> None:
    assert compat.version_tuple("2.16.1rc0") == (2, 16, 1)
    assert compat.major_minor("12") == (12, 0)
    assert compat.version_tuple("") is None
