"""tfgpu-tui's own child processes (the environment inspection, the batch probe's trials, the first reading of
the GPUs): how they are started, how much of their output is kept, and how they are ended.

- Started marked as ours (marks.py: no instance of the dashboard alerts on them), with stdin from
  /dev/null, both outputs piped, each in a session of its own, so that ending one ends whatever it started
  (TensorFlow's helpers) with its process group.
- Bounded: the last `limit` bytes of each stream (optionally the first bytes of stderr too) and a count of
  what was left out, so a child printing gigabytes costs kilobytes.
- Ended with SIGKILL to its group, only while it has not been reaped (its PID is still ours then).
- `run_child` children are tracked, and `stop_all()` ends them (quitting must not wait for a TensorFlow
  import that may take minutes).
- `fork_call` runs a function in a forked copy of this process, on another core, and returns its result
  through a pipe; a child that is late is ended with SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Generic, TypeVar

from tfgpu_tui.proc.marks import marked

TAIL_BYTES = 64 * 1024
READ_CHUNK = 64 * 1024

_running: set[subprocess.Popen[bytes]] = set()
_lock = threading.Lock()


@dataclass
class BoundedCapture:
    """What one stream held: `head` (up to `head_limit` bytes), `tail` (the last `limit` bytes after the
    head) and `dropped`, the number of bytes between them that were not kept."""

    limit: int = TAIL_BYTES
    head_limit: int = 0
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def feed(self, data: bytes) -> None:
        """Keep what fits; count the rest."""
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        excess = len(self.tail) - self.limit
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def data(self) -> bytes:
        """The kept bytes, with a line saying how many were left out where they were."""
        if not self.dropped:
            return bytes(self.head + self.tail)
        note = f"\n[... {self.dropped:,} bytes of output left out ...]\n".encode()
        return bytes(self.head) + note + bytes(self.tail)


def _drain(stream: IO[bytes], capture: BoundedCapture) -> None:
    try:
        while chunk := stream.read1(READ_CHUNK) if hasattr(stream, "read1") else stream.read(READ_CHUNK):
            capture.feed(chunk)
    except (OSError, ValueError):
        pass


def communicate_bounded(
    process: subprocess.Popen[bytes],
    timeout: float | None = None,
    limit: int = TAIL_BYTES,
    stderr_head: int = 0,
    poll: float = 0.05,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[bytes, bytes]:
    """Wait for `process` keeping at most `limit` bytes of each stream (plus the first `stderr_head` bytes
    of stderr): ``Popen.communicate(timeout=...)`` with bounded output. Raises subprocess.TimeoutExpired
    (holding what was read) after `timeout` seconds, or returns early once `should_stop()` is true (the
    caller ends the child)."""
    out, err = BoundedCapture(limit), BoundedCapture(limit, stderr_head)
    threads = [
        threading.Thread(target=_drain, args=(stream, capture), daemon=True)
        for stream, capture in ((process.stdout, out), (process.stderr, err))
        if stream is not None
    ]
    for thread in threads:
        thread.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    while process.poll() is None:
        if deadline is not None and time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(process.args, timeout or 0, out.data(), err.data())
        if should_stop is not None and should_stop():
            break
        time.sleep(poll)
    for thread in threads:
        thread.join(timeout=5)
    return out.data(), err.data()


def end_child(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child and its process group (everything it started), unless it has been reaped."""
    if process.returncode is not None:  # reaped: its PID may be another process's by now
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # it leads its own group: start_new_session=True
    with contextlib.suppress(ProcessLookupError):
        process.kill()


@contextlib.contextmanager
def child(args: list[str], env: Mapping[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """Start `args` as one of our children (see the module's docstring); on leaving, a child still running
    is ended, and it is always reaped. Raises OSError when the program cannot be started."""
    process = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=marked(os.environ if env is None else env),
        start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            end_child(process)
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def run_child(
    args: list[str], timeout: float, env: Mapping[str, str] | None = None, text: bool = False
) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(args, capture_output=True, timeout=timeout)``, but with bounded output (the
    last 64 KB of each stream, and the first 64 KB of stderr, where library loading is logged) and stoppable
    by `stop_all()`.

    Raises:
        OSError: the program could not be started (FileNotFoundError, PermissionError ...).
        subprocess.TimeoutExpired: it ran past `timeout` (it has been ended; ``stderr`` holds its output).
    """
    with child(args, env) as process:
        with _lock:
            _running.add(process)
        try:
            stdout, stderr = communicate_bounded(process, timeout, stderr_head=TAIL_BYTES)
        except subprocess.TimeoutExpired as expired:
            end_child(process)
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
    """End every `run_child` child still running; returns how many there were."""
    with _lock:
        processes = list(_running)
    for process in processes:
        end_child(process)
    return len(processes)


T = TypeVar("T")


class ForkedCall(Generic[T]):
    """A function running in a forked copy of this process (see `fork_call`); `result` collects its value."""

    def __init__(self, pid: int, pipe: int) -> None:
        self.pid = pid
        self._pipe = pipe  # the read end; the child writes its pickled result to the other

    def result(self, timeout: float) -> T | None:
        """The function's return value, waiting up to `timeout` seconds for it. None when the child failed
        or was late; a late child is ended with SIGKILL. Call once."""
        data = self._read_all(timeout)
        if data is None:
            self._end()
            return None
        os.waitpid(self.pid, 0)  # it has closed the pipe, and os._exit follows
        try:
            return pickle.loads(data) if data else None
        except Exception:  # noqa: BLE001 - a child that died halfway through writing
            return None

    def _read_all(self, timeout: float) -> bytes | None:
        """Everything the child writes until it closes the pipe; None if that takes over `timeout` s."""
        deadline = time.monotonic() + timeout
        chunks: list[bytes] = []
        try:
            while (remaining := deadline - time.monotonic()) > 0:
                if not select.select([self._pipe], [], [], remaining)[0]:
                    return None
                chunk = os.read(self._pipe, READ_CHUNK)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
            return None
        except OSError:
            return None
        finally:
            os.close(self._pipe)

    def _end(self) -> None:
        """SIGKILL the late child (not reaped yet, so the PID is still ours) and reap it in the background:
        one stuck in the driver ends only when the driver lets it."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        threading.Thread(target=_reap, args=(self.pid,), name="tfgpu-reap", daemon=True).start()


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def fork_call(function: Callable[[], T]) -> ForkedCall[T] | None:
    """Start `function()` in a forked copy of this process and return at once; None where there is no
    fork, or where this process already runs other threads (a fork copies only the calling thread, so a
    lock another thread held would stay locked in the child). The child's standard streams go to
    /dev/null; it writes the pickled value to a pipe and ends with `os._exit`, whatever happens."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return None
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: never returns into the caller's code
        try:
            os.close(read_end)
            null = os.open(os.devnull, os.O_RDWR)
            for stream in (0, 1, 2):
                os.dup2(null, stream)
            data = pickle.dumps(function())
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(data)
        finally:
            os._exit(0)
    os.close(write_end)
    return ForkedCall(pid, read_end)
