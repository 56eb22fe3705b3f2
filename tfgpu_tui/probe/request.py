"""What to probe: the model, the device, the budget and the limits, checked before any child starts."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, replace

from tfgpu_tui.probe.worker import BUILTIN_MODELS

DEFAULT_MODEL = "builtin:cnn"
DEFAULT_STEPS = 3
DEFAULT_MAX_BATCH = 8192
DEFAULT_TRIAL_TIMEOUT_SECONDS = 300.0
MIN_TIMED_STEPS = 2  # the first step traces and compiles: speed needs at least one more
DEVICE_PATTERN = re.compile(r"^(CPU|GPU:\d+)$")
FUNCTION_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class ProbeRequestError(ValueError):
    """A request that cannot run; the message says what to change."""


@dataclass(frozen=True)
class ProbeRequest:
    """One probe: which model on which device, within what memory budget (MB), and how each trial runs."""

    model: str = DEFAULT_MODEL
    device: str = "CPU"
    budget_mb: float = 0.0
    budget_source: str = ""
    steps: int = DEFAULT_STEPS
    max_batch: int = DEFAULT_MAX_BATCH
    mixed_precision: bool = False
    python: str = sys.executable
    trial_timeout_seconds: float = DEFAULT_TRIAL_TIMEOUT_SECONDS

    @property
    def timed(self) -> bool:
        """Whether a trial's speed is measured: only the steps after the first count (it compiles)."""
        return self.steps >= MIN_TIMED_STEPS

    def resolved(self) -> ProbeRequest:
        """The request with the device normalised and a model path made absolute, after checking every
        field; raises ProbeRequestError with a message for the user."""
        device = normalise_device(self.device)
        if self.budget_mb <= 0:
            raise ProbeRequestError(f"the budget must be a positive number of MB, not {self.budget_mb:g}")
        if self.steps < 1:
            raise ProbeRequestError(f"steps per trial must be at least 1, got {self.steps}")
        if self.max_batch < 1:
            raise ProbeRequestError(f"the batch size upper bound must be at least 1, got {self.max_batch}")
        if self.trial_timeout_seconds <= 0:
            raise ProbeRequestError("the per-trial timeout must be positive")
        return replace(self, device=device, model=check_model_spec(self.model))


def steps_per_trial(steps: int) -> str:
    """``1 step per trial``, ``3 steps per trial``."""
    return f"{steps} step per trial" if steps == 1 else f"{steps} steps per trial"


def normalise_device(text: str) -> str:
    """``cpu`` -> ``CPU``, ``gpu:0``/``/GPU:0``/``0`` -> ``GPU:0``; raises for anything else."""
    device = text.strip().upper().removeprefix("/")
    device = device.removeprefix("PHYSICAL_DEVICE:").removeprefix("DEVICE:")
    if device.isdigit():
        device = f"GPU:{device}"
    if device == "GPU":
        device = "GPU:0"
    if not DEVICE_PATTERN.match(device):
        raise ProbeRequestError(f"unknown device {text!r}; use CPU or GPU:N (e.g. GPU:0)")
    return device


def check_model_spec(spec: str) -> str:
    """The model spec, with a file path made absolute; raises when it cannot name a model."""
    spec = spec.strip()
    if spec.startswith("builtin:"):
        name = spec.split(":", 1)[1].lower()
        if name not in BUILTIN_MODELS:
            raise ProbeRequestError(f"unknown built-in model {name!r}; choose from {builtin_model_names()}")
        return f"builtin:{name}"
    if os.path.exists(spec):
        return os.path.abspath(spec)
    if spec.endswith((".keras", ".h5")) or os.sep in spec:
        raise ProbeRequestError(f"model file not found: {spec}")
    if FUNCTION_PATTERN.match(spec):
        return spec
    raise ProbeRequestError(
        f"cannot read the model {spec!r}; pass builtin:NAME ({builtin_model_names()}), "
        "a saved model path (model.keras) or package.module:function returning a compiled model"
    )


def builtin_model_names() -> str:
    """The built-in models, as the user types them."""
    return ", ".join(f"builtin:{name}" for name in BUILTIN_MODELS)
