"""The options the dashboard and the subcommands share, their argparse types and help texts, and the
Settings a parsed command line gives. Here rather than in cli.py, so that a subcommand's module imports them
without importing the entry point that loads it."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import NoReturn

from tfgpu_tui.config_file import apply_config, load_config
from tfgpu_tui.exit_status import EXIT_USAGE
from tfgpu_tui.settings import INTERVAL, Range, Settings

# Option help said once, for every parser that takes the option (README's Commands table says the same).
PYTHON_CHAIN = (
    "your own running TensorFlow job's, else the activated $VIRTUAL_ENV's or $CONDA_PREFIX's, else the first "
    "with TensorFlow of python3 on PATH and tfgpu-tui's own"
)
PYTHON_OWN = "the one running tfgpu-tui"
DASHBOARD_PYTHON_HELP = (
    f"Python whose TensorFlow the Environment tab checks and the Batch probe uses (default: {PYTHON_CHAIN}; "
    "the header says which, p picks another)"
)
LOG_HELP = "training log to follow (default: train.log in the current directory, or the settings file's)"
CHECKPOINTS_HELP = (
    "where training writes checkpoints (default: looked for next to the log and in its writer's directory)"
)


def number_in(bounds: Range, unit: str = "") -> Callable[[str], float]:
    """An argparse type: a finite number within `bounds` (nan, inf and out-of-range values refused)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number{unit and ' of ' + unit}: {text!r}") from None
        if not bounds.contains(value):
            raise argparse.ArgumentTypeError(f"must be {bounds.describe()}{unit and ' ' + unit} (got {text})")
        return value

    return parse


def finite_number(unit: str = "") -> Callable[[str], float]:
    """An argparse type: any finite number (nan and inf refused; the caller checks the range)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"not a finite number{unit and ' of ' + unit}: {text!r}")
        return value

    return parse


def whole_in(bounds: Range) -> Callable[[str], int]:
    """An argparse type: a whole number within `bounds`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not bounds.contains(value):
            raise argparse.ArgumentTypeError(f"must be {bounds.describe()} (got {text})")
        return value

    return parse


interval_seconds = number_in(INTERVAL, "seconds")
DEMO_GPUS = Range(2, 16)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line naming the right `--help` (the subcommand's for
    an error in a subcommand), with exit code 2 (EXIT_USAGE)."""

    def error(self, message: str) -> NoReturn:
        usage_error(self.prog, message)


def usage_error(prog: str, message: str) -> NoReturn:
    """Print `prog: message (see: prog --help)` to stderr and exit with EXIT_USAGE."""
    print(f"{prog}: {message} (see: {prog} --help)", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def add_demo_gpus_option(parser: argparse.ArgumentParser, after_command: bool = False) -> None:
    """`--demo-gpus N`, before a subcommand or after one that takes --demo (SUPPRESS: a value given before
    the subcommand is not reset)."""
    parser.add_argument(
        "--demo-gpus",
        type=whole_in(DEMO_GPUS),
        default=argparse.SUPPRESS if after_command else None,
        metavar="N",
        help=f"simulate N GPUs, {DEMO_GPUS.describe()} (implies --demo; default 2)",
    )


def add_access_options(
    parser: argparse.ArgumentParser, default: object = None, least_privilege_switch: bool = True
) -> None:
    """The least-privilege switches (serve/policy.py), for the dashboard and `serve` (always least
    privilege)."""
    if least_privilege_switch:
        parser.add_argument(
            "--least-privilege",
            action="store_true",
            default=default if default is not None else False,
            help="what a web session gets: no signals, logs only under --log-root, built-in models only, "
            "nothing written",
        )
    parser.add_argument(
        "--allow-kill",
        action="store_true",
        default=default if default is not None else False,
        help="with least privilege: allow sending signals to processes",
    )
    parser.add_argument(
        "--allow-code",
        action="store_true",
        default=default if default is not None else False,
        help="with least privilege: allow package.module:function models and model files anywhere",
    )
    parser.add_argument(
        "--log-root",
        metavar="DIR",
        type=Path,
        default=default,
        help="open training logs only under DIR (least privilege default: the --log file's directory)",
    )


def add_python_option(
    parser: argparse.ArgumentParser,
    help_text: str = f"Python interpreter whose TensorFlow to use (default: {PYTHON_OWN})",
) -> None:
    """`--python PATH`: the interpreter whose TensorFlow is inspected or used (`help_text` says which
    default)."""
    parser.add_argument(
        "--python",
        metavar="PATH",
        default=argparse.SUPPRESS,  # a subcommand's parser must not reset a value given before it
        help=help_text,
    )


def add_dashboard_options(parser: argparse.ArgumentParser, after_command: bool = False) -> None:
    """The options a dashboard runs with: at the top level, and after `serve` (its sessions are dashboards),
    where SUPPRESS keeps a value given before the subcommand from being reset by this parser's default."""
    unset = argparse.SUPPRESS if after_command else None
    flag = argparse.SUPPRESS if after_command else False
    parser.add_argument(
        "--interval",
        type=interval_seconds,
        default=unset,
        metavar="SECONDS",
        help=f"refresh interval (default 1, {INTERVAL.describe()})",
    )
    parser.add_argument(
        "--readonly", action="store_true", default=flag, help="never send signals to processes"
    )
    parser.add_argument(
        "--demo", action="store_true", default=flag, help="use a simulated GPU source (shown as SIMULATED)"
    )
    parser.add_argument("--log", metavar="PATH", type=Path, default=unset, help=LOG_HELP)
    parser.add_argument("--checkpoints", metavar="DIR", type=Path, default=unset, help=CHECKPOINTS_HELP)
    add_python_option(parser, DASHBOARD_PYTHON_HELP)


