"""safe_files: a JSON file we wrote is read back bounded, and only from a regular file; writes are atomic."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tfgpu_tui.safe_files import read_json_object, write_atomically


def test_what_was_written_atomically_reads_back_with_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state.json"
    write_atomically(path, '{"sent": {"a": 1.5}}\n')
    assert read_json_object(path, 1024) == {"sent": {"a": 1.5}}
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]  # no temporary file left


def test_a_fifo_a_directory_and_a_missing_file_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="FIFO"):
        read_json_object(fifo, 1024)  # an open would block until a writer came
    with pytest.raises(OSError, match="directory"):
        read_json_object(tmp_path, 1024)
    with pytest.raises(FileNotFoundError):
        read_json_object(tmp_path / "none.json", 1024)


def test_a_file_over_the_bound_or_not_an_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"x": "' + "y" * 2000 + '"}')
    with pytest.raises(OSError) as refused:
        read_json_object(path, 1024)
    assert refused.value.errno == errno.EFBIG
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not hold a JSON object"):
        read_json_object(path, 1024)
    path.write_text("{not json")
    with pytest.raises(ValueError):
        read_json_object(path, 1024)
