"""`tfgpu-tui export`: a Prometheus exporter with dcgm-exporter's metric names plus tfgpu-tui's own series
(processes, alerts, training progress). Loopback only unless --public; TLS and basic auth through a web
config file in the format of Prometheus's exporter-toolkit; served on aiohttp (export/server.py), as `serve`
is. docs/fleet.md has the scrape config."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from tfgpu_tui.commands import COMMAND_SUMMARIES, SIMULATED_NOTE
from tfgpu_tui.exit_status import EXIT_USAGE
from tfgpu_tui.options import add_demo_gpus_option, interval_seconds, settings_from_args

if TYPE_CHECKING:
    from tfgpu_tui.export.collector import Exporter
    from tfgpu_tui.export.server import MetricsServer

if TYPE_CHECKING:
    from tfgpu_tui.gpu.model import Snapshot

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9400  # dcgm-exporter's port: a Prometheus set up for it scrapes us unchanged
PUBLIC_WARNING = (
    "WARNING: exporting on {host}:{port}, reachable from other machines. The metrics name users, commands, "
    "notebooks and log paths.{auth} Prefer the default loopback address and scrape through an SSH tunnel "
    "or a reverse proxy, or use --web-config with basic_auth_users and TLS."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `export` subcommand."""
    from tfgpu_tui.export.process_series import DEFAULT_TOP

    parser = subparsers.add_parser(
        "export",
        help=COMMAND_SUMMARIES["export"],
        description="Serve Prometheus's text format on /metrics: dcgm-exporter's DCGM_FI_DEV_* series for "
        "what NVML reports, plus tfgpu_* series (VRAM per process, alerts, training progress of each --log, "
        "the exporter's health). Binds loopback unless --public. See docs/fleet.md.",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)"
    )
    parser.add_argument(
        "--interval",
        type=interval_seconds,
        default=argparse.SUPPRESS,
        metavar="S",
        help="seconds between GPU samples (default 1); scrapes report the latest sample",
    )
    parser.add_argument(
        "--log",
        dest="logs",
        metavar="PATH",
        type=Path,
        nargs="+",
        action="extend",
        default=[],
        help="training log(s) to follow and export as tfgpu_training_* (label log=PATH)",
    )
    parser.add_argument("--public", action="store_true", help="allow binding a non-loopback address")
    parser.add_argument(
        "--web-config", metavar="FILE", type=Path, help="TLS and basic auth (exporter-toolkit format)"
    )
    parser.add_argument("--hostname", help="the Hostname label (default: this machine's host name)")
    parser.add_argument(
        "--top-processes",
        type=int,
        default=DEFAULT_TOP,
        metavar="N",
        help=f'processes exported per GPU; the rest are summed as pid="other" (default {DEFAULT_TOP})',
    )
    parser.add_argument(
        "--pids",
        metavar="PID",
        type=int,
        nargs="+",
        action="extend",
        help="look for TensorFlow on the CPU only among these processes (default: every process of this "
        "host); the GPU processes are the ones NVML lists",
    )
    parser.add_argument(
        "--demo", action="store_true", default=argparse.SUPPRESS, help="export the simulated GPUs (SIMULATED)"
    )
    add_demo_gpus_option(parser, after_command=True)
    parser.set_defaults(func=run)


def check_arguments(args: argparse.Namespace) -> str | None:
    """Why these options cannot be used, or None. Each --log gets `log PATH`'s checks (a log that does not
    exist yet is followed once it appears)."""
    from tfgpu_tui.safe_files import special_file_refusal
    from tfgpu_tui.serve.guard import is_loopback

    for log in args.logs:
        refusal = special_file_refusal(log)
        if refusal is not None:
            return f"--log {refusal}"

    if not 0 <= args.port <= 65535:
        return f"--port must be between 0 and 65535 (got {args.port})"
    if any(pid <= 0 for pid in args.pids or ()):
        return f"--pids takes process ids, which are positive (got {min(args.pids)})"
    if not 1 <= args.top_processes <= 1000:
        return f"--top-processes must be between 1 and 1000 (got {args.top_processes})"
    if not args.public and not is_loopback(args.host):
        return (
            f"{args.host} is reachable from other machines: add --public to really do that (with "
            f"--web-config for TLS and basic auth), or keep the default {DEFAULT_HOST}."
        )
    return None


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM."""
    from tfgpu_tui.export.collector import Exporter
    from tfgpu_tui.export.server import MetricsServer
    from tfgpu_tui.export.web_config import WebConfig, WebConfigError, load_web_config

    problem = check_arguments(args)
    if problem:
        print(f"tfgpu-tui export: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        web = load_web_config(args.web_config) if args.web_config else WebConfig()
    except WebConfigError as error:
        print(f"tfgpu-tui export: --web-config: {error}", file=sys.stderr)
        return EXIT_USAGE
    settings = settings_from_args(args)
    exporter = Exporter(
        settings, logs=args.logs, hostname=args.hostname, top_processes=args.top_processes, pids=args.pids
    )
    try:
        server = MetricsServer((args.host, args.port), exporter, web)
    except (OSError, WebConfigError) as error:
        exporter.close()
        reason = getattr(error, "strerror", None) or error
        print(f"tfgpu-tui export: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 1
    note = SIMULATED_NOTE if settings.demo else ""
    if args.public and not is_private(web):
        auth = "" if web.users else " No basic auth is configured: anyone who can connect reads them."
        warning = PUBLIC_WARNING.format(host=args.host, port=server.port, auth=auth)
        print(warning + note, file=sys.stderr)
    exporter.start()
    return serve(server, exporter, note, bool(args.logs))


def nothing_to_export(snapshot: Snapshot | None, following_logs: bool) -> str:
    """What the first sample says when there is no GPU to export (NVML missing, or no GPU listed), else ""."""
    from tfgpu_tui.export.names import NVML_UNAVAILABLE, UP

    if snapshot is None or (snapshot.error is None and snapshot.devices):
        return ""
    why = snapshot.error.message if snapshot.error is not None else "NVML lists no GPU"
    logs = " and the training series of each --log" if following_logs else " only (no --log given)"
    return (
        f"nothing to export from the GPUs: {why.rstrip('.')}. /metrics carries the exporter's health "
        f"({UP} 0, {NVML_UNAVAILABLE}){logs}; GPU series appear once NVML lists GPUs."
    )


def is_private(web: object) -> bool:
    """True when the web config has both TLS and basic auth (nothing to warn about)."""
    return bool(getattr(web, "tls", False) and getattr(web, "users", None))


def serve(server: MetricsServer, exporter: Exporter, note: str = "", following_logs: bool = False) -> int:
    """Serve (the server's own thread) until SIGINT or SIGTERM; return 0 after closing everything. Once it
    listens, it says where (with `note`: SIMULATED under --demo) and whether there is nothing to export."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        server.start()
        print(f"tfgpu-tui export: serving {server.url}{note}", flush=True)
        nothing = nothing_to_export(exporter.state.snapshot, following_logs)
        if nothing:
            print(f"tfgpu-tui export: {nothing}", flush=True)
        stop.wait()
    finally:
        server.close()
        exporter.close()
    return 0
