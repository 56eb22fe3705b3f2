"""Ending a Jupyter kernel the way Jupyter does: through its server's kernel API.

A signal makes the server see its kernel die and start it again under the same id ("restarting kernel"), which
the notebook shows as a crash. The server's API shuts a kernel down (``DELETE api/kernels/<id>``: the notebook
shows it shut down) or restarts it (``POST api/kernels/<id>/restart``: memory freed, notebook kept open).

Only a server this user's runtime files name (a loopback one, as jupyter.py finds it) is called, and only with
the token from that file: a server without one is never called, and the token stays out of reprs and messages.
Right before the call the process is checked to be the same one (PID and start time) and to run that kernel
still, and the server to list it still. Afterwards the next snapshots say whether the memory was freed; after
a signal, the server is asked whether it restarted the kernel by itself (same id, a new PID).
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Protocol

from tfgpu_tui.gpu.jupyter import (
    default_runtime_dirs,
    request_json,
    server_alive,
    server_base_url,
    server_files,
)
from tfgpu_tui.gpu.kernel_argv import kernel_connection_file, kernel_from_cmdline
from tfgpu_tui.gpu.kill import KillOutcome, KillResult, identity_refusal
from tfgpu_tui.gpu.model import ProcessIdentity, ProcessRow, Snapshot
from tfgpu_tui.settings import Settings

API_TIMEOUT_SECONDS = (
    60.0  # a shutdown or restart waits for the kernel to end (Jupyter allows it 5 s, then kills)
)
ASK_TIMEOUT_SECONDS = 5.0
EXIT_WAIT_SECONDS = 30.0  # for the old process to go after the server said it was done
RESTART_WATCH_SECONDS = 20.0  # after a signal: Jupyter's restarter looks every 3 s, then starts a new process
CONFIRM_SAMPLES = 3
CONFIRM_DELAY_SECONDS = 0.5
POLL_SECONDS = 0.2


class KernelAction(str, Enum):
    """What a kernel's server can do to it."""

    SHUTDOWN = "shutdown"
    RESTART = "restart"

    @property
    def label(self) -> str:
        return "Shut down kernel" if self is KernelAction.SHUTDOWN else "Restart kernel"


KillChoice = signal.Signals | KernelAction  # what the kill dialog returns


def choice_label(choice: KillChoice) -> str:
    """`SIGTERM`, `Shut down kernel`, ..."""
    return choice.label if isinstance(choice, KernelAction) else choice.name


@dataclass(frozen=True)
class KernelServer:
    """A Jupyter server to call: its base URL (ending in ``/``, no token in it), token and PID."""

    url: str
    token: str = field(repr=False)
    pid: int | None = None


class KillService(Protocol):
    """What ending a process needs from the Sampler."""

    settings: Settings

    def sample(self) -> Snapshot: ...

    def kill_refusal(self, row: ProcessRow) -> str | None: ...

    def kill(
        self, row: ProcessRow, on_progress: Callable[[str], None] | None, first_signal: signal.Signals
    ) -> KillOutcome: ...


def action_refusal(row: ProcessRow, settings: Settings) -> str | None:
    """Why the kernel's server may not be asked to shut down or restart this process's kernel, or None."""
    kernel = row.jupyter
    if kernel is None:
        return f"PID {row.pid} is not a Jupyter kernel"
    if settings.readonly:
        return "Read-only mode (--readonly): kernels are neither shut down nor restarted"
    if settings.least_privilege:
        return "a session with least privilege does not use a Jupyter server's token"
    if not kernel.server_url:
        return "no Jupyter server that lists this kernel could be asked with a token"
    if not row.local or row.create_time is None:
        return f"PID {row.pid} is not a process of this machine or container with a known start time"
    return None


def available_actions(row: ProcessRow, settings: Settings) -> tuple[KernelAction, ...]:
    """The kernel actions the kill dialog offers for this process (none unless its server can be asked)."""
    return () if action_refusal(row, settings) else (KernelAction.SHUTDOWN, KernelAction.RESTART)


