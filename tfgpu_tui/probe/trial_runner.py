"""Run the probe: one fresh child process per trial (TensorFlow never frees memory after an OOM), with a
per-trial timeout, cancellation and progress callbacks. The search itself lives in `search`."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from tfgpu_tui.probe import worker
from tfgpu_tui.probe.outcome import OOM, timeout_trial, trial_from_exit, trial_from_report
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.result import ProbeResult
from tfgpu_tui.probe.search import ProbeSearch, SearchStrategy, run_search
from tfgpu_tui.probe.trial import ERROR, Trial
from tfgpu_tui.proc.marks import marked
from tfgpu_tui.proc.spawn import child, communicate_bounded, end_child
from tfgpu_tui.text_clean import clean_json, clean_text

WORKER_SCRIPT = Path(worker.__file__)
POLL_SECONDS = 0.1
# Why a worker child was ended early (WorkerRun.stopped).
CANCELLED, TIMED_OUT, HOST_MEMORY = "cancelled", "timeout", "host_memory"
# Stop a CPU trial before the kernel's OOM killer picks a victim (perhaps not ours).
MIN_HOST_AVAILABLE_FRACTION = 0.03


def child_environment(device: str) -> dict[str, str]:
    """The child's environment: quiet TensorFlow logs; on the CPU hide the GPUs and turn oneDNN on (its
    allocator keeps the statistics the probe reads) unless the user chose otherwise; on a GPU drop
    memory growth, which TensorFlow refuses beside a memory limit. Marked as tfgpu-tui's child (no alerts)."""
    env = marked(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if device == "CPU":
        env["CUDA_VISIBLE_DEVICES"] = ""
        env.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    else:
        env.pop("TF_FORCE_GPU_ALLOW_GROWTH", None)  # cannot be combined with the memory-limited device
    return env


class Cancellable:
    """A runner of children that `cancel()`, from any thread, stops: the running child is ended."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()

    @property
    def cancelled(self) -> bool:
        """Whether `cancel()` was called."""
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """Stop the running child (if any) and start no more."""
        self._cancelled.set()


class TrialRunner(Cancellable):
    """Runs trials of one request, each in a new child; `cancel()` (from any thread) kills the running one."""

    def __init__(self, request: ProbeRequest, worker_script: Path | None = None) -> None:
        super().__init__()
        self.request = request
        self.worker_script = worker_script or WORKER_SCRIPT

    def command(self, batch_size: int) -> list[str]:
        """The child's command line for one batch size."""
        payload = {
            "model": self.request.model,
            "device": self.request.device,
            "budget_mb": self.request.budget_mb if self.request.device != "CPU" else None,
            "batch_size": batch_size,
            "steps": self.request.steps,
            "mixed_precision": self.request.mixed_precision,
        }
        return [self.request.python, str(self.worker_script), json.dumps(payload)]

    def run_trial(self, batch_size: int) -> Trial:
        """Train at one batch size in a fresh child and classify what happened."""
        request = self.request
        try:
            done = run_worker(
                self.command(batch_size),
                child_environment(request.device),
                request.trial_timeout_seconds,
                lambda: self.cancelled,
            )
        except OSError as error:
            return Trial(batch_size, ERROR, message=f"cannot start {request.python}: {error.strerror}")
        if done.stopped == CANCELLED:
            return Trial(batch_size, ERROR, message="cancelled")
        if done.stopped == TIMED_OUT:
            return timeout_trial(batch_size, request.trial_timeout_seconds)
        if done.stopped == HOST_MEMORY:
            return Trial(batch_size, OOM, message="stopped: host memory nearly exhausted")
        if done.report is not None:
            return trial_from_report(batch_size, done.report, request.budget_mb, request.timed)
        return trial_from_exit(batch_size, done.returncode, done.stderr)


@dataclass(frozen=True)
class WorkerRun:
    """What one worker child did: `stopped` says why it was ended early (empty when it ended on its own);
    `report` is its JSON result line, or None; the outputs are cleaned of escape sequences and bounded."""

    stopped: str
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any] | None


def run_worker(
    command: list[str], env: dict[str, str], timeout_seconds: float, cancelled: Callable[[], bool]
) -> WorkerRun:
    """Run one worker child (marked, in its own process group, its output bounded to the last 64 KB of each
    stream) until it ends, ending it on cancellation, after `timeout_seconds` or when host memory runs out.
    Raises OSError when it cannot be started."""
    deadline = time.monotonic() + timeout_seconds
    stopped: list[str] = []

    # on leaving, even by Ctrl+C, a child still running is ended: it must not be left holding memory
    with child(command, env) as process:

        def should_stop() -> bool:
            if cancelled():
                stopped.append(CANCELLED)
            elif time.monotonic() > deadline:
                stopped.append(TIMED_OUT)
            elif host_memory_nearly_gone():
                stopped.append(HOST_MEMORY)
            if stopped:
                end_child(process)
            return bool(stopped)

        stdout, stderr = communicate_bounded(process, poll=POLL_SECONDS, should_stop=should_stop)
        process.wait()
    out = clean_text(stdout.decode("utf-8", "replace"))
    err = clean_text(stderr.decode("utf-8", "replace"))
    report = None if stopped else parse_report(out)
    return WorkerRun(stopped[0] if stopped else "", process.returncode, out, err, report)


def parse_report(stdout: str) -> dict[str, Any] | None:
    """The child's JSON report (the last line that starts with the marker), its strings cleaned, or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(worker.RESULT_MARKER):
            with contextlib.suppress(ValueError):
                report = clean_json(json.loads(line[len(worker.RESULT_MARKER) :]))
                return report if isinstance(report, dict) else None
    return None


def host_memory_nearly_gone() -> bool:
    """Whether the host is about to run out of memory."""
    memory = psutil.virtual_memory()
    return memory.available < MIN_HOST_AVAILABLE_FRACTION * memory.total


def run_probe(
    request: ProbeRequest,
    runner: TrialRunner | None = None,
    strategy: SearchStrategy | None = None,
    on_trial_start: Callable[[int], None] = lambda batch: None,
    on_trial_done: Callable[[Trial], None] = lambda trial: None,
) -> ProbeResult:
    """Search for the largest batch that fits, calling back before and after each trial."""
    runner = runner or TrialRunner(request)
    strategy = strategy or ProbeSearch(request.budget_mb, request.max_batch)
    started = time.monotonic()

    def one_trial(batch_size: int) -> Trial:
        on_trial_start(batch_size)
        trial = runner.run_trial(batch_size)
        if not runner.cancelled:
            on_trial_done(trial)
        return trial

    trials = run_search(strategy, one_trial, should_stop=lambda: runner.cancelled)
    if runner.cancelled and trials and trials[-1].message == "cancelled":
        trials.pop()
    return ProbeResult(request, trials, runner.cancelled, time.monotonic() - started)
