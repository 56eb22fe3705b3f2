"""proc_info.py reads what psutil reads, straight from /proc: checked against psutil on real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from tfgpu_tui.gpu import proc_info
from tfgpu_tui.gpu.proc_info import host_memory, read_info, split_cmdline
from tfgpu_tui.gpu.proc_stat import cpu_percent_between, host_cpu_times, read_stat


@pytest.fixture
def odd_child():
    """A child whose argv has spaces, an empty argument and bytes that are not UTF-8."""
    argv = [sys.executable, "-c", "import time; time.sleep(60)", "two words", "", os.fsdecode(b"caf\xe9")]
    child = subprocess.Popen(argv)
    yield child, argv
    child.kill()
    child.wait()


def test_identity_and_argv_are_psutils(odd_child) -> None:
    child, argv = odd_child
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).cmdline() != argv and time.monotonic() < deadline:  # until it has exec'd
        time.sleep(0.01)
    for pid in (os.getpid(), child.pid, 1):
        stat = read_stat(pid)
        assert stat is not None
        info = read_info(pid, stat.start_ticks)
        process = psutil.Process(pid)
        assert info.uid == process.uids().real
        assert info.user == process.username()
        assert info.create_time == pytest.approx(process.create_time(), abs=1e-6)
        assert info.cmdline == process.cmdline()
    assert read_info(child.pid, read_stat(child.pid).start_ticks).cmdline == argv  # type: ignore[union-attr]


def test_a_gone_process_raises_process_lookup_error() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    with pytest.raises(ProcessLookupError):
        read_info(child.pid, 0)


def test_kernel_threads_have_no_argv_but_a_name() -> None:
    stat = read_stat(2)  # kthreadd, where /proc shows the host's processes
    if stat is None:
        pytest.skip("PID 2 is not visible here (a PID namespace)")
    info = read_info(2, stat.start_ticks)
    assert info.cmdline == [] and info.name == psutil.Process(2).name()


def test_cmdline_splitting() -> None:
    assert split_cmdline(b"") == []
    assert split_cmdline(b"python\0train.py\0--lr\x000.1\0") == ["python", "train.py", "--lr", "0.1"]
    assert split_cmdline(b"nginx: worker process") == ["nginx:", "worker", "process"]  # a rewritten title
    assert split_cmdline(b"postgres: writer  \0") == ["postgres:", "writer", "", ""]  # one string, NUL-ended


def test_host_memory_and_cpu_are_psutils() -> None:
    total, available = host_memory()
    memory = psutil.virtual_memory()
    assert total == memory.total
    assert abs(available - memory.available) < 64 * 2**20  # read a moment apart
    busy, whole = host_cpu_times()
    times = psutil.cpu_times()
    assert whole == pytest.approx(sum(times) - times.guest - times.guest_nice, abs=1.0)
    assert busy == pytest.approx(whole - times.idle - times.iowait, abs=1.0)
    later = host_cpu_times()
    assert 0.0 <= cpu_percent_between((busy, whole), later) <= 100.0


def test_the_boot_time_is_read_once_a_second(monkeypatch) -> None:
    opened: list[str] = []
    real_open = open

    def counting_open(path, *args, **kwargs):
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    now = [5000.0]
    monkeypatch.setattr(proc_info, "_boot", [])
    monkeypatch.setattr(proc_info.time, "monotonic", lambda: now[0])
    monkeypatch.setattr("builtins.open", counting_open)
    first = proc_info.boot_time()
    assert proc_info.boot_time() == first and opened.count(f"{proc_info.PROC}/stat") == 1
    now[0] += proc_info.BOOT_TIME_SECONDS
    assert proc_info.boot_time() == first and opened.count(f"{proc_info.PROC}/stat") == 2
