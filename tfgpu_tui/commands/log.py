"""`tfgpu-tui log PATH [--json] [--follow]`: a training log's epochs, current state and problems."""

from __future__ import annotations

import argparse
import json
import queue
import sys
import time
from pathlib import Path

from tfgpu_tui.alerts import Severity
from tfgpu_tui.commands import COMMAND_SUMMARIES
from tfgpu_tui.gpu.report_card_store import efficiency_dict
from tfgpu_tui.options import settings_from_args
from tfgpu_tui.safe_files import special_file_refusal
from tfgpu_tui.training.checkpoints import CheckpointPolicy
from tfgpu_tui.training.encoding import binary_refusal
from tfgpu_tui.training.feed import FollowFailed, LogFeed, LogSpec, LogUpdate
from tfgpu_tui.training.follow import FileState
from tfgpu_tui.training.log_state import LogState
from tfgpu_tui.training.oversight import OversightState
from tfgpu_tui.training.problems import fixes_to_show
from tfgpu_tui.training.readout import RunReadout
from tfgpu_tui.training.run import format_seconds
from tfgpu_tui.training.text_format import (
    FINISH_WORDS,
    LR_COLUMN,
    epoch_row,
    evaluation_text,
    format_value,
    has_lr_changes,
    metric_names,
    metrics_text,
    status_text,
)