def add_fleet_options(parser: argparse.ArgumentParser) -> None:
    """`--prometheus URL` or `--remote HOST:PORT,...`: add the Hosts tab (the fleet view)."""
    from tfgpu_tui.fleet.addresses import prometheus_url, remote_list

    fleet = parser.add_mutually_exclusive_group()
    fleet.add_argument(
        "--prometheus", metavar="URL", type=prometheus_url, help="add a Hosts tab fed by this Prometheus"
    )
    fleet.add_argument(
        "--remote",
        metavar="HOST:PORT,...",
        type=remote_list,
        help="add a Hosts tab scraping these tfgpu-tui exporters directly",
    )


def settings_from_args(args: argparse.Namespace, required: Collection[str] = ()) -> Settings:
    """Settings for this run: defaults, overridden by the settings file, overridden by the command line.

    Problems in the settings file are kept in `settings.config_warnings` (the app notifies them);
    subcommands also print them to stderr. A refused value of a key in `required` raises ValueError (one
    line) instead: the command cannot run on a default in its place."""
    settings = apply_config(Settings(), load_config())
    for name in required:
        if name in settings.config_refused:
            raise ValueError(settings.config_refused[name])
    if getattr(args, "command", None) is not None:
        for warning in settings.config_warnings:
            print(f"tfgpu-tui: warning: {warning}", file=sys.stderr)
    if getattr(args, "interval", None) is not None:
        settings.interval = args.interval
    settings.readonly = settings.readonly or bool(getattr(args, "readonly", False))
    settings.demo = bool(getattr(args, "demo", False)) or getattr(args, "demo_gpus", None) is not None
    if getattr(args, "demo_gpus", None) is not None:
        settings.demo_gpus = args.demo_gpus
    if getattr(args, "python", None):
        settings.python = args.python
    if getattr(args, "log", None) is not None:
        settings.log_path = args.log
        settings.log_path_given = True
    if getattr(args, "checkpoints", None) is not None:
        settings.checkpoints_dir = args.checkpoints
    if getattr(args, "prometheus", None):
        settings.prometheus_url = args.prometheus
    if getattr(args, "remote", None):
        settings.remote_hosts = tuple(args.remote)
    for switch in ("least_privilege", "allow_kill", "allow_code"):
        if getattr(args, switch, False):
            setattr(settings, switch, True)
    if getattr(args, "log_root", None) is not None:
        settings.log_root = args.log_root
    return settings


def interpreter_refusal(python: str) -> str | None:
    """Why `python` (a path, or a name looked up on PATH) is not an interpreter that can be run, or None."""
    found = shutil.which(python) if os.sep not in python else python
    if found is None:
        return f"--python {python}: no such interpreter on PATH"
    if not os.path.isfile(found) or not os.access(found, os.X_OK):
        what = "does not exist" if not os.path.exists(found) else "is not an executable file"
        return f"--python {python}{'' if found == python else f' ({found})'} {what}"
    return None


def dashboard_option_refusal(args: argparse.Namespace) -> str | None:
    """Why a dashboard cannot run with these `--python` / `--log` options, or None (also checked by `serve`
    for its sessions). A log that does not exist yet is fine: training may not have started."""
    from tfgpu_tui.safe_files import special_file_refusal

    python = getattr(args, "python", None)
    if python and (refusal := interpreter_refusal(python)):
        return refusal
    log = getattr(args, "log", None)
    if log is not None and (refusal := special_file_refusal(log)):
        return f"--log {refusal}"
    return None
