"""`tfgpu-tui check`: does TensorFlow really use the GPU, and if not, why.

Exit status 0 when all is ok, 1 with warnings, 2 with a failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tfgpu_tui.cli import number_in
from tfgpu_tui.env.check_run import CheckRun, run_check
from tfgpu_tui.env.findings import EnvReport
from tfgpu_tui.env.recorded import recording_dict
from tfgpu_tui.env.report_formats import report_markdown, report_text
from tfgpu_tui.settings import TIMEOUT_SECONDS, Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `check` subcommand."""
    parser = subparsers.add_parser(
        "check",
        help="check that TensorFlow can use the GPU (driver, build, libraries, devices)",
        description="Run every environment check and print the findings with their fixes. TensorFlow is "
        "inspected by a probe run with the target interpreter. "
        "Exit status: 0 all ok, 1 warnings, 2 a failure.",
    )
    parser.add_argument(
        "--python",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="Python interpreter whose TensorFlow to check (default: the one running tfgpu-tui)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON object: status, findings, facts")
    output.add_argument("--markdown", action="store_true", help="print the report as Markdown")
    parser.add_argument(
        "--timeout",
        type=number_in(TIMEOUT_SECONDS, "seconds"),
        default=None,
        metavar="SECONDS",
        help="limit for the whole check, a hanging interpreter included "
        f"(default {Settings().env_check_timeout_seconds:g}, {TIMEOUT_SECONDS.describe()})",
    )
    parser.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="FILE",
        help="also save the facts and the raw probe output as JSON (replayable by tests and bug reports)",
    )
    parser.set_defaults(func=run)


def _print_fast(report: EnvReport) -> None:
    if sys.stderr.isatty():
        done = sum(1 for finding in report.findings if finding.status.value != "pending")
        print(f"{done} quick checks done; importing TensorFlow in a child process...", file=sys.stderr)


def _write_recording(path: Path, result: CheckRun) -> bool:
    """Save the facts and raw probe output for replay; False (with a message) if it cannot be written."""
    try:
        path.write_text(json.dumps(recording_dict(result.facts, result.probe), indent=2) + "\n")
    except OSError as error:
        print(f"tfgpu-tui check: could not write {path}: {error.strerror or error}", file=sys.stderr)
        return False
    return True


def run(args: argparse.Namespace) -> int:
    """Run the checks; print text, Markdown or JSON; return 0/1/2."""
    from tfgpu_tui.cli import settings_from_args

    settings = settings_from_args(args)
    timeout = args.timeout or settings.env_check_timeout_seconds
    run_result = run_check(settings.python, timeout, on_fast=None if args.json else _print_fast)
    report = run_result.report
    if args.record is not None and not _write_recording(args.record, run_result):
        return 2
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, default=str))
    elif args.markdown:
        print(report_markdown(report))
    else:
        print(report_text(report))
    return report.exit_code()
