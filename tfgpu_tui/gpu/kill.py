"""The safe signal path: re-check a process's identity before every signal; the chosen signal (SIGTERM by
default, or SIGINT, or SIGKILL at once), a grace period, then SIGKILL.

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
from enum import Enum

from tfgpu_tui.gpu.model import ProcessIdentity
from tfgpu_tui.gpu.source import SignalOutcome, SignalResult

CREATE_TIME_TOLERANCE = 0.05  # psutil's create time has 0.01 s precision on Linux
KILL_WAIT_SECONDS = 3.0
POLL_SECONDS = 0.05
# The signals a kill may start with (as nvitop offers): ask to exit, interrupt as Ctrl+C does, or end at once.
KILL_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGKILL, signal.SIGINT)


class KillResult(str, Enum):
    """How a kill ended (a str, so that it reads as its value in JSON and messages)."""

    FREED = "freed"
    STILL_HELD = "still_held"
    PERMISSION_DENIED = "permission_denied"
    ALREADY_GONE = "already_gone"
    REFUSED = "refused"
    PID_REUSED = "pid_reused"
    ERROR = "error"


@dataclass(frozen=True)
class KillOutcome:
    """The end result of a kill, shown to the user; `result` given as a string is checked and made a
    KillResult."""

    pid: int
    result: KillResult
    message: str
    freed_mib: float | None = None
    signals_sent: tuple[str, ...] = ()
    # a Jupyter kernel's fate as its server tells it (gpu/kernel_actions.py): "shut_down", "restarted",
    # "restarted_by_server", "dropped" (no longer listed), "dead", "still_listed", "unknown"; None when no
    # server was asked
    kernel_after: str | None = None
    new_pid: int | None = None  # the kernel's process after a restart (same kernel id)

    def __post_init__(self) -> None:
        object.__setattr__(self, "result", KillResult(self.result))


class _Gone(Exception):
    """The process has already exited (or is a zombie waiting to be reaped)."""


class _Reused(Exception):
    """The PID now belongs to a different process."""


def _check_identity(identity: ProcessIdentity) -> None:
    """Raise _Gone or _Reused unless ``identity`` still names a live process."""
    import psutil  # the kill path alone loads it

    try:
        process = psutil.Process(identity.pid)
        create_time = process.create_time()
        zombie = process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        raise _Gone from None
    except psutil.AccessDenied:
        raise PermissionError(f"PID {identity.pid} may not be inspected") from None
    if identity.create_time is None or abs(create_time - identity.create_time) > CREATE_TIME_TOLERANCE:
        raise _Reused
    if zombie:
        raise _Gone


def identity_refusal(identity: ProcessIdentity) -> tuple[KillResult, str] | None:
    """Why ``identity`` names no live process any more (exited, a zombie, or its PID now another process's),
    or that it may not be inspected; None while it is the same live process."""
    try:
        _check_identity(identity)
    except _Gone:
        return KillResult.ALREADY_GONE, f"PID {identity.pid} had already exited"
    except _Reused:
        return KillResult.PID_REUSED, f"PID {identity.pid} now belongs to a different process"
    except PermissionError as error:
        return KillResult.PERMISSION_DENIED, str(error)
    return None


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


def signal_steps(
    first: signal.Signals, grace_seconds: float, kill_wait_seconds: float = KILL_WAIT_SECONDS
) -> tuple[tuple[signal.Signals, float], ...]:
    """The signals a kill sends in turn, each with how long to wait for the exit: the chosen one, then SIGKILL
    after the grace period (SIGKILL alone when it is the choice)."""
    if first not in KILL_SIGNALS:
        raise ValueError(f"{first!r} is not one of {', '.join(s.name for s in KILL_SIGNALS)}")
    if first == signal.SIGKILL:
        return ((signal.SIGKILL, kill_wait_seconds),)
    return ((first, grace_seconds), (signal.SIGKILL, kill_wait_seconds))


def terminate_process(
    identity: ProcessIdentity,
    grace_seconds: float,
    on_progress: Callable[[str], None] | None = None,
    kill_wait_seconds: float = KILL_WAIT_SECONDS,
    first_signal: signal.Signals = signal.SIGTERM,
    still_valid: Callable[[], str | None] | None = None,
) -> SignalOutcome:
    """``first_signal`` (SIGTERM by default, or SIGINT), wait ``grace_seconds``, SIGKILL if still alive (or
    SIGKILL at once when that is the choice); identity re-checked before each signal, and ``still_valid``
    (which returns why the process is no longer the one to end, or None) right before the first.

    Returns:
        A SignalOutcome (SignalResult: ended, still_alive, permission_denied, already_gone, pid_reused or
        error). It never raises for the usual failures.
    """
    pid = identity.pid
    progress = on_progress or (lambda _text: None)
    sent: list[str] = []
    pidfd: int | None = None
    steps = signal_steps(first_signal, grace_seconds, kill_wait_seconds)
    try:
        _check_identity(identity)
        pidfd = _open_pidfd(pid)
        for signum, wait in steps:
            _check_identity(identity)
            reason = still_valid() if still_valid is not None and not sent else None
            if reason:
                return SignalOutcome(SignalResult.REFUSED, f"Nothing was sent to PID {pid}: {reason}")
            _send(pid, pidfd, signum)
            sent.append(signum.name)
            progress(f"Sent {signum.name} to PID {pid}; waiting up to {wait:g} s for it to exit")
            if _wait_for_exit(identity, pidfd, wait):
                return SignalOutcome(SignalResult.ENDED, f"PID {pid} ended ({signum.name})", tuple(sent))
            if signum != signal.SIGKILL:
                progress(f"PID {pid} is still running after {wait:g} s; sending SIGKILL")
        return SignalOutcome(
            SignalResult.STILL_ALIVE,
            f"PID {pid} is still alive after SIGKILL (probably stuck in the driver, state D); "
            "it may need a reboot to free its GPU memory",
            tuple(sent),
        )
    except _Gone:
        if sent:
            return SignalOutcome(SignalResult.ENDED, f"PID {pid} ended ({sent[-1]})", tuple(sent))
        return SignalOutcome(SignalResult.ALREADY_GONE, f"PID {pid} had already exited", tuple(sent))
    except _Reused:
        if sent:
            return SignalOutcome(SignalResult.ENDED, f"PID {pid} ended ({sent[-1]})", tuple(sent))
        return SignalOutcome(
            SignalResult.PID_REUSED,
            f"PID {pid} now belongs to a different process; nothing was sent",
            tuple(sent),
        )
    except ProcessLookupError:
        return SignalOutcome(SignalResult.ALREADY_GONE, f"PID {pid} had already exited", tuple(sent))
    except PermissionError:
        return SignalOutcome(
            SignalResult.PERMISSION_DENIED,
            f"Permission denied signalling PID {pid}: it belongs to another user (run as root or ask them)",
            tuple(sent),
        )
    except OSError as exc:
        return SignalOutcome(SignalResult.ERROR, f"Could not signal PID {pid}: {exc}", tuple(sent))
    finally:
        if pidfd is not None:
            os.close(pidfd)
