"""`tfgpu-tui check`: does TensorFlow really use the GPU, and if not, why.

Exit status 0 when all is ok, 1 with warnings, 3 with a failed check; 2 is a bad command line (argparse's
code, and a --record file that cannot be written).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tfgpu_tui.commands import COMMAND_SUMMARIES
from tfgpu_tui.env.check_run import CheckRun, run_check
from tfgpu_tui.env.findings import EnvReport
from tfgpu_tui.env.recorded import recording_dict
from tfgpu_tui.env.report_formats import report_markdown, report_text
from tfgpu_tui.exit_status import EXIT_CHECK_FAILED, EXIT_CHECK_WARNINGS, EXIT_OK, EXIT_USAGE
from tfgpu_tui.options import PYTHON_CHAIN, add_python_option, number_in, settings_from_args
from tfgpu_tui.settings import TIMEOUT_SECONDS, Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `check` subcommand."""
    parser = subparsers.add_parser(
        "check",
        help=COMMAND_SUMMARIES["check"],
        description="Run every environment check and print the findings with their fixes. TensorFlow is "
        "inspected in a child process of the target interpreter. "
        f"Exit status: {EXIT_OK} all ok, {EXIT_CHECK_WARNINGS} warnings, {EXIT_CHECK_FAILED} a failed check, "
        f"{EXIT_USAGE} a bad command line.",
    )
    add_python_option(
        parser,
        f"Python interpreter whose TensorFlow to check (default, as the Environment tab: {PYTHON_CHAIN})",
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
        help="also save the facts and the raw inspection output as JSON (replayable by tests, bug reports)",
    )
    parser.set_defaults(func=run)


def _print_fast(report: EnvReport) -> None:
    if sys.stderr.isatty():
        done = sum(1 for finding in report.findings if finding.status.value != "pending")
        print(f"{done} quick checks done; importing TensorFlow in a child process...", file=sys.stderr)


def _write_recording(path: Path, result: CheckRun) -> bool:
    """Save the facts and raw inspection output for replay; False (with a message) if it cannot be written."""
    try:
        path.write_text(json.dumps(recording_dict(result.facts, result.inspection), indent=2) + "\n")
    except OSError as error:
        print(f"tfgpu-tui check: could not write {path}: {error.strerror or error}", file=sys.stderr)
        return False
    return True


def run(args: argparse.Namespace) -> int:
    """Run the checks on the interpreter the Environment tab would check; print text, Markdown or JSON;
    return the exit status for the worst finding."""
    from tfgpu_tui.env.targets import resolve_target

    settings = settings_from_args(args)
    timeout = args.timeout or settings.env_check_timeout_seconds
    target = resolve_target(settings.python)
    if not args.json:
        print(f"tfgpu-tui check: checking {target.python} ({target.why})", file=sys.stderr)
    run_result = run_check(target.python, timeout, on_fast=None if args.json else _print_fast)
    report = run_result.report
    if args.record is not None and not _write_recording(args.record, run_result):
        return EXIT_USAGE
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, default=str))
    elif args.markdown:
        print(report_markdown(report))
    else:
        print(report_text(report))
    return report.exit_code()
