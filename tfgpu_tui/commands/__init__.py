"""Headless subcommands (`tfgpu-tui gpus | check | log | probe | serve | export`), one module each.

Each module has `register(subparsers)`, which adds its parser and sets `func` to a
function taking the parsed arguments and returning the exit code.
"""

COMMAND_MODULES = ("gpus", "check", "log", "probe", "serve", "export")
