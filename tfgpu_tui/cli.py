"""Command-line entry point: the dashboard by default, headless subcommands beside it."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from tfgpu_tui import __version__
from tfgpu_tui.commands import COMMAND_MODULES
from tfgpu_tui.config_file import apply_config, load_config
from tfgpu_tui.settings import MIN_INTERVAL_SECONDS, Settings


def interval_seconds(text: str) -> float:
    """Parse a refresh interval, refusing values below the minimum."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value < MIN_INTERVAL_SECONDS:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_INTERVAL_SECONDS} s (got {value})")
    return value


def add_python_option(parser: argparse.ArgumentParser) -> None:
    """`--python PATH`: the interpreter whose TensorFlow is inspected or used."""
    parser.add_argument(
        "--python",
        metavar="PATH",
        default=argparse.SUPPRESS,  # a subcommand's parser must not reset a value given before it
        help="Python interpreter whose TensorFlow to use (default: the one running tfgpu-tui)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, subcommands included."""
    parser = argparse.ArgumentParser(
        prog="tfgpu-tui",
        description="Terminal dashboard for training TensorFlow on an NVIDIA GPU. "
        "Without a subcommand, starts the interactive dashboard.",
    )
    parser.add_argument("--version", action="version", version=f"tfgpu-tui {__version__}")
    parser.add_argument(
        "--interval",
        type=interval_seconds,
        default=None,
        metavar="SECONDS",
        help=f"refresh interval (default 1, minimum {MIN_INTERVAL_SECONDS})",
    )
    parser.add_argument("--readonly", action="store_true", help="never send signals to processes")
    parser.add_argument("--demo", action="store_true", help="use a simulated GPU source (shown as SIMULATED)")
    parser.add_argument("--log", metavar="PATH", type=Path, default=None, help="training log to follow")
    parser.add_argument(
        "--checkpoints", metavar="DIR", type=Path, default=None, help="where training writes checkpoints"
    )
    add_python_option(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"tfgpu_tui.commands.{name}").register(subparsers)
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings for this run: defaults, overridden by the settings file, overridden by the command line.

    Problems in the settings file are kept in `settings.config_warnings` (the app notifies them);
    subcommands also print them to stderr."""
    settings = apply_config(Settings(), load_config())
    if getattr(args, "command", None) is not None:
        for warning in settings.config_warnings:
            print(f"tfgpu-tui: warning: {warning}", file=sys.stderr)
    if getattr(args, "interval", None) is not None:
        settings.interval = args.interval
    settings.readonly = settings.readonly or bool(getattr(args, "readonly", False))
    settings.demo = bool(getattr(args, "demo", False))
    if getattr(args, "python", None):
        settings.python = args.python
    if getattr(args, "log", None) is not None:
        settings.log_path = args.log
        settings.log_path_given = True
    if getattr(args, "checkpoints", None) is not None:
        settings.checkpoints_dir = args.checkpoints
    return settings


def run_app(settings: Settings) -> int:
    """Start the interactive dashboard (Textual is imported only here)."""
    from tfgpu_tui.ui.app import TfgpuApp

    TfgpuApp(settings).run()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the dashboard or a subcommand; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:
            return run_app(settings_from_args(args))
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
