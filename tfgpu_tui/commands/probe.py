"""`tfgpu-tui probe`: find the largest batch that fits, headless, as text or JSON."""

from __future__ import annotations

import argparse
import json
import sys

from tfgpu_tui.commands import COMMAND_SUMMARIES
from tfgpu_tui.commands.probe_pipeline import PIPELINE_HELP, pipeline_request, run_pipeline
from tfgpu_tui.env.targets import Target, resolve_target
from tfgpu_tui.options import (
    PYTHON_CHAIN,
    add_python_option,
    finite_number,
    number_in,
    settings_from_args,
)
from tfgpu_tui.probe.budget import default_budget, device_problem, gpu_devices
from tfgpu_tui.probe.interpreter import interpreter_problem
from tfgpu_tui.probe.pipeline_request import check_pipeline_spec
from tfgpu_tui.probe.precision import PrecisionComparison, precision_name, run_comparison
from tfgpu_tui.probe.record import record_of, save_record
from tfgpu_tui.probe.request import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MODEL,
    DEFAULT_STEPS,
    DEFAULT_TRIAL_TIMEOUT_SECONDS,
    ProbeRequest,
    ProbeRequestError,
    builtin_model_names,
    normalise_device,
    steps_per_trial,
)
from tfgpu_tui.probe.result import ProbeResult
from tfgpu_tui.probe.trial import Trial
from tfgpu_tui.probe.trial_runner import run_probe
from tfgpu_tui.settings import TIMEOUT_SECONDS


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `probe` subcommand."""
    parser = subparsers.add_parser(
        "probe",
        help=COMMAND_SUMMARIES["probe"],
        description="Train a few steps at several batch sizes, each in a fresh child process, to find the "
        "largest batch that fits in the memory budget.",
    )
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        metavar="M",
        help=f"{builtin_model_names()}, a saved model (model.keras) or package.module:function returning a "
        f"compiled model (default {DEFAULT_MODEL})",
    )
    parser.add_argument("--device", default=None, metavar="D", help="CPU or GPU:N (default GPU:0, else CPU)")
    parser.add_argument(
        "--budget-mb",
        type=finite_number("MB"),
        default=None,
        metavar="N",
        help="memory budget (default: what the device has free)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=DEFAULT_STEPS,
        metavar="N",
        help=f"training steps per trial (default {DEFAULT_STEPS})",
    )
    parser.add_argument(
        "--max-batch",
        type=int,
        default=DEFAULT_MAX_BATCH,
        metavar="N",
        help=f"largest batch size to try (default {DEFAULT_MAX_BATCH})",
    )
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument(
        "--mixed-precision",
        action="store_true",
        help="train with a mixed-precision policy (mixed_float16 on a GPU, mixed_bfloat16 on the CPU)",
    )
    precision.add_argument(
        "--compare-precision",
        action="store_true",
        help="probe in float32, then with mixed precision, and compare them side by side",
    )
    parser.add_argument(
        "--timeout",
        type=number_in(TIMEOUT_SECONDS, "seconds"),
        default=DEFAULT_TRIAL_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help=f"stop a trial that runs longer than this (default {DEFAULT_TRIAL_TIMEOUT_SECONDS:g})",
    )
    parser.add_argument("--pipeline", default=None, metavar="MODULE:FUNCTION", help=PIPELINE_HELP)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_python_option(
        parser, f"Python interpreter whose TensorFlow runs the trials (default, as `check`: {PYTHON_CHAIN})"
    )
    parser.set_defaults(func=run)


def request_from_args(args: argparse.Namespace, target: Target | None = None) -> ProbeRequest:
    """The probe request the command line asks for, the default budget filled in, the interpreter (`target`,
    default chosen as `check` and the dashboard choose it) asked whether it can run the trials; raises
    ProbeRequestError."""
    settings = settings_from_args(args)
    target = target or resolve_target(settings.python)
    problem = interpreter_problem(target.python, target.why)
    if problem is not None:
        raise ProbeRequestError(problem)
    device = normalise_device(args.device) if args.device else (gpu_devices() or ["CPU"])[0]
    budget_mb = args.budget_mb if args.budget_mb is not None else settings.batch_budget_mb
    source = "--budget-mb"
    problem = device_problem(device) if budget_mb is not None else None  # else default_budget says it
    if problem is not None:
        raise ProbeRequestError(problem)
    if budget_mb is None:
        budget = default_budget(device)
        if budget.mb is None:
            raise ProbeRequestError(budget.source)
        budget_mb, source = budget.mb, budget.source
    request = ProbeRequest(
        model=args.model,
        device=device,
        budget_mb=float(budget_mb),
        budget_source=source,
        steps=args.steps,
        max_batch=args.max_batch,
        mixed_precision=args.mixed_precision,
        python=target.python,
        trial_timeout_seconds=args.timeout,
    )
    return request.resolved()


def trial_line(trial: Trial) -> str:
    """One trial as a line of the progress table."""
    peak = f"{trial.peak_mb:10,.1f}" if trial.peak_mb is not None else f"{'-':>10}"
    step = f"{trial.step_seconds * 1000:9.1f}" if trial.step_seconds is not None else f"{'-':>9}"
    speed = f"{trial.samples_per_second:10,.0f}" if trial.samples_per_second is not None else f"{'-':>10}"
    note = f"  {trial.message.splitlines()[0]}" if trial.message and not trial.fits else ""
    return f"{trial.batch_size:>7}  {trial.result.value:<7} {peak} {step} {speed}{note}"


def run(args: argparse.Namespace) -> int:
    """Run the probe; exit 0 when a batch fits, 1 when none does or a trial errors, 2 on bad input. With
    --pipeline, time the pipeline instead (`commands.probe_pipeline`)."""
    if args.pipeline is not None:
        return run_pipeline_probe(args)
    target = resolve_target(settings_from_args(args).python)
    try:
        request = request_from_args(args, target)
    except ProbeRequestError as error:
        print(f"tfgpu-tui probe: {error}", file=sys.stderr)
        return 2
    progress = sys.stderr if args.json else sys.stdout
    print(
        f"Probing {request.model} on {request.device}, budget {request.budget_mb:,.0f} MB "
        f"({request.budget_source}), {steps_per_trial(request.steps)}, with {request.python} ({target.why})",
        file=progress,
    )
    print(
        f"{'batch':>7}  {'result':<7} {'peak MB':>10} {'step ms':>9} {'samples/s':>10}",
        file=progress,
        flush=True,
    )

    def report(trial: Trial) -> None:
        print(trial_line(trial), file=progress, flush=True)

    def announce(pass_request: ProbeRequest) -> None:
        print(f"-- {precision_name(pass_request)}", file=progress, flush=True)

    comparison = None
    if args.compare_precision:
        comparison = run_comparison(request, on_pass_start=announce, on_trial_done=report)
        result = comparison.float32
    else:
        result = run_probe(request, on_trial_done=report)
    keep_for_diagnoses(result, comparison)
    if args.json:
        data = result.as_dict() | {"comparison": None if comparison is None else comparison.as_dict()}
        json.dump(data, sys.stdout, indent=2)
        print()
    else:
        print("\n".join(result.summary_lines()))
        if comparison is not None:
            print("\n".join(["", *comparison.lines()]))
    return exit_code(result, comparison)


def keep_for_diagnoses(result: ProbeResult, comparison: PrecisionComparison | None) -> None:
    """Keep a GPU probe's answer where the efficiency diagnoses quote it (probe/record.py); a file that
    cannot be written is said in one line, and the probe's answer stands."""
    record = record_of(result, comparison)
    if record is None:
        return
    try:
        save_record(record)
    except OSError as error:
        print(f"tfgpu-tui probe: the answer was not kept for the GPU diagnoses: {error}", file=sys.stderr)


def exit_code(result: ProbeResult, comparison: PrecisionComparison | None = None) -> int:
    """0 when some batch fits (and the mixed run of a comparison did not fail), else 1."""
    mixed_failed = comparison is not None and comparison.mixed is not None and bool(comparison.mixed.error)
    return 0 if result.max_batch is not None and not result.error and not mixed_failed else 1


def run_pipeline_probe(args: argparse.Namespace) -> int:
    """`probe --pipeline`: the spec checked before anything else runs, then the request, then the child."""
    try:
        check_pipeline_spec(args.pipeline)
        target = resolve_target(settings_from_args(args).python)
        default_device = "" if args.device else (gpu_devices() or ["CPU"])[0]
        request = pipeline_request(args, target, default_device)
    except ProbeRequestError as error:
        print(f"tfgpu-tui probe: {error}", file=sys.stderr)
        return 2
    return run_pipeline(request, target.why, args.json)
