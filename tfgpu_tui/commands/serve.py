"""`tfgpu-tui serve`: the dashboard in a web browser, through textual-serve.

textual-serve runs one shell command per browser session; that command is
`<this python> -m tfgpu_tui <dashboard options>`, built here with proper quoting.
Loopback only unless `--public`; a public session is read-only unless `--allow-kill`.
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import sys
from pathlib import Path
from urllib.parse import urlsplit

from tfgpu_tui.cli import interval_seconds, settings_from_args

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
EXIT_USAGE = 2
PUBLIC_WARNING = (
    "WARNING: serving on {host}:{port}, reachable from other machines. Anyone who can reach this port "
    "sees the GPU's processes (user names, command lines) and your training log, without a password. "
    "{kill_note} Prefer the default loopback address with an SSH tunnel: ssh -L {port}:127.0.0.1:{port} ..."
)
READONLY_NOTE = "Sessions are read-only (no process can be killed); add --allow-kill to change that."
KILL_NOTE = "--allow-kill: any visitor can send signals to processes as your user."


class ServeError(ValueError):
    """A `serve` option the user must fix; the message says how."""


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback IP addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, port: int, public: bool) -> None:
    """Refuse a non-loopback address without `--public`, and ports outside 1-65535."""
    if not 1 <= port <= 65535:
        raise ServeError(f"--port must be between 1 and 65535 (got {port})")
    if not host.strip():
        raise ServeError("--host must not be empty")
    if not public and not is_loopback(host):
        raise ServeError(
            f"--host {host} is not a loopback address: anyone who can reach it could watch (and, unless "
            "read-only, kill) processes. Add --public to really do that, or keep the default "
            f"{DEFAULT_HOST} and use an SSH tunnel."
        )


def check_public_url(url: str | None) -> None:
    """`--public-url` must be an absolute http(s) URL without a path."""
    if url is None:
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise ServeError(f"--public-url must look like https://example.org:8443 (got {url!r})")


def session_readonly(readonly: bool, public: bool, allow_kill: bool) -> bool:
    """Whether browser sessions may send signals: never on a public address unless `--allow-kill`."""
    return readonly or (public and not allow_kill)


def public_warning(host: str, port: int, readonly: bool) -> str:
    """What `--public` prints before serving."""
    return PUBLIC_WARNING.format(host=host, port=port, kill_note=READONLY_NOTE if readonly else KILL_NOTE)


def session_arguments(args: argparse.Namespace, readonly: bool) -> list[str]:
    """The dashboard options each browser session runs with (global options given before or after `serve`)."""
    argv: list[str] = []
    if getattr(args, "demo", False):
        argv.append("--demo")
    if readonly:
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
    return argv


def session_command(arguments: list[str], python: str | None = None) -> str:
    """The shell command line textual-serve runs per browser session, every word quoted."""
    return shlex.join([python or sys.executable, "-m", "tfgpu_tui", *arguments])


def _add_dashboard_options(parser: argparse.ArgumentParser) -> None:
    """The global dashboard options, accepted after `serve` too. SUPPRESS keeps a value given before
    `serve` from being overwritten by this parser's default."""
    quiet = argparse.SUPPRESS
    parser.add_argument("--demo", action="store_true", default=quiet, help="serve the simulated GPU source")
    parser.add_argument(
        "--interval", type=interval_seconds, default=quiet, metavar="SECONDS", help="refresh interval"
    )
    parser.add_argument("--readonly", action="store_true", default=quiet, help="sessions never send signals")
    parser.add_argument("--log", metavar="PATH", type=Path, default=quiet, help="training log to follow")
    parser.add_argument(
        "--checkpoints", metavar="DIR", type=Path, default=quiet, help="where training writes checkpoints"
    )
    parser.add_argument(
        "--python", metavar="PATH", default=quiet, help="Python interpreter whose TensorFlow to use"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `serve` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help="serve the dashboard to a web browser",
        description="Serve the dashboard to a web browser (one dashboard per browser tab). "
        f"Binds to {DEFAULT_HOST} by default: reach it through an SSH tunnel.",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--public",
        action="store_true",
        help="allow binding a non-loopback address (sessions become read-only)",
    )
    parser.add_argument(
        "--allow-kill", action="store_true", help="with --public: let browser sessions kill processes"
    )
    parser.add_argument(
        "--public-url",
        metavar="URL",
        default=None,
        help="URL the browser uses, when behind a proxy (default: the address the browser asked for)",
    )
    _add_dashboard_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the options, print where to point the browser, serve until Ctrl+C."""
    try:
        check_bind(args.host, args.port, args.public)
        check_public_url(args.public_url)
    except ServeError as error:
        print(f"tfgpu-tui serve: {error}", file=sys.stderr)
        return EXIT_USAGE
    settings = settings_from_args(args)  # prints the settings file's warnings, if any
    readonly = session_readonly(settings.readonly, args.public, args.allow_kill)
    if args.public:
        print(public_warning(args.host, args.port, readonly), file=sys.stderr)
    command = session_command(session_arguments(args, readonly))
    from tfgpu_tui.web_server import DashboardServer

    server = DashboardServer(command, host=args.host, port=args.port, public_url=args.public_url)
    try:
        server.serve()
    except OSError as error:
        print(
            f"tfgpu-tui serve: cannot listen on {args.host}:{args.port}: {error.strerror or error}",
            file=sys.stderr,
        )
        return 1
    return 0
