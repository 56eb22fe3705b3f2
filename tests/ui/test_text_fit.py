"""Text fitted to a width without cutting a word: whole words then " …", and long paths broken before "/"."""

from __future__ import annotations

from tfgpu_tui.ui.text_fit import break_long_words, whole_words


def test_whole_words_keep_the_ellipsis_apart() -> None:
    assert whole_words("CPU fallback: PID 42210 train.py", 40) == "CPU fallback: PID 42210 train.py"
    assert whole_words("CPU fallback: PID 42210 train.py", 20) == "CPU fallback: PID …"
    assert whole_words("supercalifragilistic", 8) == "superca…"  # one word longer than the room
    assert whole_words("abc", 2) == "…"  # no room for a word


def test_a_path_longer_than_the_width_breaks_before_a_slash() -> None:
    path = "/root/venvs/tf/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12,"
    lines = break_long_words(f"Loaded: {path} /usr/lib", 40).split("\n")
    assert lines == [
        "Loaded: /root/venvs/tf/lib/python3.11",
        "/site-packages/nvidia/cublas/lib",
        "/libcublas.so.12, /usr/lib",
    ]
    assert all(len(word) <= 40 for line in lines for word in line.split())
    assert "".join(lines).replace(" ", "") == f"Loaded:{path}/usr/lib"  # nothing lost or added


def test_short_words_and_a_word_with_no_slash_stay_as_they_are() -> None:
    assert break_long_words("short words\nsecond line", 5) == "short words\nsecond line"
    assert break_long_words("averyveryverylongword end", 5) == "averyveryverylongword end"
    assert break_long_words("/a/b", 0) == "/a/b"  # no width yet: nothing to fit


def test_a_url_keeps_its_scheme_and_host_and_whitespace_is_kept() -> None:
    url = "https://developer.nvidia.com/cuda-downloads/linux/x86_64"
    assert break_long_words(url, 24).split("\n") == [
        "https://developer.nvidia.com",  # longer than the width, but nowhere to break inside it
        "/cuda-downloads/linux",
        "/x86_64",
    ]
    assert break_long_words("a\t/very/long/path  two", 6) == "a\t/very\n/long\n/path  two"
    assert break_long_words("//server/share/folder", 8) == "//server\n/share\n/folder"


def test_wide_characters_count_as_two_cells() -> None:
    assert break_long_words("/数据/训练/日志", 6) == "/数据\n/训练\n/日志"
