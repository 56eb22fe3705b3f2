"""Our own children (proc/spawn.py): started marked in a group of their own, output bounded, ended with the
whole group, on real processes."""

from __future__ import annotations

import subprocess
import sys
import threading

import psutil
import pytest

from tests.helpers.waiting import wait_for
from tfgpu_tui.proc.marks import CHILD_ENV_VALUE, CHILD_ENV_VAR
from tfgpu_tui.proc.spawn import TAIL_BYTES, child, communicate_bounded, run_child, stop_all

pytestmark = pytest.mark.e2e  # real child processes

# prints the PID of a grandchild it started, then waits for it
PARENT = [sys.executable, "-c", "import subprocess, sys, time; g = subprocess.Popen(['sleep', '60']); "
          "print(g.pid, flush=True); time.sleep(60)"]  # fmt: skip


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_run_child_keeps_the_end_of_a_long_output_and_marks_the_child() -> None:
    code = (
        "import os, sys; sys.stdout.write('x' * 300_000 + 'last'); "
        f"sys.stderr.write(os.environ.get({CHILD_ENV_VAR!r}, 'unmarked'))"
    )
    done = run_child([sys.executable, "-c", code], timeout=60, text=True)
    assert done.returncode == 0 and done.stderr == CHILD_ENV_VALUE
    assert done.stdout.endswith("x" * 100 + "last") and len(done.stdout) < TAIL_BYTES + 100
    assert "bytes of output left out" in done.stdout


def test_run_child_past_its_timeout_is_ended_with_its_group() -> None:
    started: list[int] = []
    code = PARENT[2].replace("time.sleep(60)", "sys.stdout.flush(); time.sleep(60)")
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        run_child([sys.executable, "-c", code], timeout=3)
    started.append(int(raised.value.output.split()[0]))
    wait_for(lambda: gone(started[0]), timeout=60)


def test_stop_all_ends_a_running_child_and_its_group() -> None:
    results: list[subprocess.CompletedProcess] = []
    thread = threading.Thread(target=lambda: results.append(run_child(PARENT, timeout=120)))
    thread.start()
    grandchildren: list[psutil.Process] = []

    def started() -> bool:  # the child has started its own child (its "sleep")
        grandchildren[:] = [p for p in psutil.Process().children(recursive=True) if p.name() == "sleep"]
        return bool(grandchildren)

    wait_for(started, timeout=60)
    assert stop_all() == 1
    thread.join(30)
    assert not thread.is_alive() and results[0].returncode == -9
    wait_for(lambda: gone(grandchildren[0].pid), timeout=60)
    assert stop_all() == 0


def test_leaving_a_child_by_an_exception_ends_it_and_its_group() -> None:
    with pytest.raises(KeyboardInterrupt), child(PARENT) as process:
        assert process.stdout is not None
        grandchild = int(process.stdout.readline())
        raise KeyboardInterrupt
    assert process.returncode == -9 and process.stdout.closed
    wait_for(lambda: gone(grandchild), timeout=60)


def test_a_child_asked_to_stop_returns_what_it_printed() -> None:
    with child([sys.executable, "-c", "print('hello', flush=True); import time; time.sleep(60)"]) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        stdout, _ = communicate_bounded(process, poll=0.01, should_stop=lambda: True)
    assert first == b"hello\n" and stdout == b"" and process.returncode == -9


# fork_call forks only a process with one thread, which pytest's is not: each case runs in a fresh
# interpreter, which prints what the parent got.
FORKED = """
import os, sys, time
from tfgpu_tui.proc.spawn import fork_call

def late():
    time.sleep(60)

def fails():
    raise RuntimeError("no")

case = sys.argv[1]
if case == "value":
    call = fork_call(lambda: {"pid": os.getpid(), "devices": [1, 2]})
    got = call.result(30)
    print(call.pid == got["pid"] != os.getpid(), got["devices"])
elif case == "late":
    call = fork_call(late)
    print(call.pid, call.result(0.5), flush=True)
    time.sleep(60)
elif case == "fails":
    print(fork_call(fails).result(30))
elif case == "threads":
    import threading
    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
    print(fork_call(lambda: 1))
"""


def forked(case: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", FORKED, case], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()


def test_fork_call_returns_what_the_function_returned_in_another_process() -> None:
    assert forked("value") == "True [1, 2]"  # computed in the child, whose PID it was


def test_fork_call_gives_nothing_for_a_function_that_raises() -> None:
    assert forked("fails") == "None"


def test_fork_call_does_not_fork_a_process_that_runs_threads() -> None:
    assert forked("threads") == "None"


def test_a_late_forked_call_gives_nothing_and_its_child_is_ended() -> None:
    process = subprocess.Popen([sys.executable, "-c", FORKED, "late"], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        pid, result = process.stdout.readline().split()
        assert result == "None"
        wait_for(lambda: not psutil.pid_exists(int(pid)), 60)  # killed, and reaped by its parent
    finally:
        process.kill()
        process.wait()
