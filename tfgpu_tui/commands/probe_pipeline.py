"""`tfgpu-tui probe --pipeline package.module:function`: time the user's tf.data pipeline against the model's
training steps, headless, as text or JSON (the ``pipeline`` object)."""

from __future__ import annotations

import argparse
import json
import sys

from tfgpu_tui.env.targets import Target
from tfgpu_tui.exit_status import EXIT_USAGE
from tfgpu_tui.probe.interpreter import interpreter_problem
from tfgpu_tui.probe.pipeline_request import PipelineRequest
from tfgpu_tui.probe.pipeline_result import PipelineResult
from tfgpu_tui.probe.pipeline_runner import PipelineRunner
from tfgpu_tui.probe.request import ProbeRequestError, check_model_spec, normalise_device

PIPELINE_HELP = (
    "instead of the batch search, time this function's batched tf.data.Dataset alone and with prefetch "
    "against the model's training steps (the module is found as `python -m` finds it: the current "
    "directory, then PYTHONPATH)"
)


def pipeline_request(args: argparse.Namespace, target: Target, default_device: str) -> PipelineRequest:
    """The pipeline probe the command line asks for; raises ProbeRequestError."""
    if args.compare_precision:
        raise ProbeRequestError("--pipeline measures one precision; leave out --compare-precision")
    problem = interpreter_problem(target.python, target.why)
    if problem is not None:
        raise ProbeRequestError(problem)
    request = PipelineRequest(
        spec=args.pipeline,
        model=check_model_spec(args.model),
        device=normalise_device(args.device) if args.device else default_device,
        mixed_precision=args.mixed_precision,
        python=target.python,
        timeout_seconds=args.timeout,
    )
    return request.resolved()


def print_result(result: PipelineResult, as_json: bool) -> None:
    """The result on stdout: sentences, or JSON with the request beside the ``pipeline`` object."""
    if as_json:
        request = result.request
        data = {
            "model": request.model,
            "device": request.device,
            "mixed_precision": request.mixed_precision,
            "pipeline": result.as_dict(),
            "error": result.error or None,
        }
        json.dump(data, sys.stdout, indent=2)
        print()
    else:
        print("\n".join(result.summary_lines()))


def run_pipeline(request: PipelineRequest, why: str, as_json: bool) -> int:
    """Measure; exit 0 when measured, 2 when the pipeline (or the model on its batches) could not be."""
    progress = sys.stderr if as_json else sys.stdout
    print(
        f"Timing the pipeline {request.spec} and {request.model} on {request.device}, "
        f"with {request.python} ({why}); stopped after {request.timeout_seconds:g} s",
        file=progress,
        flush=True,
    )
    result = PipelineRunner(request).run()
    print_result(result, as_json)
    if result.measurement is None:
        print(f"tfgpu-tui probe: {result.error}", file=sys.stderr)
        return EXIT_USAGE
    return 0
