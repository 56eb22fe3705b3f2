"""Headless subcommands (`tfgpu-tui gpus | check | log | probe | serve | export`), one module each.

Each module has `register(subparsers)`, which adds its parser and sets `func` to a
function taking the parsed arguments and returning the exit code. A command line imports only the module of
the subcommand it names (`commands_needed`): the dashboard imports none of them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

COMMAND_MODULES = ("gpus", "check", "log", "probe", "serve", "export")


def commands_needed(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[str, ...]:
    """The subcommand modules to register for `argv`, given the top-level `parser` (no subcommands yet): the
    one it names; none for the dashboard; all of them for the top-level help, for a word that is not a
    command (argparse then lists every command) and when the top-level options do not parse (argparse then
    says why)."""
    helps = ("-h", "--help")
    probe = argparse.ArgumentParser(prog=parser.prog, add_help=False, parents=[parser], exit_on_error=False)
    probe.add_argument("command", nargs="?")
    probe.add_argument("rest", nargs=argparse.REMAINDER)
    try:  # the help option (inherited from `parser`) is left out: it would print and exit
        command = probe.parse_known_args([arg for arg in argv if arg not in helps])[0].command
    except argparse.ArgumentError:
        return COMMAND_MODULES
    if command in COMMAND_MODULES:
        return (command,)
    if command is None and not any(arg in helps for arg in argv):
        return ()
    return COMMAND_MODULES