def find_server(url: str, extra_dirs: Iterable[Path] = ()) -> KernelServer | None:
    """The live server whose runtime file gives ``url`` and a token; None when there is none."""
    folders = dict.fromkeys([*extra_dirs, *default_runtime_dirs()])
    for server_file in [file for folder in folders for file in server_files(folder)]:
        try:
            info = json.loads(server_file.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict) or not server_alive(info) or server_base_url(info) != url:
            continue
        token = str(info.get("token") or "")
        pid = info.get("pid")
        if token:
            return KernelServer(url, token, pid if isinstance(pid, int) and pid > 0 else None)
    return None


def _cmdline(pid: int) -> list[str] | None:
    import psutil

    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return None


def _runtime_dir_of(pid: int) -> list[Path]:
    """The folder of the kernel's connection file (its server's runtime files are usually there too)."""
    connection = kernel_connection_file(_cmdline(pid) or []) or ""
    return [Path(os.path.dirname(connection))] if os.path.isabs(connection) else []


def _runs_kernel(cmdline: list[str] | None, kernel_id: str) -> bool:
    kernel = kernel_from_cmdline(cmdline) if cmdline else None
    return kernel is not None and kernel.kernel_id == kernel_id


def kernel_processes(kernel_id: str, server_pid: int | None) -> list[ProcessIdentity]:
    """The live processes that run this kernel: the server's descendants, or every process without one."""
    import psutil

    try:
        candidates = psutil.Process(server_pid).children(recursive=True) if server_pid else None
    except psutil.Error:
        candidates = None
    found = []
    for process in candidates if candidates is not None else psutil.process_iter():
        try:
            if process.status() != psutil.STATUS_ZOMBIE and _runs_kernel(process.cmdline(), kernel_id):
                found.append(ProcessIdentity(process.pid, process.create_time()))
        except psutil.Error:
            continue
    return found


def _kernel_url(server: KernelServer, kernel_id: str) -> str:
    from urllib.parse import quote

    return f"{server.url}api/kernels/{quote(kernel_id, safe='')}"


def kernel_state(server: KernelServer, kernel_id: str) -> str | None:
    """The kernel's execution state as its server tells it; None when the server no longer lists it (404).
    Raises OSError or ValueError when the server cannot be asked."""
    try:
        model = request_json(_kernel_url(server, kernel_id), server.token, ASK_TIMEOUT_SECONDS)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    state = model.get("execution_state") if isinstance(model, dict) else None
    return str(state) if state else "unknown"


def _server_error(server: KernelServer, error: Exception) -> str:
    if isinstance(error, urllib.error.HTTPError):
        if error.code in (401, 403):
            return f"the Jupyter server at {server.url} refused the token from its runtime file"
        return f"the Jupyter server at {server.url} answered HTTP {error.code}"
    return f"the Jupyter server at {server.url} did not answer ({getattr(error, 'reason', error)})"


def _recheck(row: ProcessRow, server: KernelServer, kernel_id: str) -> KillOutcome | None:
    """Right before acting: still the same process, still running this kernel, still listed by the server."""
    gone = identity_refusal(row.identity)
    if gone is not None:
        return KillOutcome(row.pid, gone[0], f"{gone[1]}; the kernel's server was not asked")
    if not _runs_kernel(_cmdline(row.pid), kernel_id):
        return KillOutcome(row.pid, KillResult.PID_REUSED, f"PID {row.pid} no longer runs kernel {kernel_id}")
    try:
        listed = kernel_state(server, kernel_id) is not None
    except (OSError, ValueError) as error:
        return KillOutcome(row.pid, KillResult.ERROR, f"Nothing was done: {_server_error(server, error)}")
    if not listed:
        return KillOutcome(
            row.pid,
            KillResult.REFUSED,
            f"Nothing was done: the server at {server.url} no longer lists {kernel_id}",
        )
    return None


def memory_held(snapshot: Snapshot, row: ProcessRow) -> dict[str, float | None]:
    """Device label -> memory NVML lists for the row's process in ``snapshot`` (by NVML's PID or the local
    one); empty once the process is gone from every GPU's processes."""
    return {
        other.device_label: other.gpu_memory_mib
        for other in snapshot.processes
        if other.gpu_index is not None
        and (other.nvml_pid == row.nvml_pid or (row.local and other.local and other.pid == row.pid))
    }


