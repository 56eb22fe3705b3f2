"""The pipeline probe's pure parts, without TensorFlow: the spec check, the verdict, the GPU's wait share, the
order of the fixes, and how the child's report or its end becomes one line."""

from __future__ import annotations

import pytest

from tests.helpers.pipeline_report import HEALTHY_REPORT
from tfgpu_tui.probe.pipeline_outcome import (
    error_from_exit,
    error_from_report,
    error_from_timeout,
    last_phase,
    measurement_from_report,
    one_line,
)
from tfgpu_tui.probe.pipeline_request import PipelineRequest, check_pipeline_spec
from tfgpu_tui.probe.pipeline_result import PipelineMeasurement, PipelineResult
from tfgpu_tui.probe.pipeline_verdict import Rates, fixes, input_bound, verdict_line, wait_percent
from tfgpu_tui.probe.pipeline_worker import PHASE_MARKER
from tfgpu_tui.probe.request import ProbeRequestError

REQUEST = PipelineRequest("mypipe.data:make", timeout_seconds=20)


@pytest.mark.parametrize("spec", ["data:make", "my_pkg.sub.data:make_dataset", "  _a._b:_c  ", "A1.b2:C3"])
def test_dotted_specs_pass(spec: str) -> None:
    assert check_pipeline_spec(spec) == spec.strip()


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "data",
        "data:",
        ":make",
        "data:make:again",
        "data.make",
        "../evil:make",
        "/tmp/evil.py:make",
        "data:make()",
        "os;rm -rf ~:x",
        "__import__('os').system('id'):x",
        "data..x:make",
        "1data:make",
        "data:make.attr",
        "dätä:make",
        "data:make\x1b]0;owned\x07",
        "import:make",
        "data.class:make",
        "a" * 300 + ":make",
    ],
)
def test_malformed_specs_are_refused_in_one_line(spec: str) -> None:
    with pytest.raises(ProbeRequestError) as raised:
        check_pipeline_spec(spec)
    message = str(raised.value)
    assert "package.module:function" in message and "\n" not in message
    assert "\x1b" not in message and len(message) < 300


def test_the_issues_example_reads_as_the_issue_says() -> None:
    rates = Rates(pipeline=1240, with_prefetch=1260, model=4100, batch_size=256)
    assert round(wait_percent(1240, 4100)) == 70 and input_bound(1240, 4100)
    assert verdict_line(rates, "GPU:0") == (
        "Your pipeline delivers 1,240 samples/s; the model trains 4,100 samples/s at batch 256, so the GPU "
        "waits about 70 % of the time for input."
    )


@pytest.mark.parametrize(
    ("pipeline", "model", "wait", "bound"),
    [
        (5000, 1000, 0.0, False),  # keeps up
        (1000, 1000, 0.0, False),
        (950, 1000, 5.0, False),  # within run-to-run noise: not input-bound
        (880, 1000, 12.0, True),
        (0, 1000, 100.0, True),
        (100, 0, 0.0, False),  # no model rate: nothing to wait for
    ],
)
def test_wait_and_input_bound(pipeline: float, model: float, wait: float, bound: bool) -> None:
    assert wait_percent(pipeline, model) == pytest.approx(wait)
    assert input_bound(pipeline, model) is bound


def test_not_input_bound_needs_no_fix_and_says_so() -> None:
    rates = Rates(pipeline=50_000, with_prefetch=52_000, model=2_000, batch_size=8)
    assert fixes(rates, ends_with_prefetch=False, cpu_count=2) == []
    line = verdict_line(rates, "CPU")
    assert "the input keeps up (25.0x); not input-bound" in line and "waits" not in line


def test_prefetch_that_helped_comes_first_and_is_measured() -> None:
    rates = Rates(pipeline=100, with_prefetch=160, model=1000, batch_size=8)
    found = fixes(rates, ends_with_prefetch=False, cpu_count=4)
    assert [fix.measured for fix in found] == [True, False, False, False]
    assert found[0].text.startswith("end the pipeline with .prefetch(tf.data.AUTOTUNE)")
    assert "160 samples/s with it (+60 %)" in found[0].text
    assert "num_parallel_calls=tf.data.AUTOTUNE" in found[1].text
    assert "cache()" in found[2].text and "this machine has 4" in found[3].text
    assert found[0].line().endswith("(measured)") and found[1].line().endswith("(advised, not measured)")


def test_prefetch_that_did_not_help_alone_is_advised_last_unless_already_there() -> None:
    rates = Rates(pipeline=100, with_prefetch=103, model=1000, batch_size=8)
    found = fixes(rates, ends_with_prefetch=False, cpu_count=None)
    assert not any(fix.measured for fix in found)
    assert "num_parallel_calls" in found[0].text and "overlaps the training steps" in found[-1].text
    assert "+3 %" in found[-1].text and "this machine has" not in found[2].text
    assert not any("prefetch" in fix.text for fix in fixes(rates, ends_with_prefetch=True, cpu_count=2))


