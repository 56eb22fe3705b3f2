"""The rule-of-thumb estimate against hand-computed numbers, and the optimizer slots the child reports."""

from __future__ import annotations

import pytest

from tfgpu_tui.probe import worker
from tfgpu_tui.probe.outcome import trial_from_report
from tfgpu_tui.probe.request import ProbeRequest
from tfgpu_tui.probe.result import ProbeResult
from tfgpu_tui.probe.rule_of_thumb import MB, ModelFacts, estimate, off_by, ratio_words
from tfgpu_tui.probe.trial import Trial

# builtin:cnn by hand. Parameters: conv 3x3x1x32+32 = 320, conv 3x3x32x64+64 = 18,496,
# dense 1600x128+128 = 204,928, dense 128x10+10 = 1,290; 225,034 in all.
# Layer outputs per sample: 26x26x32 = 21,632, 13x13x32 = 5,408, 11x11x64 = 7,744, 5x5x64 = 1,600,
# flatten 1,600, 128, 10; 38,122 in all.
CNN = ModelFacts(225_034, 225_034, "Adam", 2.0, "variables", "float32", "float32", 38_122)


def test_cnn_in_float32_at_batch_64() -> None:
    guess = estimate(CNN, 64)
    assert guess.weights_mb == pytest.approx(900_136 / MB)  # 225,034 x 4 bytes
    assert guess.gradients_mb == pytest.approx(900_136 / MB)
    assert guess.slots_mb == pytest.approx(1_800_272 / MB)  # Adam: 2 x 4 bytes per parameter
    assert guess.activations_mb == pytest.approx(9_759_232 / MB)  # 38,122 x 64 x 4 bytes
    assert guess.total_mb == pytest.approx(13_359_776 / MB)  # 12.74 MB
    assert guess.breakdown() == "weights 0.9 + gradients 0.9 + optimizer slots 1.7 + activations 9.3 MB"


def test_mixed_precision_halves_activations_only() -> None:
    mixed = ModelFacts(225_034, 225_034, "Adam", 2.0, "variables", "float32", "float16", 38_122)
    guess = estimate(mixed, 64)
    assert guess.weights_mb == pytest.approx(900_136 / MB)  # variables stay float32
    assert guess.activations_mb == pytest.approx(4_879_616 / MB)  # 2 bytes per value
    assert guess.total_mb == pytest.approx(8_480_160 / MB)


def test_non_trainable_weights_have_no_gradients_or_slots() -> None:
    facts = ModelFacts(1_000, 1_500, "SGD", 0, "class", activation_values_per_sample=None)
    guess = estimate(facts, 32)
    assert guess.weights_mb == pytest.approx(6_000 / MB) and guess.gradients_mb == pytest.approx(4_000 / MB)
    assert guess.slots_mb == 0 and guess.activations_mb is None
    assert guess.total_mb == pytest.approx(10_000 / MB) and "activations ? MB" in guess.breakdown()


def test_how_far_the_rule_is_off() -> None:
    assert off_by(25.0, 12.5) == 2.0 and off_by(10.0, 0.0) is None
    assert ratio_words(2.0) == "the measured peak is 2.00x the rule (the rule underestimates)"
    assert ratio_words(0.5).endswith("(the rule overestimates by 2.00x)")


def test_facts_from_the_child_report() -> None:
    report = {
        "params_trainable": 10,
        "params_total": 12,
        "optimizer": None,
        "activation_values_per_sample": 7,
    }
    assert ModelFacts.from_report(report) == ModelFacts(10, 12, activation_values_per_sample=7)
    assert ModelFacts.from_report(None) is None and ModelFacts.from_report({}) is None


def test_result_sets_the_rule_beside_the_peak_of_the_largest_fitting_batch() -> None:
    report = {"status": "ok", "peak_mb": 25.48, "step_seconds": 0.01, "model": CNN.as_dict()}
    fits = trial_from_report(64, report, budget_mb=30.0)
    result = ProbeResult(ProbeRequest(budget_mb=30.0), [Trial(8, "fits", 5.0, 0.01), fits])
    lines = result.rule_of_thumb_lines()
    assert lines[0] == "Model: 225,034 parameters (225,034 trainable); Adam keeps 2 slot(s) per parameter."
    assert lines[1].startswith("Rule of thumb at batch 64: 12.7 MB (weights 0.9 + ")
    assert "measured peak 25.5 MB: the measured peak is 2.00x the rule" in lines[1]
    data = result.as_dict()
    assert data["params"]["params_total"] == 225_034
    rule = data["rule_of_thumb"]
    assert rule["estimate_mb"] == 12.7 and rule["ratio"] == 2.0 and rule["batch_size"] == 64
    assert "optimizer_slots" in rule["formula"]
    assert data["trials"][1]["rule_of_thumb_mb"] == 12.7 and data["trials"][0]["rule_of_thumb_mb"] is None


def named(name: str, **settings: object) -> object:
    """An object of a class called ``name`` with the given attributes, like a Keras optimizer."""
    return type(name, (), settings)()


@pytest.mark.parametrize(
    ("optimizer", "slots"),
    [
        (named("Adam"), 2),
        (named("Adam", amsgrad=True), 3),
        (named("SGD", momentum=0.0), 0),
        (named("SGD", momentum=0.9), 1),
        (named("RMSprop", momentum=0.0, centered=False), 1),
        (named("RMSprop", momentum=0.9, centered=True), 3),
        (named("Adagrad"), 1),
        (named("MyOwnOptimizer"), None),
    ],
)
def test_slots_from_the_optimizer_class(optimizer: object, slots: int | None) -> None:
    assert worker.slots_from_class(optimizer) == slots
