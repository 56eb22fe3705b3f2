"""Run the pipeline probe: one child (the probe's worker machinery: marked, its own process group, bounded
output, ended at the timeout or on cancellation) that times the user's pipeline and the model."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tfgpu_tui.probe import pipeline_worker
from tfgpu_tui.probe.pipeline_outcome import (
    error_from_exit,
    error_from_report,
    error_from_timeout,
    last_phase,
    measurement_from_report,
)
from tfgpu_tui.probe.pipeline_request import PipelineRequest
from tfgpu_tui.probe.pipeline_result import PipelineResult
from tfgpu_tui.probe.trial_runner import (
    CANCELLED,
    HOST_MEMORY,
    TIMED_OUT,
    Cancellable,
    WorkerRun,
    child_environment,
    run_worker,
)

PIPELINE_SCRIPT = Path(pipeline_worker.__file__)


def pipeline_environment(device: str) -> dict[str, str]:
    """The trials' environment; on a GPU with memory growth on, since no budget caps the device here."""
    env = child_environment(device)
    if device != "CPU":
        env.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    return env


class PipelineRunner(Cancellable):
    """Runs one pipeline probe in a child; `cancel()` (from any thread) ends it."""

    def __init__(self, request: PipelineRequest, script: Path | None = None) -> None:
        super().__init__()
        self.request = request
        self.script = script or PIPELINE_SCRIPT

    def command(self) -> list[str]:
        """The child's command line."""
        return [self.request.python, str(self.script), json.dumps(self.request.payload())]

    def run(self) -> PipelineResult:
        """Measure, and say what was found or, in one line, why nothing was."""
        started = time.monotonic()
        request = self.request
        try:
            done = run_worker(
                self.command(),
                pipeline_environment(request.device),
                request.timeout_seconds,
                lambda: self.cancelled,
            )
        except OSError as error:
            return PipelineResult(request, error=f"cannot start {request.python}: {error.strerror}")
        result = result_from_run(request, done)
        result.wall_seconds = time.monotonic() - started
        return result


def result_from_run(request: PipelineRequest, done: WorkerRun) -> PipelineResult:
    """The result of a finished child: its measurement, or why there is none."""
    phase = last_phase(done.stdout)
    if done.stopped == CANCELLED:
        return PipelineResult(request, error="cancelled", cancelled=True)
    if done.stopped == TIMED_OUT:
        return PipelineResult(request, error=error_from_timeout(phase, request))
    if done.stopped == HOST_MEMORY:
        return PipelineResult(request, error="stopped: host memory nearly exhausted")
    report = done.report
    if report is None:
        return PipelineResult(request, error=error_from_exit(done.returncode, done.stderr, phase, request))
    if report.get("status") != "ok":
        return PipelineResult(request, error=error_from_report(report, request))
    try:
        return PipelineResult(request, measurement_from_report(report))
    except (KeyError, TypeError, ValueError) as error:
        return PipelineResult(request, error=f"the probe's child sent a malformed report ({error})")
