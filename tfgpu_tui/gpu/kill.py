"""The safe signal path: re-check a process's identity before every signal, SIGTERM, grace, SIGKILL.

A process is identified by (pid, create time), so a recycled PID is never signalled. Where the OS offers a
pidfd (Linux >= 5.3, Python >= 3.9) the signal goes through it, which closes the race between the check and
the signal entirely.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from tfgpu_tui.gpu.model import ProcessIdentity
from tfgpu_tui.gpu.source import SignalOutcome

CREATE_TIME_TOLERANCE = 0.05  # psutil's create time has 0.01 s precision on Linux
KILL_WAIT_SECONDS = 3.0
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class KillOutcome:
    """The end result of a kill, shown to the user."""

    pid: int
    result: str  # freed | still_held | permission_denied | already_gone | refused | pid_reused | error
    message: str
    freed_mib: float | None = None
    signals_sent: tuple[str, ...] = ()


class _Gone(Exception):
    """The process has already exited (or is a zombie waiting to be reaped)."""


class _Reused(Exception):
    """The PID now belongs to a different process."""


def _check_identity(identity: ProcessIdentity) -> None:
    """Raise _Gone or _Reused unless ``identity`` still names a live process."""
    try:
        process = psutil.Process(identity.pid)
        create_time = process.create_time()
        zombie = process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        raise _Gone from None
    if identity.create_time is None or abs(create_time - identity.create_time) > CREATE_TIME_TOLERANCE:
        raise _Reused
    if zombie:
        raise _Gone


def _open_pidfd(pid: int) -> int | None:
    """A pidfd for ``pid``, or None where the OS or Python has none."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None or not hasattr(signal, "pidfd_send_signal"):
        return None
    try:
        return opener(pid)
    except ProcessLookupError:
        raise _Gone from None
    except OSError:
        return None


def _send(pid: int, pidfd: int | None, signum: int) -> None:
    """Send ``signum`` through the pidfd when there is one, else by PID."""
    if pidfd is not None:
        signal.pidfd_send_signal(pidfd, signum)
    else:
        os.kill(pid, signum)


def _wait_for_exit(identity: ProcessIdentity, pidfd: int | None, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the process to exit; True when it did."""
    if pidfd is not None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(max(0, int(timeout * 1000))))
    deadline = time.monotonic() + timeout
    while True:
        try:
            _check_identity(identity)
        except (_Gone, _Reused):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)


def terminate_process(
    identity: ProcessIdentity,
    grace_seconds: float,
    on_progress: Callable[[str], None] | None = None,
    kill_wait_seconds: float = KILL_WAIT_SECONDS,
) -> SignalOutcome:
    """SIGTERM, wait ``grace_seconds``, SIGKILL if still alive; identity re-checked before each signal.

    Returns:
        A SignalOutcome whose result is ended, still_alive, permission_denied, already_gone, pid_reused
        or error. It never raises for the usual failures.
    """
    pid = identity.pid
    progress = on_progress or (lambda _text: None)
    sent: list[str] = []
    pidfd: int | None = None
    try:
        _check_identity(identity)
        pidfd = _open_pidfd(pid)
        for signum, wait in ((signal.SIGTERM, grace_seconds), (signal.SIGKILL, kill_wait_seconds)):
            _check_identity(identity)
            _send(pid, pidfd, signum)
            sent.append(signum.name)
            progress(f"Sent {signum.name} to PID {pid}; waiting up to {wait:g} s for it to exit")
            if _wait_for_exit(identity, pidfd, wait):
                return SignalOutcome("ended", f"PID {pid} ended ({signum.name})", tuple(sent))
            if signum == signal.SIGTERM:
                progress(f"PID {pid} is still running after {wait:g} s; sending SIGKILL")
        return SignalOutcome(
            "still_alive",
            f"PID {pid} is still alive after SIGKILL (probably stuck in the driver, state D); "
            "it may need a reboot to free its GPU memory",
            tuple(sent),
        )
    except _Gone:
        if sent:
            return SignalOutcome("ended", f"PID {pid} ended ({sent[-1]})", tuple(sent))
        return SignalOutcome("already_gone", f"PID {pid} had already exited", tuple(sent))
    except _Reused:
        if sent:
            return SignalOutcome("ended", f"PID {pid} ended ({sent[-1]})", tuple(sent))
        return SignalOutcome(
            "pid_reused", f"PID {pid} now belongs to a different process; nothing was sent", tuple(sent)
        )
    except ProcessLookupError:
        return SignalOutcome("already_gone", f"PID {pid} had already exited", tuple(sent))
    except (PermissionError, psutil.AccessDenied):
        return SignalOutcome(
            "permission_denied",
            f"Permission denied signalling PID {pid}: it belongs to another user (run as root or ask them)",
            tuple(sent),
        )
    except OSError as exc:
        return SignalOutcome("error", f"Could not signal PID {pid}: {exc}", tuple(sent))
    finally:
        if pidfd is not None:
            os.close(pidfd)