def test_result_json_has_the_five_keys() -> None:
    rates = Rates(pipeline=100, with_prefetch=100, model=1000, batch_size=8)
    data = PipelineResult(REQUEST, PipelineMeasurement(rates, False, 2)).as_dict()
    assert data["samples_per_second"] == 100 and data["with_prefetch_samples_per_second"] == 100
    assert data["model_samples_per_second"] == 1000 and data["input_bound"] is True
    assert data["gpu_wait_percent"] == 90 and data["error"] is None and len(data["fixes"]) == 4
    failed = PipelineResult(REQUEST, error="boom").as_dict()
    assert (
        failed["samples_per_second"] is None and failed["input_bound"] is None and failed["error"] == "boom"
    )
    assert PipelineResult(REQUEST, error="boom").summary_lines() == ["Pipeline probe stopped: boom"]


def test_measurement_from_a_report() -> None:
    report = {  # prefetch doubles the pipeline's rate; the model's steps are twice as fast as the healthy's
        **HEALTHY_REPORT,
        "prefetch": {"samples": 400, "seconds": 2.0},
        "model": {"samples": 8, "seconds": 0.004},
        "ends_with_prefetch": True,
    }
    found = measurement_from_report(report)
    assert found.rates == Rates(100.0, 200.0, 2000.0, 8) and found.ends_with_prefetch and found.cpu_count == 2
    with pytest.raises((KeyError, TypeError, ValueError)):
        measurement_from_report({**report, "model": {"samples": 8, "seconds": 0}})


def test_tensorflows_wrapping_is_trimmed_to_one_line() -> None:
    message = (
        "{{function_node __wrapped__IteratorGetNext_output_types_2_device_/job:localhost/replica:0/task:0/"
        "device:CPU:0}} ValueError: the image file cat.jpg is truncated\nTraceback (most recent call last):\n"
        '  File "x.py", line 3\n [Op:IteratorGetNext] name: '
    )
    assert one_line(message) == "ValueError: the image file cat.jpg is truncated"
    assert one_line("x" * 1000).endswith("...") and len(one_line("x" * 1000)) == 300
    keras = (
        'Exception encountered when calling Sequential.call().\n\nInput 0 of layer "conv2d" is incompatible '
        "with the layer: expected min_ndim=4, found ndim=2.\n\nArguments received by Sequential.call():\n"
    )
    assert one_line(keras).startswith('Input 0 of layer "conv2d" is incompatible')
    assert (
        one_line("\x1b[1mInvalid input shape\x1b[0m (8, 32)\x1b]0;owned\x07") == "Invalid input shape (8, 32)"
    )


def test_report_errors_name_the_phase_and_the_users_line() -> None:
    raised = {"status": "exception", "phase": "call", "type": "RuntimeError", "message": "no data\nmore",
              "where": "mypipe.py:7"}  # fmt: skip
    assert error_from_report(raised, REQUEST) == (
        "RuntimeError while calling mypipe.data:make at mypipe.py:7: no data"
    )
    own = {"status": "exception", "phase": "call", "type": "ProbeInputError",
           "message": "mypipe.data:make returned list, not a tf.data.Dataset"}  # fmt: skip
    assert error_from_report(own, REQUEST) == (
        "mypipe.data:make returned list, not a tf.data.Dataset (while calling mypipe.data:make)"
    )
    missing = {"status": "exception", "phase": "import", "type": "ModuleNotFoundError",
               "message": "No module named 'mypipe'"}  # fmt: skip
    assert error_from_report(missing, REQUEST) == (
        "ModuleNotFoundError while importing mypipe.data: No module named 'mypipe'"
    )


def test_a_child_stopped_at_the_timeout_says_where_it_was() -> None:
    stdout = f"noise\n{PHASE_MARKER}tensorflow\nuser print\n{PHASE_MARKER}first_batch\nmore noise\n"
    assert last_phase(stdout) == "first_batch" and last_phase("nothing") == ""
    assert error_from_timeout("first_batch", REQUEST) == (
        "stopped after 20 s (--timeout): mypipe.data:make yielded no batch in that time"
    )
    assert (
        error_from_timeout("tensorflow", REQUEST)
        == "stopped after 20 s (--timeout) while importing TensorFlow"
    )
    crashed = error_from_exit(-11, "loading\nSegmentation fault\n\n", "train", REQUEST)
    assert crashed == (
        "the probe's child process was killed by SIGSEGV while training builtin:cnn on the pipeline's "
        "batches: Segmentation fault"
    )
