"""Command-line entry point: the dashboard by default, headless subcommands beside it."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import MutableMapping, Sequence

from tfgpu_tui import __version__
from tfgpu_tui.commands import COMMAND_MODULES, commands_needed, register_summaries
from tfgpu_tui.exit_status import EXIT_USAGE
from tfgpu_tui.options import (
    OneLineParser,
    add_access_options,
    add_dashboard_options,
    add_demo_gpus_option,
    add_fleet_options,
    dashboard_option_refusal,
    settings_from_args,
    usage_error,
)
from tfgpu_tui.settings import Settings


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: with `argv`, only the subcommand it names is registered (each command module is
    imported only when used), or for the top-level help every subcommand's summary; without, every
    subcommand."""
    parser = OneLineParser(
        prog="tfgpu-tui",
        description="Terminal dashboard for training TensorFlow on an NVIDIA GPU. "
        "Without a subcommand, starts the interactive dashboard.",
    )
    parser.add_argument("--version", action="version", version=f"tfgpu-tui {__version__}")
    add_dashboard_options(parser)
    add_demo_gpus_option(parser)
    add_fleet_options(parser)
    add_access_options(parser)
    names = COMMAND_MODULES if argv is None else commands_needed(parser, argv)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    if argv is not None and len(names) > 1:  # the top-level help, or an error listing the commands
        register_summaries(subparsers)
        return parser
    for name in names:
        importlib.import_module(f"tfgpu_tui.commands.{name}").register(subparsers)
    return parser


def dashboard_refusal(args: argparse.Namespace) -> str | None:
    """Why the dashboard cannot start, said before the screen opens; None when it can."""
    refusal = dashboard_option_refusal(args)
    if refusal is None and "TEXTUAL_DRIVER" not in os.environ and not sys.stdin.isatty():
        # serve's web sessions (and tests) name their driver; anything else needs a terminal.
        return "the dashboard needs a terminal (stdin is not a tty); scripts can use: tfgpu-tui gpus --json"
    return refusal


def forget_inherited_terminal_size(environ: MutableMapping[str, str]) -> None:
    """Drop COLUMNS and LINES a shell exported (JupyterLab's terminal does) when the terminal driver will run:
    Textual's Linux driver asks shutil.get_terminal_size, which prefers them to the terminal's real size, so
    the app would never refit on a resize. A web session names its driver (TEXTUAL_DRIVER) and keeps them."""
    if "TEXTUAL_DRIVER" not in environ:
        environ.pop("COLUMNS", None)
        environ.pop("LINES", None)


def run_app(settings: Settings) -> int:
    """Run the interactive dashboard (its start: ui/startup.py); the exit code."""
    from tfgpu_tui.ui.startup import run_dashboard

    forget_inherited_terminal_size(os.environ)
    run_dashboard(settings)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the dashboard or a subcommand; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    args, unknown = build_parser(argv).parse_known_args(argv)
    if unknown:  # named by the subcommand they followed (argparse would give the top-level usage)
        prog = "tfgpu-tui" if args.command is None else f"tfgpu-tui {args.command}"
        usage_error(prog, f"unrecognized arguments: {' '.join(unknown)}")
    try:
        if args.command is None:
            refusal = dashboard_refusal(args)
            if refusal is not None:
                print(f"tfgpu-tui: {refusal}", file=sys.stderr)
                return EXIT_USAGE
            return run_app(settings_from_args(args))
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
