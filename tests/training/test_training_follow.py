"""tail -F behaviour: new bytes only, partial lines, truncation, rotation, deletion, huge lines, junk."""

from __future__ import annotations

import os

import pytest

from tfgpu_tui.training.follow import FileState, LogFollower, SegmentSplitter, line_start_at_or_after


def texts(update):
    return [(s.text, s.line_ends) for s in update.segments]


def append(path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_missing_file_is_waited_for_then_read_from_start(tmp_path):
    path = tmp_path / "train.log"
    follower = LogFollower(path)
    update = follower.poll()
    assert update.state is FileState.WAITING and not update.segments
    path.write_bytes(b"hello\n")
    update = follower.poll()
    assert update.events == ["opened"] and texts(update) == [("hello", True)]


def test_only_new_bytes_and_partial_lines_wait_for_their_end(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(b"one\ntw")
    follower = LogFollower(path)
    update = follower.poll()
    assert texts(update) == [("one", True)] and update.partial == "tw"
    assert not follower.poll().segments
    append(path, b"o\nthree\r")
    update = follower.poll()
    assert texts(update) == [("two", True)]
    assert update.partial.rstrip("\r") == "three"
    append(path, b"\n")
    assert texts(follower.poll()) == [("three", True)]  # \r\n split over two reads is one line end


def test_carriage_returns_split_updates_and_line_numbers_count_newlines(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(b"Epoch 1/2\n\r1/3 a\x08\x08\r2/3 b\x08\x08\r3/3 c\nEpoch 2/2\n")
    update = LogFollower(path).poll()
    assert texts(update) == [
        ("Epoch 1/2", True),
        ("", False),
        ("1/3 a\b\b", False),
        ("2/3 b\b\b", False),
        ("3/3 c", True),
        ("Epoch 2/2", True),
    ]
    assert [s.line_number for s in update.segments] == [1, 2, 2, 2, 2, 3]


def test_truncation_restarts_from_the_beginning(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(b"old line one\nold line two\n")
    follower = LogFollower(path)
    follower.poll()
    path.write_bytes(b"new\n")  # truncates (same inode) and writes less
    update = follower.poll()
    assert "truncated" in update.events and texts(update) == [("new", True)]
    assert update.segments[0].line_number == 1


def test_rotation_drains_the_old_file_then_follows_the_new_one(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(b"a\n")
    follower = LogFollower(path)
    follower.poll()
    append(path, b"last of old\n")
    os.rename(path, tmp_path / "train.log.1")
    path.write_bytes(b"first of new\n")
    update = follower.poll()
    assert update.events == ["rotated"]
    assert texts(update) == [("last of old", True), ("first of new", True)]


def test_deletion_is_reported_once_and_recreation_followed(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(b"a\n")
    follower = LogFollower(path)
    follower.poll()
    path.unlink()
    update = follower.poll()
    assert update.events == ["deleted"] and update.state is FileState.DELETED
    assert follower.poll().events == []
    path.write_bytes(b"back\n")
    update = follower.poll()
    assert update.events == ["rotated"] and texts(update) == [("back", True)]
    assert update.state is FileState.OPEN


def test_ten_megabyte_line_arrives_whole(tmp_path):
    path = tmp_path / "train.log"
    big = b"x" * (10 * 1024 * 1024)
    path.write_bytes(big[:3_000_000])
    follower = LogFollower(path)
    assert not follower.poll().segments
    append(path, big[3_000_000:] + b"\nafter\n")
    segments = []
    while update := follower.poll():
        if not update.bytes_read:
            break
        segments += update.segments
    assert [len(s.text) for s in segments] == [len(big), 5]


def test_invalid_utf8_binary_junk_and_split_multibyte_characters(tmp_path):
    path = tmp_path / "train.log"
    bar = "━".encode()
    path.write_bytes(b"\xff\xfd\x00junk\x00\x80\n" + bar[:1])  # (\xff\xfe would be a UTF-16 BOM)
    follower = LogFollower(path)
    update = follower.poll()
    assert update.segments[0].text == "\ufffd\ufffdjunk\ufffd"
    append(path, bar[1:] + b" done\n")
    assert texts(follower.poll()) == [("━ done", True)]


def test_splitter_caps_an_endless_line(tmp_path):
    splitter = SegmentSplitter(max_segment_bytes=10)
    assert splitter.feed(b"a" * 25) == []
    assert len(splitter.pending) == 10
    (segment,) = splitter.feed(b"tail\n")
    assert segment.text.startswith("a" * 10) and "bytes cut" in segment.text


def test_line_start_at_or_after(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abc\ndef\nghi")
    assert line_start_at_or_after(path, 0) == 0
    assert line_start_at_or_after(path, 1) == 4
    assert line_start_at_or_after(path, 4) == 4
    assert line_start_at_or_after(path, 9) == 11


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom_is_decoded_and_offsets_stay_on_code_units(tmp_path, encoding):
    path = tmp_path / "train.log"
    bom = b"\xff\xfe" if encoding == "utf-16-le" else b"\xfe\xff"
    first = "Epoch 1/2\r\n 1/5 [==>...] - ETA: 1s\r 5/5 [=====] - 1s 2ms/step - loss: 0.5\r\nਊ\n".encode(
        encoding
    )
    path.write_bytes(bom + first[:-3])  # the last character cut in half: it must wait for its other byte
    follower = LogFollower(path)
    update = follower.poll()
    assert texts(update) == [
        ("Epoch 1/2", True),
        (" 1/5 [==>...] - ETA: 1s", False),
        (" 5/5 [=====] - 1s 2ms/step - loss: 0.5", True),
    ]
    assert update.partial == "" and follower.offset == len(bom) + len(first) - 3
    append(path, first[-3:] + "Epoch 2/2\n".encode(encoding))
    assert texts(follower.poll()) == [("ਊ", True), ("Epoch 2/2", True)]
    assert follower.offset % 2 == 0


def test_utf16_started_in_the_middle_keeps_even_offsets_and_utf8_bom_is_dropped(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(b"\xff\xfe" + "ab\ncd\n".encode("utf-16-le"))
    follower = LogFollower(path, start_offset=3)  # odd: moved to the next code unit (the "b")
    assert texts(follower.poll()) == [("b", True), ("cd", True)]
    path.write_bytes(b"\xef\xbb\xbfEpoch 1/3\n")
    assert texts(LogFollower(path).poll()) == [("Epoch 1/3", True)]
