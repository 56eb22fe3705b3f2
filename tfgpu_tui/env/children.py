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

_running: set[subprocess.Popen] = set()
_lock = threading.Lock()


def _kill(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # its own group: start_new_session=True


def run_child(
    args: list[str], timeout: float, env: dict[str, str] | None = None, text: bool = False
) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(args, capture_output=True, timeout=timeout)``, but stoppable by `stop_all()`.

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
        text=text,
        start_new_session=True,
    )
    with _lock:
        _running.add(process)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        stdout, stderr = process.communicate()
        raise subprocess.TimeoutExpired(args, timeout, output=stdout, stderr=stderr) from None
    finally:
        with _lock:
            _running.discard(process)
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def stop_all() -> int:
    """Kill every child still running; returns how many there were."""
    with _lock:
        processes = list(_running)
    for process in processes:
        _kill(process)
    return len(processes)
