"""The environment check's child processes (the target interpreter), tracked so they can be stopped.

Quitting the dashboard or re-running the check must not wait for a TensorFlow import that may take minutes:
`stop_all()` kills every child still running (its whole process group, so TensorFlow's own helpers go too).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading

from tfgpu_tui.bounded_output import TAIL_BYTES, communicate_bounded

_running: set[subprocess.Popen] = set()
_lock = threading.Lock()


def _kill(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # its own group: start_new_session=True


def run_child(
    args: list[str], timeout: float, env: dict[str, str] | None = None, text: bool = False
) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(args, capture_output=True, timeout=timeout)``, but stoppable by `stop_all()`
    and with bounded output (bounded_output.py: the last 64 KB of each stream, and what was left out).

    Raises:
        OSError: the program could not be started (FileNotFoundError, PermissionError ...).
        subprocess.TimeoutExpired: it ran past `timeout` (it has been killed; ``stderr`` holds its output).
    """
    process = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    with _lock:
        _running.add(process)
    try:  # the last 64 KB of each stream (and the first 64 KB of stderr, where library loading is logged)
        stdout, stderr, _, _ = communicate_bounded(process, timeout, stderr_head=TAIL_BYTES)
    except subprocess.TimeoutExpired as expired:
        _kill(process)
        process.wait()
        out, err = _decoded(expired.output, text), _decoded(expired.stderr, text)
        raise subprocess.TimeoutExpired(args, timeout, output=out, stderr=err) from None
    finally:
        with _lock:
            _running.discard(process)
    return subprocess.CompletedProcess(
        args, process.returncode, _decoded(stdout, text), _decoded(stderr, text)
    )


def _decoded(data: bytes | None, text: bool) -> bytes | str | None:
    return data.decode("utf-8", "replace") if text and data is not None else data


def stop_all() -> int:
    """Kill every child still running; returns how many there were."""
    with _lock:
        processes = list(_running)
    for process in processes:
        _kill(process)
    return len(processes)
