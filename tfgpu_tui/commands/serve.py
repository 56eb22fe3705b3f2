"""`tfgpu-tui serve`: the dashboard in a web browser.

The server runs one dashboard process per browser session: `<this python> -m tfgpu_tui <options>`, built
here as an argument list. This module is the command line; the server (serve/server.py, which imports
nothing from here) asks for a secret token, checks Host and Origin, and limits the number of sessions; each
session runs with least privilege (serve/policy.py) unless `--allow-kill` / `--allow-code` say otherwise.
docs/security.md says what a visitor can and cannot do.
"""

from __future__ import annotations

import argparse
import os
import secrets
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from tfgpu_tui.commands import COMMAND_SUMMARIES, SIMULATED_NOTE
from tfgpu_tui.exit_status import EXIT_USAGE
from tfgpu_tui.options import (
    add_access_options,
    add_dashboard_options,
    add_demo_gpus_option,
    dashboard_option_refusal,
    settings_from_args,
    whole_in,
)
from tfgpu_tui.serve.guard import TOKEN_ENV_VAR, Token, is_loopback
from tfgpu_tui.serve.policy import policy_from_settings
from tfgpu_tui.settings import Range, Settings

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 3
MAX_SESSIONS = Range(1, 64)
MIN_TOKEN_CHARS = 16
PUBLIC_WARNING = (
    "WARNING: serving on {host}:{port}, reachable from other machines. Whoever has the token sees the GPU's "
    "processes (user names, command lines) and the training logs under {root}. {kill_note} Prefer the "
    "default loopback address with an SSH tunnel: ssh -L {port}:127.0.0.1:{port} ..."
)
READONLY_NOTE = "Sessions send no signals; add --allow-kill to change that."
KILL_NOTE = "--allow-kill: a visitor with the token can send signals to processes as your user."


class ServeError(ValueError):
    """A `serve` option the user must fix; the message says how."""


def check_bind(host: str, port: int, public: bool) -> None:
    """Refuse a non-loopback address without `--public`, and ports outside 1-65535."""
    if not 1 <= port <= 65535:
        raise ServeError(f"--port must be between 1 and 65535 (got {port})")
    if not host.strip():
        raise ServeError("--host must not be empty")
    if not public and not is_loopback(host):
        raise ServeError(
            f"--host {host} is not a loopback address: anyone who can reach it could try the token. Add "
            f"--public to really do that, or keep the default {DEFAULT_HOST} and use an SSH tunnel."
        )


def check_public_url(url: str | None) -> None:
    """`--public-url` must be an absolute http(s) URL without a path."""
    if url is None:
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise ServeError(f"--public-url must look like https://example.org:8443 (got {url!r})")


def _checked_token(value: str, where: str) -> str:
    value = value.strip()
    if len(value) < MIN_TOKEN_CHARS or any(c.isspace() for c in value):
        raise ServeError(f"the token in {where} must be at least {MIN_TOKEN_CHARS} characters without spaces")
    return value


def load_token(token_file: Path | None, environ: Mapping[str, str] | None = None) -> Token:
    """The token from `--token-file` (its first line), else `$TFGPU_TUI_TOKEN`, else a new random one."""
    env = os.environ if environ is None else environ
    if token_file is not None:
        try:
            text = token_file.expanduser().read_text(encoding="utf-8")
            mode = token_file.expanduser().stat().st_mode
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or error
            raise ServeError(f"cannot read --token-file {token_file}: {reason}") from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            print(
                f"tfgpu-tui serve: warning: {token_file} is readable by other users (chmod 600 it)",
                file=sys.stderr,
            )
        lines = text.splitlines()
        return Token(_checked_token(lines[0] if lines else "", str(token_file)), str(token_file))
    if env.get(TOKEN_ENV_VAR, "").strip():
        return Token(_checked_token(env[TOKEN_ENV_VAR], f"${TOKEN_ENV_VAR}"), f"${TOKEN_ENV_VAR}")
    return Token(secrets.token_urlsafe(32), "generated")


def public_warning(host: str, port: int, allow_kill: bool, root: Path | None) -> str:
    """What `--public` prints before serving."""
    note = KILL_NOTE if allow_kill else READONLY_NOTE
    return PUBLIC_WARNING.format(host=host, port=port, kill_note=note, root=root or "the log root")


