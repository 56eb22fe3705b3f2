"""What the input-pipeline probe measures: the user's ``package.module:function`` (checked here, before any
child starts: it is hostile input), the model, the device and the limits."""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass, replace

from tfgpu_tui.probe.request import DEFAULT_MODEL, DEFAULT_TRIAL_TIMEOUT_SECONDS, ProbeRequestError

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
PIPELINE_SPEC = re.compile(rf"{NAME}(?:\.{NAME})*:{NAME}")
MAX_SPEC_CHARS = 200
SPEC_EXAMPLE = "mypackage.data:make_dataset"
DEFAULT_MEASURE_SECONDS = 3.0  # each of the three measurements, after its warm-up


def check_pipeline_spec(spec: str) -> str:
    """The spec, stripped, when it is ``package.module:function`` made of dotted Python identifiers (ASCII,
    no keywords); raises ProbeRequestError with one line saying what to pass otherwise."""
    text = spec.strip()
    shown = repr(text if len(text) <= 60 else text[:60] + "...")  # repr escapes control characters
    expected = f"give the pipeline as package.module:function (e.g. {SPEC_EXAMPLE})"
    if not text:
        raise ProbeRequestError(f"the pipeline is empty; {expected}")
    if len(text) > MAX_SPEC_CHARS or not PIPELINE_SPEC.fullmatch(text):
        raise ProbeRequestError(f"cannot read the pipeline {shown}; {expected}: dotted Python names only")
    words = re.split(r"[.:]", text)
    reserved = next((word for word in words if keyword.iskeyword(word)), None)
    if reserved is not None:
        raise ProbeRequestError(
            f"cannot read the pipeline {shown}: {reserved!r} is a Python keyword; {expected}"
        )
    return text


@dataclass(frozen=True)
class PipelineRequest:
    """One pipeline probe: the function returning the batched ``tf.data.Dataset``, the model whose training
    steps it must keep up with, where they run, and the limits (`timeout_seconds` for the whole child)."""

    spec: str
    model: str = DEFAULT_MODEL
    device: str = "CPU"
    mixed_precision: bool = False
    python: str = sys.executable
    timeout_seconds: float = DEFAULT_TRIAL_TIMEOUT_SECONDS
    measure_seconds: float = DEFAULT_MEASURE_SECONDS

    def resolved(self) -> PipelineRequest:
        """The request with the spec checked; raises ProbeRequestError."""
        if self.timeout_seconds <= 0 or self.measure_seconds <= 0:
            raise ProbeRequestError("the timeout and the measuring time must be positive")
        return replace(self, spec=check_pipeline_spec(self.spec))

    def payload(self) -> dict[str, object]:
        """What the child reads (its JSON argument)."""
        return {
            "pipeline": self.spec,
            "model": self.model,
            "device": self.device,
            "mixed_precision": self.mixed_precision,
            "measure_seconds": self.measure_seconds,
        }
