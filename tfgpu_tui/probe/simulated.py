"""The simulated batch probe of ``--demo``: the real search (`trial_runner.run_probe`, `precision`) over
trials that no child runs. A trial's peak memory is a straight line in the batch size for the model (mixed
precision halves the activations), and it runs out of memory where the simulated GPU does: at the free memory
of that GPU in the GPU simulation (gpu/simulated.py), as the Monitor shows it. Every trial says SIMULATED.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.probe.budget import Budget, default_budget
from tfgpu_tui.probe.outcome import trial_from_report
from tfgpu_tui.probe.precision import PrecisionComparison, note_for
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.trial import ERROR, Trial
from tfgpu_tui.probe.trial_runner import TrialRunner

SIMULATED = "simulated"
TRIAL_SECONDS = 0.4  # how long a simulated trial takes, so the table fills visibly
POLL_SECONDS = 0.05
CPU_SLOWDOWN = 25.0  # a training step on the CPU against the simulated GPU


@dataclass(frozen=True)
class ModelCost:
    """Memory and time of a training step: ``fixed_mb + per_sample_mb * batch`` MB (weights, gradients and
    optimizer slots, then activations), ``fixed_ms + per_sample_ms * batch`` ms on the simulated GPU."""

    fixed_mb: float
    per_sample_mb: float
    fixed_ms: float
    per_sample_ms: float


MODEL_COSTS = {
    "builtin:cnn": ModelCost(60.0, 2.5, 2.0, 0.004),
    "builtin:resnet50": ModelCost(420.0, 95.0, 15.0, 1.1),
    "builtin:mobilenetv2": ModelCost(60.0, 40.0, 8.0, 0.45),
    "builtin:efficientnetb0": ModelCost(90.0, 60.0, 10.0, 0.6),
    "builtin:vgg16": ModelCost(2200.0, 60.0, 20.0, 1.5),
}
OTHER_MODEL = ModelCost(200.0, 10.0, 5.0, 0.1)  # a model file or function: not built, so a middling guess
MIXED_ACTIVATIONS = 0.55  # mixed precision keeps activations in float16
MIXED_SPEEDUP = 0.45  # step time with Tensor Cores


class SimulatedGpus:
    """The simulated GPUs' free memory, read from the GPU simulation each time it is asked."""

    def __init__(self, source: SimulatedSource) -> None:
        self.source = source

    def free(self) -> dict[str, float]:
        """``GPU:N`` -> free MB (MiB, as NVML counts) on each simulated GPU."""
        reading = self.source.read()
        return {
            f"GPU:{device.index}": device.memory_total_mib - device.memory_used_mib
            for device in reading.devices
            if device.memory_total_mib is not None and device.memory_used_mib is not None
        }

    def devices(self) -> list[str]:
        """``GPU:0``... for every simulated GPU."""
        return list(self.free())

    def budget(self, device: str) -> Budget:
        """The default budget: the simulated GPU's free memory; the real host's memory on the CPU."""
        if device == "CPU":
            return default_budget(device)
        free = self.free().get(device)
        if free is None:
            return Budget(None, f"the simulated machine has no {device} (it has {', '.join(self.devices())})")
        return Budget(free, f"free memory on {device}, {SIMULATED}")

    def precision_note(self, device: str) -> str:
        """What mixed precision can do on the simulated GPU (its compute capability)."""
        capability = self.source.machine.compute_capability if device != "CPU" else None
        return note_for(device, capability, "")


def simulated_comparison(comparison: PrecisionComparison, gpus: SimulatedGpus) -> PrecisionComparison:
    """The comparison with the note on the simulated GPU instead of whatever NVML says here."""
    return replace(comparison, note=gpus.precision_note(comparison.float32.request.device))


class SimulatedTrialRunner(TrialRunner):
    """A TrialRunner whose trials are computed, not run: no child, no TensorFlow."""

    def __init__(
        self, request: ProbeRequest, gpus: SimulatedGpus, trial_seconds: float | None = None
    ) -> None:
        super().__init__(request)
        self.gpus = gpus
        self.trial_seconds = TRIAL_SECONDS if trial_seconds is None else trial_seconds

    def run_trial(self, batch_size: int) -> Trial:
        """One simulated trial: after `trial_seconds` (cancellable), the model's peak at this batch, out of
        memory above the GPU's free memory or over the budget."""
        deadline = time.monotonic() + self.trial_seconds
        while time.monotonic() < deadline:
            if self.cancelled:
                return Trial(batch_size, ERROR, message="cancelled")
            time.sleep(POLL_SECONDS)
        if self.cancelled:
            return Trial(batch_size, ERROR, message="cancelled")
        request = self.request
        peak, seconds = simulated_step(request, batch_size)
        free = self.gpus.free().get(request.device) if request.device != "CPU" else None
        if free is not None and peak > free:
            report: dict[str, object] = {
                "status": "exception",
                "phase": "train",
                "type": "ResourceExhaustedError",
                "message": f"OOM when allocating a {peak:,.0f} MB step ({SIMULATED}: {free:,.0f} MB free "
                f"on {request.device})",
            }
        else:
            report = {"status": "ok", "peak_mb": peak, "step_seconds": seconds, "peak_source": SIMULATED}
        return trial_from_report(batch_size, report, request.budget_mb)


def simulated_step(request: ProbeRequest, batch_size: int) -> tuple[float, float | None]:
    """(peak MB, seconds per step) of one training step of the request's model at this batch size; no
    seconds with a single step (as the real child: that step is mostly compilation)."""
    cost = MODEL_COSTS.get(request.model, OTHER_MODEL)
    per_sample_mb = cost.per_sample_mb * (MIXED_ACTIVATIONS if request.mixed_precision else 1.0)
    milliseconds = cost.fixed_ms + cost.per_sample_ms * batch_size
    if request.device == "CPU":
        milliseconds *= CPU_SLOWDOWN
    elif request.mixed_precision:
        milliseconds *= MIXED_SPEEDUP
    seconds = milliseconds / 1000 if request.steps > 1 else None
    return cost.fixed_mb + per_sample_mb * batch_size, seconds
