"""Keras 2 / Keras 3 progress-line parsing, on real and documented formats."""

from __future__ import annotations

import math

import pytest

from tfgpu_tui.training.keras_progress import (
    EpochStart,
    clean_segment,
    parse_duration,
    parse_epoch_header,
    parse_json_record,
    parse_progress,
    parse_time_per,
)

K3_RUNNING = (
    "\x1b[1m 1/60\x1b[0m \x1b[37m━━━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m56s\x1b[0m 962ms/step - "
    "accuracy: 0.3750 - loss: 1.1520"
)
K3_FINAL = (
    "\x1b[1m60/60\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m1s\x1b[0m 6ms/step - "
    "accuracy: 0.5271 - loss: 0.7530 - val_accuracy: 0.4333 - val_loss: 0.7534"
)


def parse(text: str, line_ends: bool = False):
    return parse_progress(clean_segment(text), line_ends)


def test_keras3_running_update_has_eta_and_step_time():
    progress = parse(K3_RUNNING)
    assert (progress.step, progress.total_steps, progress.final) == (1, 60, False)
    assert progress.eta_seconds == 56 and progress.elapsed_seconds is None
    assert progress.step_seconds == pytest.approx(0.962)
    assert progress.metrics == {"accuracy": 0.375, "loss": 1.152}


def test_keras3_final_update_carries_val_metrics_and_elapsed_time():
    progress = parse(K3_FINAL, line_ends=True)
    assert progress.final and progress.elapsed_seconds == 1 and progress.eta_seconds is None
    assert progress.metrics["val_loss"] == 0.7534


def test_keras3_last_step_without_line_end_is_not_final():
    progress = parse("60/60 ━━━━━━━━━━━━━━━━━━━━ 0s 2ms/step - loss: 0.5")
    assert not progress.final and progress.eta_seconds == 0


def test_keras3_equals_bar_fallback_and_verbose2():
    assert parse("12/60 ====                 4s 20ms/step - loss: 0.5").step == 12
    progress = parse("60/60 - 1s - 17ms/step - accuracy: 0.5271 - loss: 0.7530 - val_loss: 0.7534")
    assert progress.final and progress.elapsed_seconds == 1 and progress.step_seconds == pytest.approx(0.017)


def test_keras2_running_and_final_updates():
    running = parse(" 4/47 [=>............................] - ETA: 1:02 - loss: 2.3182 - accuracy: 0.0938")
    assert not running.final and running.eta_seconds == 62
    final = parse(
        "47/47 [==============================] - 5s 10ms/step - loss: nan - accuracy: 1.2345e-04 "
        "- val_loss: inf",
        line_ends=True,
    )
    assert final.final and final.elapsed_seconds == 5 and final.step_seconds == pytest.approx(0.01)
    assert math.isnan(final.metrics["loss"]) and math.isinf(final.metrics["val_loss"])
    assert final.metrics["accuracy"] == pytest.approx(1.2345e-4)


def test_keras2_verbose2_with_epoch_and_step_suffix_and_negative_sci_value():
    progress = parse("47/47 - 2s - loss: -1.2345e+00 - val_accuracy: 0.1000 - 2s/epoch - 35ms/step")
    assert progress.final and progress.elapsed_seconds == 2 and progress.step_seconds == pytest.approx(0.035)
    assert progress.metrics == {"loss": -1.2345, "val_accuracy": 0.1}


def test_unknown_target_and_custom_metric_names():
    progress = parse("     12/Unknown - 5s 417ms/step - loss: 0.3000 - top_5_acc_2: 0.9000", line_ends=True)
    assert progress.total_steps is None and progress.final
    assert progress.metrics["top_5_acc_2"] == 0.9


def test_stderr_glued_after_a_value_is_split_off():
    text = (
        "469/469 [====] - ETA: 0s - loss: 0.3125 - categorical_accuracy: 0.3125"
        "2020-04-23 23:55:50: I tensorflow/x"
    )
    progress = parse(text, line_ends=True)
    assert progress.metrics["categorical_accuracy"] == 0.3125
    assert progress.trailing.startswith("2020-04-23") and not progress.final


@pytest.mark.parametrize("text", ["Epoch 1/3", "hello 1/2 world", "12/12 is fine", "", "3083s - loss: 0.3"])
def test_non_progress_text_is_rejected(text):
    assert parse(text) is None


def test_durations_and_time_units():
    assert parse_duration("45s") == 45
    assert parse_duration("1:02") == 62
    assert parse_duration("1:02:03") == 3723
    assert parse_duration("soon") is None
    assert parse_time_per("83us/sample") == (pytest.approx(83e-6), "sample")
    assert parse_time_per("2s/epoch") == (2.0, "epoch")


def test_epoch_header_and_json_record():
    assert parse_epoch_header("Epoch 3/10") == EpochStart(3, 10)
    assert parse_epoch_header("Epoch three") is None
    record = parse_json_record('{"event": "epoch_end", "epoch": 1, "logs": {"loss": 0.5}}')
    assert record.event == "epoch_end" and record.data["logs"]["loss"] == 0.5
    assert parse_json_record('{"event": "lunch"}') is None
    assert parse_json_record("{not json") is None
