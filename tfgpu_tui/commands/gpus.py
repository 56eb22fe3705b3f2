"""`tfgpu-tui gpus` (placeholder until its issue lands)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `gpus` subcommand."""
    parser = subparsers.add_parser("gpus", help="(not built yet)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Not built yet."""
    print("tfgpu-tui gpus: not built yet")
    return 2