MAX_WAITING_STATES = 64  # states not printed yet; beyond, the feed waits (stdout is stalled)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `log` subcommand."""
    parser = subparsers.add_parser(
        "log",
        help=COMMAND_SUMMARIES["log"],
        description="Parse a Keras training log (verbose=1 or 2, Keras 2 or 3, or JsonLinesLogger output) "
        "and print its epochs, current state, problems, the process writing it and the newest checkpoint "
        "(next to the log and under the writer's working directory, or under --checkpoints DIR). "
        "Exit code: 0 ok, 1 a critical problem was found, 2 the file cannot be read.",
    )
    parser.add_argument("path", type=Path, metavar="PATH", help="the log file, e.g. train.log")
    parser.add_argument("--json", action="store_true", help="print JSON (with --follow: one object per line)")
    parser.add_argument(
        "--follow", action="store_true", help="keep following the file like tail -F (Ctrl-C stops)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Summarise (and optionally follow) the log."""
    path: Path = args.path
    refusal = special_file_refusal(path)  # FIFO, device, socket, directory, symlink loop: refused at once
    if refusal is None and path.is_file():
        refusal = binary_refusal(path)  # a program, an archive: no log to read
    if refusal is not None:
        print(f"tfgpu-tui log: {refusal}", file=sys.stderr)
        return 2
    if not args.follow and not path.exists():
        print(f"tfgpu-tui log: {path} does not exist (use --follow to wait for it)", file=sys.stderr)
        return 2
    feed = LogFeed()
    updates: queue.Queue[LogUpdate] = queue.Queue(maxsize=MAX_WAITING_STATES)
    feed.follow(log_spec(args, path), updates.put)
    try:
        if args.follow:
            feed.start()
        else:
            feed.refresh()
        first = updates.get()
        if isinstance(first, FollowFailed):
            print(f"tfgpu-tui log: cannot read {path}: {first.reason}", file=sys.stderr)
            return 2
        if args.follow:
            return follow(first, updates, args.json)
        efficiency = efficiency_dict(path)
        if args.json:
            print(json.dumps({**first.as_dict(), "efficiency": efficiency}, indent=2))
        else:
            print(summary_text(first))
            if efficiency["card"]:
                print(f"Efficiency (as the dashboard or notify saw it on the GPU): {efficiency['card']}")
        return exit_code(first)
    finally:
        feed.close()


def log_spec(args: argparse.Namespace, path: Path) -> LogSpec:
    """The whole log, with the user's checkpoint settings (``--checkpoints``, the settings file)."""

    settings = settings_from_args(args)
    policy = CheckpointPolicy(settings.checkpoint_max_epochs, settings.checkpoint_max_minutes)
    return LogSpec(path, settings.checkpoints_dir, policy, read_whole=True)


def exit_code(state: LogState) -> int:
    """1 when a critical problem was found, else 0."""
    return 1 if any(p.severity is Severity.CRITICAL for p in state.problems) else 0


def table(rows: list[list[str]]) -> str:
    """Left-aligned first column, right-aligned others."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )


def context_lines(around: OversightState) -> list[str]:
    """The writer and the newest checkpoint, one line each."""
    writer = around.writer
    who = writer.describe() if writer else "unknown (no process here has this file as its output)"
    newest = around.newest_checkpoint
    if newest is None:
        checkpoint = f"none found under {', '.join(str(root) for root in around.checkpoint_roots)}"
    else:
        checkpoint = f"{newest.path} ({format_seconds(newest.age_seconds())} old)"
        announced = around.announced
        if announced is not None and newest.path.name == announced.path.rsplit("/", 1)[-1]:
            checkpoint += f", announced in the log at epoch {announced.epoch or '?'}"
    return [f"Writer: {who}", f"Checkpoint: {checkpoint}"]


def runs_lines(run: RunReadout) -> list[str]:
    """One line per fit() run when there are several: epochs, how it ended, its evaluation."""
    runs = run.runs()
    lines = [evaluation_text(run)] if len(runs) <= 1 and evaluation_text(run) else []
    if len(runs) <= 1:
        return lines
    lines.append(f"Runs: {len(runs)} fit() calls")
    for summary in runs:
        ended = FINISH_WORDS[summary.finish_reason] if summary.finish_reason else "not finished"
        evaluation = f"; evaluation: {metrics_text(summary.evaluation.metrics)}" if summary.evaluation else ""
        lines.append(f"  run {summary.index}: {len(summary.epochs)} epochs, {ended}{evaluation}")
    return lines


def summary_text(state: LogState) -> str:
    """The human-readable report."""
    run = state.run
    out = [f"{state.path}", f"Now: {status_text(run)}", *context_lines(state.around)]
    out += runs_lines(run)
    if run.epochs:
        names = metric_names(run.epochs)
        show_run = len({e.fit_run for e in run.epochs}) > 1
        show_lr = has_lr_changes(run.epochs)
        header = (["fit"] if show_run else []) + ["epoch", "time", *names] + ([LR_COLUMN] if show_lr else [])
        out += ["", table([header, *(epoch_row(e, names, show_run, show_lr) for e in run.epochs)])]
    problems = list(state.problems)
    out.append("")
    out.append("Problems:" if problems else "Problems: none found")
    for problem, fix in zip(problems, fixes_to_show(problems), strict=True):
        where = f" ({problem.where()})" if problem.where() else ""
        times = f" x{problem.count}" if problem.count > 1 else ""
        level = problem.severity.name.lower()
        out.append(f"  [{level}] {problem.title}{where}{times}: {problem.message}")
        if fix:
            out.append(f"      fix: {fix}")
    return "\n".join(out)


def follow(first: LogState, updates: queue.Queue[LogUpdate], as_json: bool) -> int:
    """Print the state, then new epochs, problems and file events as the feed reports them, until Ctrl-C."""
    state = wait_for_file(first, updates) if first.file_state is FileState.WAITING else first
    if state is None:
        return 2
    if as_json:
        print(json.dumps({"type": "state", **state.as_dict()}), flush=True)
    else:
        print(summary_text(state), flush=True)
    emit = _json_emit if as_json else _text_emit
    seen_epochs = len(state.run.epochs)
    seen_problems = {p.id for p in state.problems}
    while True:
        update = updates.get()
        if isinstance(update, FollowFailed):
            print(f"tfgpu-tui log: cannot read {update.path}: {update.reason}", file=sys.stderr)
            return 2
        for event in update.events:
            emit("file", {"event": event, "path": str(update.path)})
        for epoch in update.run.epochs[seen_epochs:]:
            emit("epoch", epoch.as_dict())
        seen_epochs = len(update.run.epochs)
        for problem in update.problems:
            if problem.id not in seen_problems:
                seen_problems.add(problem.id)
                emit("problem", problem.as_dict())


def wait_for_file(state: LogState, updates: queue.Queue[LogUpdate]) -> LogState | None:
    """Say that the log does not exist yet, wait until the feed sees it, then say when it appeared (on
    stderr, so --json's stdout stays JSON): nothing is summarised before there is a file. None when the
    feed cannot follow it."""
    print(f"waiting for {state.path} to appear ...", file=sys.stderr, flush=True)
    while state.file_state is FileState.WAITING:
        update = updates.get()
        if isinstance(update, FollowFailed):
            print(f"tfgpu-tui log: cannot read {update.path}: {update.reason}", file=sys.stderr)
            return None
        state = update
    print(f"{state.path} appeared at {time.strftime('%H:%M:%S')}", file=sys.stderr, flush=True)
    return state


def _json_emit(kind: str, data: dict) -> None:
    print(json.dumps({"type": kind, **data}), flush=True)


def _text_emit(kind: str, data: dict) -> None:
    if kind == "file":
        print(f"-- {data['path']}: {data['event']}", flush=True)
    elif kind == "epoch":
        metrics = "  ".join(
            f"{k} {format_value(v if isinstance(v, float) else float(v))}" for k, v in data["metrics"].items()
        )
        seconds = format_seconds(data["seconds"])
        print(f"epoch {data['epoch']}/{data['total_epochs'] or '?'}  {seconds}  {metrics}", flush=True)
    else:
        fix = f"  fix: {data['fix']}" if data["fix"] else ""
        rank = f" (rank {data['rank']})" if data.get("rank") is not None else ""
        print(f"[{data['severity']}] {data['title']}{rank}: {data['message']}{fix}", flush=True)
