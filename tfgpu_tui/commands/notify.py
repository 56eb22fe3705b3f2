"""`tfgpu-tui notify`: a headless watcher beside the training job (nohup, tmux, a systemd user unit) that
sends a short message through Apprise when a run needs its user: finished, crashed, NaN loss, stalled,
GPU idle and more (docs/notify.md). One more subscriber of the sampling feed; never imports TensorFlow."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from tfgpu_tui.commands import COMMAND_SUMMARIES
from tfgpu_tui.exit_status import EXIT_USAGE
from tfgpu_tui.options import number_in, settings_from_args
from tfgpu_tui.settings import INTERVAL, MINUTES

PROG = "tfgpu-tui notify"
DEFAULT_INTERVAL = 5.0  # seconds between GPU samples: events need no faster, and it idles cheaper
STOP_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")
# Settings-file keys whose refused value stops notify (exit 2) rather than falling back to the default,
# unless the option named beside it replaces the value (the file's URLs are always used, beside --to).
NOTIFY_KEYS = {
    "notify_urls": None,
    "notify_events": "events",
    "notify_stall_minutes": "stall_minutes",
    "notify_idle_minutes": "idle_minutes",
}
TEST_TITLE = "tfgpu-tui notify test from {host}"
TEST_BODY = "If you read this, tfgpu-tui notify can reach you here."


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `notify` subcommand."""

    minutes = number_in(MINUTES, "minutes")
    parser = subparsers.add_parser(
        "notify",
        help=COMMAND_SUMMARIES["notify"],
        description="Watch the GPUs and the training logs and send a message (through Apprise: ntfy, "
        "Telegram, Slack, Discord, e-mail, DingTalk, WeCom, Feishu/Lark, a JSON webhook...) when a run "
        "needs you. Each event is sent once, and again only after it cleared and came back, also across "
        "restarts. Start it with nohup beside the job. See docs/notify.md.",
    )
    parser.add_argument(
        "--to",
        metavar="URL",
        action="append",
        default=[],
        help="an Apprise URL to send to (repeatable); it shows in `ps`: prefer --to-file or "
        "$TFGPU_TUI_NOTIFY, or notify_urls in the settings file",
    )
    parser.add_argument("--to-file", metavar="PATH", type=Path, help="read the URLs from this file")
    parser.add_argument(
        "--log",
        dest="logs",
        metavar="PATH",
        type=Path,
        action="append",
        default=[],
        help="training log to watch (repeatable; default: the logs of the running TensorFlow jobs)",
    )
    parser.add_argument(
        "--events",
        metavar="LIST",
        help="comma-separated events to send, or all (default: finished,crashed,nan,stalled,gpu_idle; "
        "also writer_died, no_checkpoint, cpu_fallback, stale_kernel, gpu_lost, memory_full)",
    )
    parser.add_argument(
        "--stall-minutes", type=minutes, metavar="M", help="silent log = stalled (default 10)"
    )
    parser.add_argument("--idle-minutes", type=minutes, metavar="M", help="GPU at 0 %% = idle (default 30)")
    parser.add_argument(
        "--stale-minutes", type=minutes, metavar="M", help="idle process holding VRAM = stale (default 10)"
    )
    parser.add_argument(
        "--checkpoint-minutes", type=minutes, metavar="M", help="no new checkpoint this long (default 30)"
    )
    parser.add_argument(
        "--interval",
        type=number_in(INTERVAL, "seconds"),
        default=argparse.SUPPRESS,
        metavar="S",
        help=f"seconds between GPU samples and log reads (default {DEFAULT_INTERVAL:g})",
    )
    parser.add_argument(
        "--state", metavar="PATH", type=Path, help="what was sent (default ~/.local/state/tfgpu-tui/...)"
    )
    parser.add_argument("--hostname", help="the host name in messages (default: this machine's)")
    parser.add_argument("--json", action="store_true", help="print each event as one JSON line on stdout")
    parser.add_argument(
        "--test", action="store_true", help="send one test message to each URL, say whether it was delivered"
    )
    parser.set_defaults(func=run)


