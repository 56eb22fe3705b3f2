"""Headless subcommands (`tfgpu-tui gpus | check | log | probe | serve | export | notify`), one module each.

Each module has `register(subparsers)`, which adds its parser and sets `func` to a
function taking the parsed arguments and returning the exit code. A command line imports only the module of
the subcommand it names (`commands_needed`): the dashboard imports none of them, and the top-level help lists
them from COMMAND_SUMMARIES without importing any (`register_summaries`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

# Each subcommand's one-line summary: its parser's `help`, and the top-level help's list.
COMMAND_SUMMARIES = {
    "gpus": "print GPUs, their processes and alerts (like gpustat)",
    "check": "check that TensorFlow can use the GPU (driver, build, libraries, devices)",
    "log": "summarise a training log (Keras progress, errors, NaN, OOM)",
    "probe": "find the largest batch size that fits in memory",
    "serve": "serve the dashboard to a web browser",
    "export": "serve GPU, process, alert and training metrics to Prometheus (dcgm-exporter names)",
    "notify": "send a message (ntfy, Slack, e-mail...) when a run finishes, crashes, stalls or a GPU idles",
}
COMMAND_MODULES = tuple(COMMAND_SUMMARIES)


def register_summaries(subparsers: argparse._SubParsersAction) -> None:
    """Every subcommand by name and summary only, for the top-level help and its errors (a parser that
    runs a subcommand registers that module's full parser instead)."""
    for name, summary in COMMAND_SUMMARIES.items():
        subparsers.add_parser(name, help=summary, add_help=False)


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


# Ends each start-up line of `export --demo` and `serve --demo`: nothing they print may pass for this machine.
SIMULATED_NOTE = "   (SIMULATED: --demo shows simulated GPUs, not this machine's)"