def _wait_gone(identity: ProcessIdentity, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while identity_refusal(identity) is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def _memory_report(service: KillService, row: ProcessRow) -> tuple[str, float | None, bool]:
    """What the next snapshots say about the row's memory: a phrase, MiB freed, and whether it was freed."""
    held: dict[str, float | None] = {}
    for attempt in range(CONFIRM_SAMPLES):
        if attempt:
            time.sleep(CONFIRM_DELAY_SECONDS)
        held = memory_held(service.sample(), row)
        if not held:
            break
    if held:
        known = [mib for mib in held.values() if mib is not None]
        amount = f"{sum(known):.0f} MiB" if known else "memory"
        gpus = ", ".join(f"GPU {label}" for label in sorted(held))
        return f"but {gpus} still lists {amount} for PID {row.pid}", None, False
    freed = row.gpu_memory_mib
    where = "the CPU" if row.gpu_index is None else f"GPU {row.device_label}"
    approx = "≈ " if row.memory_estimated else ""
    amount = f"{approx}{freed:.0f} MiB freed" if freed is not None else "its memory freed"
    return f"{amount} on {where}", freed, True


def _listed_after_shutdown(server: KernelServer, kernel_id: str) -> tuple[str | None, str]:
    """(kernel_after, a phrase): whether the server still lists the kernel after shutting it down."""
    try:
        state = kernel_state(server, kernel_id)
    except (OSError, ValueError):
        return None, "the server did not answer afterwards"
    if state is None:
        return "shut_down", "the server no longer lists it"
    return "still_listed", f"yet the server still lists it ({state})"


def run_kernel_action(
    service: KillService,
    row: ProcessRow,
    action: KernelAction,
    on_progress: Callable[[str], None] | None = None,
    extra_dirs: Iterable[Path] = (),
    restart_watch_seconds: float = RESTART_WATCH_SECONDS,
) -> KillOutcome:
    """Shut down or restart the row's kernel through its server (after the identity re-check), then report
    whether its memory was freed and, for a restart, the kernel's new PID. Never raises for the usual
    failures."""
    progress = on_progress or (lambda _text: None)
    refusal = action_refusal(row, service.settings) or service.kill_refusal(row)
    kernel = row.jupyter
    if refusal or kernel is None or not kernel.server_url:
        return KillOutcome(row.pid, KillResult.REFUSED, f"Nothing was done: {refusal or 'not a kernel'}")
    kernel_id, name = kernel.kernel_id, kernel.notebook_path or kernel.kernel_id
    server = find_server(kernel.server_url, [*extra_dirs, *_runtime_dir_of(row.pid)])
    if server is None:
        return KillOutcome(
            row.pid,
            KillResult.REFUSED,
            f"Nothing was done: no runtime file with a token for the Jupyter server at {kernel.server_url}",
        )
    stop = _recheck(row, server, kernel_id)
    if stop is not None:
        return stop
    progress(f"Asking the Jupyter server at {server.url} to {action.label.lower()} ({name})")
    url = _kernel_url(server, kernel_id) + ("/restart" if action is KernelAction.RESTART else "")
    method = "POST" if action is KernelAction.RESTART else "DELETE"
    try:
        request_json(url, server.token, API_TIMEOUT_SECONDS, method)
    except (OSError, ValueError) as error:
        why = _server_error(server, error)
        return KillOutcome(row.pid, KillResult.ERROR, f"{action.label} of {name} failed: {why}")
    progress(f"The server accepted; waiting for PID {row.pid} to exit")
    if not _wait_gone(row.identity, EXIT_WAIT_SECONDS):
        message = f"The server accepted {action.label.lower()} of {name}, but PID {row.pid} is still running"
        return KillOutcome(row.pid, KillResult.STILL_HELD, message, kernel_after=None)
    memory, freed, was_freed = _memory_report(service, row)
    result = KillResult.FREED if was_freed else KillResult.STILL_HELD
    if action is KernelAction.SHUTDOWN:
        after, lists = _listed_after_shutdown(server, kernel_id)
        message = (
            f"Kernel {name} shut down through its Jupyter server ({lists}); PID {row.pid} ended, {memory}"
        )
        return KillOutcome(row.pid, result, message, freed, kernel_after=after)
    seen, new_pid, _detail = _next_process(row, server, restart_watch_seconds)
    again = f"new PID {new_pid}" if new_pid else "no new process seen" if seen == "listed" else "not listed"
    message = (
        f"Kernel {name} restarted (same id, {again}; the notebook stays open); PID {row.pid} ended, {memory}"
    )
    return KillOutcome(
        row.pid, result, message, freed, kernel_after="restarted" if new_pid else None, new_pid=new_pid
    )


def _next_process(row: ProcessRow, server: KernelServer, timeout: float) -> tuple[str, int | None, str]:
    """Watch the server and the processes for up to ``timeout`` s after the row's kernel process ended:
    ("new", PID, state) once another process runs that kernel id, ("dropped", None, "") when the server
    no longer lists it, ("listed", None, state) at the deadline, ("unknown", None, why) when not answered."""
    kernel_id = row.jupyter.kernel_id if row.jupyter else ""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = kernel_state(server, kernel_id)
        except (OSError, ValueError) as error:
            return "unknown", None, _server_error(server, error)
        if state is None:
            return "dropped", None, ""
        new = [p.pid for p in kernel_processes(kernel_id, server.pid) if p.pid != row.pid]
        if new:
            return "new", new[0], state
        if state == "dead" or time.monotonic() >= deadline:  # dead: the server gave up restarting it
            return "listed", None, state
        time.sleep(POLL_SECONDS)


def watch_server_restart(
    row: ProcessRow, server: KernelServer, timeout: float = RESTART_WATCH_SECONDS
) -> tuple[str, int | None, str]:
    """After a signal ended a kernel: whether its server started it again by itself (same id, a new PID),
    dropped it, or still lists it with no process after ``timeout`` s. Returns (kernel_after, new PID,
    sentence)."""
    kernel_id = row.jupyter.kernel_id if row.jupyter else ""
    seen, new_pid, detail = _next_process(row, server, timeout)
    if seen == "new":
        return (
            "restarted_by_server",
            new_pid,
            f"the Jupyter server restarted kernel {kernel_id} by itself (same id, new PID {new_pid}): the "
            "notebook shows a crash and restart; 'Shut down kernel' ends it for good",
        )
    if seen == "dropped":
        return "dropped", None, f"the Jupyter server no longer lists kernel {kernel_id}"
    if seen == "listed" and detail == "dead":
        return "dead", None, f"the Jupyter server lists kernel {kernel_id} as dead: it did not restart it"
    if seen == "listed":
        return (
            "still_listed",
            None,
            f"the Jupyter server still lists kernel {kernel_id} ({detail}) with no new process after "
            f"{timeout:g} s; it may still restart it",
        )
    return "unknown", None, f"whether its server restarted it is not known: {detail}"


def end_process(
    service: KillService,
    row: ProcessRow,
    choice: KillChoice,
    on_progress: Callable[[str], None] | None = None,
    restart_watch_seconds: float = RESTART_WATCH_SECONDS,
) -> KillOutcome:
    """The kill dialog's choice carried out: a kernel action through the server, or the safe signal path
    (``service.kill``); after a signal that ended a kernel, whether its server restarted it by itself."""
    if isinstance(choice, KernelAction):
        return run_kernel_action(service, row, choice, on_progress, (), restart_watch_seconds)
    url = row.jupyter.server_url if row.jupyter else None
    folders = _runtime_dir_of(row.pid) if url else []  # read before the process goes
    outcome = service.kill(row, on_progress, choice)
    if not url or outcome.result not in (KillResult.FREED, KillResult.STILL_HELD):
        return outcome
    server = find_server(url, folders)
    if server is None:
        return outcome
    if on_progress:
        on_progress(f"Asking the Jupyter server at {url} whether it restarts the kernel by itself")
    after, new_pid, sentence = watch_server_restart(row, server, restart_watch_seconds)
    return replace(outcome, message=f"{outcome.message}; {sentence}", kernel_after=after, new_pid=new_pid)
