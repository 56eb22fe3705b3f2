"""The rule-of-thumb memory estimate of a training step, to set beside the measured peak.

``parameters x bytes x (weights + gradients + optimizer slots) + activations``, where

- weights: every weight (trainable or not) at the variable dtype's size; mixed_float16 and mixed_bfloat16
  keep float32 variables, so this is 4 bytes under every policy the probe uses;
- gradients: one per trainable parameter, at the variable dtype's size (they are applied in float32);
- optimizer slots: the optimizer's state tensors per trainable parameter (Adam 2, SGD with momentum 1, plain
  SGD 0), counted by the child from the built optimizer's variables, else taken from its class;
- activations: the sum of every layer's output size per sample (what the backward pass keeps) x batch x the
  compute dtype's size (2 bytes under a mixed policy). This is the textbook method from layer output shapes;
  it leaves out the framework's workspace, temporaries and the float16 copies of the weights, which is
  exactly what the ratio to the measured peak shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MB = 2**20
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}
FORMULA = (
    "params_total x variable bytes (weights) + params_trainable x variable bytes x (1 gradient + "
    "optimizer_slots) + activation_values_per_sample x batch x compute bytes"
)


@dataclass(frozen=True)
class ModelFacts:
    """What the child reports about the model it trained."""

    params_trainable: int
    params_total: int
    optimizer: str | None = None
    optimizer_slots: float | None = None
    optimizer_slots_source: str = ""
    variable_dtype: str = "float32"
    compute_dtype: str = "float32"
    activation_values_per_sample: int | None = None

    @classmethod
    def from_report(cls, data: Any) -> ModelFacts | None:
        """The facts from the child's ``model`` object, or None when it has no parameter counts."""
        if not isinstance(data, dict) or not isinstance(data.get("params_trainable"), int):
            return None
        names = cls.__dataclass_fields__
        fields = {key: value for key, value in data.items() if key in names and value is not None}
        return cls(**fields)

    @property
    def variable_bytes(self) -> int:
        """Bytes per weight, gradient and optimizer slot value."""
        return DTYPE_BYTES.get(self.variable_dtype, 4)

    @property
    def compute_bytes(self) -> int:
        """Bytes per activation value."""
        return DTYPE_BYTES.get(self.compute_dtype, 4)

    def describe(self) -> str:
        """'225,034 parameters (225,034 trainable); Adam keeps 2 slots per parameter'."""
        text = f"{self.params_total:,} parameters ({self.params_trainable:,} trainable)"
        if self.optimizer is not None and self.optimizer_slots is not None:
            text += f"; {self.optimizer} keeps {self.optimizer_slots:g} slot(s) per parameter"
        return text

    def as_dict(self) -> dict[str, object]:
        """The facts as JSON-ready data."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class Estimate:
    """The rule of thumb at one batch size, in MB, part by part; ``activations_mb`` is None if unknown."""

    batch_size: int
    weights_mb: float
    gradients_mb: float
    slots_mb: float
    activations_mb: float | None

    @property
    def total_mb(self) -> float:
        """The estimate: the parts added up (activations counted as 0 when unknown)."""
        return self.weights_mb + self.gradients_mb + self.slots_mb + (self.activations_mb or 0.0)

    def breakdown(self) -> str:
        """'weights 0.9 + gradients 0.9 + optimizer slots 1.7 + activations 1.2 MB'."""
        activations = "?" if self.activations_mb is None else f"{self.activations_mb:,.1f}"
        return (
            f"weights {self.weights_mb:,.1f} + gradients {self.gradients_mb:,.1f} + optimizer slots "
            f"{self.slots_mb:,.1f} + activations {activations} MB"
        )


def estimate(facts: ModelFacts, batch_size: int) -> Estimate:
    """The rule-of-thumb memory of one training step at ``batch_size``."""
    per_value = facts.variable_bytes / MB
    gradients = facts.params_trainable * per_value
    activations = None
    if facts.activation_values_per_sample is not None:
        activations = facts.activation_values_per_sample * batch_size * facts.compute_bytes / MB
    return Estimate(
        batch_size,
        weights_mb=facts.params_total * per_value,
        gradients_mb=gradients,
        slots_mb=gradients * (facts.optimizer_slots or 0.0),
        activations_mb=activations,
    )


def off_by(measured_mb: float, estimate_mb: float) -> float | None:
    """Measured peak / rule-of-thumb estimate (above 1: the rule underestimates), None if either is 0."""
    if measured_mb <= 0 or estimate_mb <= 0:
        return None
    return measured_mb / estimate_mb


def ratio_words(ratio: float) -> str:
    """How far the rule is off, in words: 'the measured peak is 1.80x the rule (the rule underestimates)'."""
    if ratio >= 1:
        return f"the measured peak is {ratio:.2f}x the rule (the rule underestimates)"
    return f"the measured peak is {ratio:.2f}x the rule (the rule overestimates by {1 / ratio:.2f}x)"