def session_arguments(args: argparse.Namespace, settings: Settings | None = None) -> list[str]:
    """The dashboard options each browser session runs with (global options given before or after `serve`):
    least privilege always, loosened only by `--allow-kill` / `--allow-code`."""
    settings = settings if settings is not None else Settings()
    argv: list[str] = []
    if getattr(args, "demo", False):
        argv.append("--demo")
    if getattr(args, "demo_gpus", None) is not None:
        argv += ["--demo-gpus", str(args.demo_gpus)]
    if getattr(args, "readonly", False):
        argv.append("--readonly")
    for option, dest in (("--interval", "interval"), ("--python", "python")):
        value = getattr(args, dest, None)
        if value is not None:
            argv += [option, str(value)]
    for option, dest in (("--log", "log"), ("--checkpoints", "checkpoints")):
        value = getattr(args, dest, None)
        if value is not None:
            # Absolute, so the session finds the file whatever its working directory.
            argv += [option, str(Path(value).expanduser().absolute())]
    argv.append("--least-privilege")
    for option, dest in (("--allow-kill", "allow_kill"), ("--allow-code", "allow_code")):
        if getattr(args, dest, False):
            argv.append(option)
    root = policy_from_settings(_least(settings)).log_root
    argv += ["--log-root", str(root)]
    return argv


def _least(settings: Settings) -> Settings:
    """A copy of `settings` with least privilege on (what a session will run with)."""
    from dataclasses import replace

    return replace(settings, least_privilege=True, config_warnings=[], config_refused={})


def session_command(arguments: list[str], python: str | None = None) -> list[str]:
    """The argument list the server runs per browser session."""
    return [python or sys.executable, "-m", "tfgpu_tui", *arguments]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `serve` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help=COMMAND_SUMMARIES["serve"],
        description="Serve the dashboard to a web browser (one dashboard per browser tab), behind a secret "
        f"token printed at start. Binds to {DEFAULT_HOST} by default: reach it through an SSH tunnel. "
        "Sessions run with least privilege (see docs/security.md).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--public", action="store_true", help="allow binding a non-loopback address")
    parser.add_argument(
        "--public-url",
        metavar="URL",
        default=None,
        help="URL the browser uses, when behind a proxy (default: the address the browser asked for)",
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        type=Path,
        default=None,
        help=f"read the access token from FILE's first line (else ${TOKEN_ENV_VAR}, else a random one)",
    )
    parser.add_argument(
        "--max-sessions",
        type=whole_in(MAX_SESSIONS),
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help=f"browser sessions open at once (default {DEFAULT_MAX_SESSIONS}, {MAX_SESSIONS.describe()})",
    )
    add_dashboard_options(parser, after_command=True)  # global options given after `serve`, for the sessions
    add_demo_gpus_option(parser, after_command=True)
    add_access_options(parser, default=argparse.SUPPRESS, least_privilege_switch=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the options, print where to point the browser, serve until Ctrl+C."""
    try:
        check_bind(args.host, args.port, args.public)
        check_public_url(args.public_url)
        refusal = dashboard_option_refusal(args)  # a session could not start with them
        if refusal is not None:
            raise ServeError(refusal)
        token = load_token(args.token_file)
    except ServeError as error:
        print(f"tfgpu-tui serve: {error}", file=sys.stderr)
        return EXIT_USAGE
    settings = settings_from_args(args)  # prints the settings file's warnings, if any
    arguments = session_arguments(args, settings)
    note = SIMULATED_NOTE if settings.demo else ""
    if args.public:
        root = Path(arguments[arguments.index("--log-root") + 1])
        print(public_warning(args.host, args.port, settings.allow_kill, root) + note, file=sys.stderr)
    from tfgpu_tui.serve.server import DashboardServer  # aiohttp: imported only to serve

    server = DashboardServer(
        session_command(arguments),
        host=args.host,
        port=args.port,
        public_url=args.public_url,
        token=token,
        max_sessions=args.max_sessions,
        note=note,
    )
    try:
        server.serve()
    except OSError as error:
        print(
            f"tfgpu-tui serve: cannot listen on {args.host}:{args.port}: {error.strerror or error}",
            file=sys.stderr,
        )
        return 1
    return 0