def say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def configure(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Settings, destinations and event kinds for this run; raises ValueError with one line when unusable."""
    from tfgpu_tui.notify.destinations import check, gather, known_schemes
    from tfgpu_tui.notify.events import parse_events
    from tfgpu_tui.safe_files import special_file_refusal

    for log in args.logs:
        if (refusal := special_file_refusal(log)) is not None:
            raise ValueError(f"--log {refusal}")
    required = [key for key, option in NOTIFY_KEYS.items() if option is None or getattr(args, option) is None]
    settings = settings_from_args(args, required=required)  # what to send where: no default stands in
    given = getattr(args, "interval", None)
    settings.interval = DEFAULT_INTERVAL if given is None else given
    for option, field in (
        ("stall_minutes", "notify_stall_minutes"),
        ("idle_minutes", "notify_idle_minutes"),
        ("stale_minutes", "stale_minutes"),
        ("checkpoint_minutes", "checkpoint_max_minutes"),
    ):
        if getattr(args, option) is not None:
            setattr(settings, field, getattr(args, option))
    names = args.events.split(",") if args.events is not None else list(settings.notify_events)
    try:
        kinds = parse_events(names)
    except ValueError as error:
        raise ValueError(f"--events: {error}") from None
    urls = gather(args.to, args.to_file, settings.notify_urls, os.environ)
    if not urls and not args.json:
        raise ValueError(
            "nowhere to send: give --to URL, --to-file PATH, $TFGPU_TUI_NOTIFY or notify_urls in the "
            "settings file (or --json to print the events)"
        )
    schemes = known_schemes() if urls else frozenset()
    destinations = [check(url, schemes) for url in urls]
    return settings, destinations, kinds


def run(args: argparse.Namespace) -> int:
    """Watch until SIGTERM, SIGHUP or SIGINT; --test sends one message per URL and exits."""
    try:
        settings, destinations, kinds = configure(args)
    except ValueError as error:  # DestinationError included: it names URLs without their secrets
        say(str(error))
        return EXIT_USAGE
    host = args.hostname or socket.gethostname()
    if args.test:
        return send_test(destinations, host)
    return watch(args, settings, destinations, kinds, host)


def send_test(destinations: list, host: str) -> int:  # type: ignore[type-arg]
    """One test message to each destination; 0 when every one was delivered, else 1."""
    from tfgpu_tui.notify.delivery import apprise_sender
    from tfgpu_tui.notify.failure import apprise_messages

    if not destinations:
        say("no URL to test")
        return EXIT_USAGE
    failed = 0
    for number, destination in enumerate(destinations, start=1):
        with apprise_messages() as why:
            ok = apprise_sender(destination)(TEST_TITLE.format(host=host), TEST_BODY)
            outcome = "delivered" if ok else f"NOT delivered: {why()}"
        failed += not ok
        name = f"URL {number} of {len(destinations)}, " if len(destinations) > 1 else ""
        print(f"{name}{destination.shown}: {outcome}", flush=True)
    return 1 if failed else 0


class Mailbox:
    """The newest snapshot from the feed's thread, for the main thread (older ones are replaced)."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._item = None

    def put(self, item) -> None:  # type: ignore[no-untyped-def]
        with self._condition:
            self._item = item
            self._condition.notify()

    def take(self, timeout: float):  # type: ignore[no-untyped-def]
        with self._condition:
            if self._item is None:
                self._condition.wait(timeout)
            item, self._item = self._item, None
            return item


def watch(args, settings, destinations, kinds, host: str) -> int:  # type: ignore[no-untyped-def]
    """The long-running part."""
    from tfgpu_tui.gpu.feed import FeedUpdate, SnapshotFeed
    from tfgpu_tui.notify.delivery import Delivery
    from tfgpu_tui.notify.gpu_events import GpuEvents
    from tfgpu_tui.notify.logs import LogSet
    from tfgpu_tui.notify.state import Ledger, default_state_path
    from tfgpu_tui.notify.status import clear_status, status_path, write_status
    from tfgpu_tui.notify.training_events import TrainingEvents
    from tfgpu_tui.notify.watcher import Notifier
    from tfgpu_tui.training.checkpoints import CheckpointPolicy

    stall = settings.notify_stall_minutes * 60
    idle = settings.notify_idle_minutes * 60
    settle = max(stall, idle, settings.stale_minutes * 60, settings.fallback_seconds) + 3 * settings.interval
    state_path = args.state or default_state_path()
    ledger = Ledger(state_path, settle_seconds=settle)
    try:
        ledger.save()
    except OSError as error:
        say(f"cannot write the state file {state_path} ({error.strerror or error}); give a writable --state")
        return EXIT_USAGE
    if ledger.load_problem:
        say(ledger.load_problem)
    stop: list[str] = []

    def on_signal(signum: int, _frame: object) -> None:
        stop.append(signal.Signals(signum).name)

    for name in STOP_SIGNALS:
        signal.signal(getattr(signal, name), on_signal)
    delivery = Delivery(destinations, say).start()

    def on_event(event) -> None:  # type: ignore[no-untyped-def]
        if args.json:
            print(json.dumps(event.as_dict()), flush=True)
        else:
            print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {event.title}: {event.message}", flush=True)
        delivery.send(event)

    policy = CheckpointPolicy(settings.checkpoint_max_epochs, settings.checkpoint_max_minutes)
    logs = LogSet(list(args.logs), policy)
    from tfgpu_tui.gpu.efficiency import Thresholds
    from tfgpu_tui.gpu.report_card import RunWatch

    runs = RunWatch(Thresholds.from_settings(settings))
    notifier = Notifier(
        GpuEvents(host, idle), TrainingEvents(host, stall), logs, ledger, kinds, on_event, say, runs
    )
    try:
        status = write_status(status_path(), [d.scheme for d in destinations])
    except OSError:
        status = None
    mailbox = Mailbox()
    feed = SnapshotFeed(settings)

    def receive(update: FeedUpdate) -> None:
        mailbox.put(update.snapshot)

    feed.subscribe(receive, period=settings.interval)
    feed.start()
    where = ", ".join(d.shown for d in destinations) or "stdout only"
    what = ", ".join(f"--log {log}" for log in args.logs) or "the running TensorFlow jobs' logs"
    say(f"watching the GPUs and {what}; sending {', '.join(k.value for k in kinds)} to {where}")
    sent = 0
    try:
        while not stop:
            snapshot = mailbox.take(timeout=1.0)
            if snapshot is not None and not stop:
                sent += len(notifier.step(snapshot))
    finally:
        feed.close()
        delivery.stop()
        logs.close()
        if status is not None:
            clear_status(status_path(), status)
    say(f"stopped by {stop[0] if stop else 'an error'}; {sent} event(s) sent this run")
    return 0
