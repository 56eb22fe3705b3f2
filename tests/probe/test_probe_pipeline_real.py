"""The pipeline probe with real TensorFlow, on pipelines of known speed written as modules in a temporary
directory that is the current directory (where users put theirs: found as `python -m` finds modules)."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tfgpu_tui.cli import main
from tfgpu_tui.probe.pipeline_request import PipelineRequest
from tfgpu_tui.probe.pipeline_runner import PipelineRunner

pytestmark = pytest.mark.tf

SLEEP_SECONDS = 0.01  # per element
BATCH = 8
TRUE_RATE = BATCH / (BATCH * SLEEP_SECONDS)  # 100 samples/s at most: the sleep alone
PIPELINES = textwrap.dedent(
    f"""
    import time

    import numpy as np
    import tensorflow as tf

    IMAGES = np.zeros((64, 28, 28, 1), np.float32)
    LABELS = np.arange(64, dtype=np.int32) % 10


    def _slow(image, label):
        time.sleep({SLEEP_SECONDS})
        return image, label


    def sleepy():
        data = tf.data.Dataset.from_tensor_slices((IMAGES, LABELS)).repeat()
        data = data.map(lambda x, y: tf.py_function(_slow, [x, y], [tf.float32, tf.int32]))
        data = data.map(lambda x, y: (tf.ensure_shape(x, (28, 28, 1)), tf.ensure_shape(y, ())))
        return data.batch({BATCH})


    def fast():
        return tf.data.Dataset.from_tensor_slices((IMAGES, LABELS)).repeat().batch({BATCH})


    def wrong_shape():
        vectors = np.zeros((64, 32), np.float32)
        return tf.data.Dataset.from_tensor_slices((vectors, LABELS)).repeat().batch({BATCH})


    def broken():
        raise RuntimeError("the folder /data/train is missing")


    def not_a_dataset():
        return [IMAGES, LABELS]


    def never_yields():
        def forever():
            while True:
                time.sleep(1)
            yield IMAGES[:{BATCH}], LABELS[:{BATCH}]

        signature = (tf.TensorSpec((None, 28, 28, 1), tf.float32), tf.TensorSpec((None,), tf.int32))
        return tf.data.Dataset.from_generator(forever, output_signature=signature)
    """
)


@pytest.fixture
def pipelines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`known_speed.py` in a temporary directory that is the current directory."""
    (tmp_path / "known_speed.py").write_text(PIPELINES)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def probe_json(capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, dict, str]:
    """`tfgpu-tui probe --json` with this interpreter; (exit code, JSON, stderr)."""
    code = main(["probe", "--device", "CPU", "--python", sys.executable, "--json", *options])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def test_a_sleepy_map_is_input_bound_at_about_its_true_rate(
    pipelines: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, data, err = probe_json(capsys, "--pipeline", "known_speed:sleepy", "--timeout", "240")
    pipeline = data["pipeline"]
    assert code == 0, err
    assert pipeline["batch_size"] == BATCH and pipeline["input_bound"] is True
    # the sleep bounds it at 100 samples/s; py_function and a loaded 2-core machine take some of that
    assert 0.35 * TRUE_RATE <= pipeline["samples_per_second"] <= 1.05 * TRUE_RATE, pipeline
    assert pipeline["with_prefetch_samples_per_second"] <= 1.5 * TRUE_RATE  # prefetch cannot beat the sleep
    assert pipeline["model_samples_per_second"] > 2 * pipeline["samples_per_second"]
    assert pipeline["gpu_wait_percent"] >= 50
    assert (
        "num_parallel_calls=tf.data.AUTOTUNE" in pipeline["fixes"][0]["fix"]
        or pipeline["fixes"][0]["measured"]
    )


def test_an_in_memory_pipeline_is_not_input_bound(pipelines: Path) -> None:
    request = PipelineRequest("known_speed:fast", device="CPU", timeout_seconds=240, measure_seconds=1.5)
    result = PipelineRunner(request).run()
    assert result.measurement is not None, result.error
    rates = result.measurement.rates
    assert result.input_bound is False and result.gpu_wait_percent == 0 and result.fixes() == []
    assert rates.pipeline > rates.model > 0 and rates.batch_size == BATCH
    assert "not input-bound" in result.summary_lines()[0]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("known_speed:broken", "RuntimeError while calling known_speed:broken at known_speed.py:"),
        ("known_speed:not_a_dataset", "known_speed:not_a_dataset returned list, not a tf.data.Dataset"),
        ("known_speed:missing", "known_speed has no function 'missing'"),
        ("no_such_module:make", "ModuleNotFoundError while importing no_such_module"),
        (
            "known_speed:wrong_shape",
            "the model cannot train on the pipeline's batches (float32 (8, 32), int32",
        ),
    ],
)
def test_a_pipeline_that_cannot_be_measured_gets_one_line_and_exit_2(
    pipelines: Path, capsys: pytest.CaptureFixture[str], spec: str, expected: str
) -> None:
    code = main(
        ["probe", "--device", "CPU", "--python", sys.executable, "--pipeline", spec, "--timeout", "240"]
    )
    out = capsys.readouterr()
    assert code == 2
    lines = out.err.strip().splitlines()
    assert lines[-1].startswith("tfgpu-tui probe: ") and expected in lines[-1], out.err
    assert "Traceback" not in out.err + out.out
    assert f"Pipeline probe stopped: {lines[-1].removeprefix('tfgpu-tui probe: ')}" in out.out


def test_a_pipeline_that_never_yields_ends_at_the_timeout(
    pipelines: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    timeout = 45  # room for TensorFlow's import on a loaded machine before the pipeline is reached
    started = time.monotonic()
    code, data, err = probe_json(capsys, "--pipeline", "known_speed:never_yields", "--timeout", str(timeout))
    elapsed = time.monotonic() - started
    assert code == 2 and data["pipeline"]["samples_per_second"] is None
    assert err.strip().splitlines()[-1] == (
        f"tfgpu-tui probe: stopped after {timeout} s (--timeout): known_speed:never_yields yielded no batch "
        "in that time"
    )
    assert timeout <= elapsed < timeout + 60  # ended by the timeout, not waited out
