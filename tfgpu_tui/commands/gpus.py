"""`tfgpu-tui gpus`: a one-shot (or --watch) table of GPUs, their processes and alerts, or --json."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import TYPE_CHECKING

from tfgpu_tui.alerts import AlertKind
from tfgpu_tui.commands import COMMAND_SUMMARIES
from tfgpu_tui.durations import running_text
from tfgpu_tui.options import add_demo_gpus_option, interval_seconds, settings_from_args
from tfgpu_tui.proc.facts import CpuBaseline, take_baseline
from tfgpu_tui.settings import MIN_INTERVAL_SECONDS, Settings

if TYPE_CHECKING:  # loaded in run(), after a one-shot's CPU baseline: loading them is part of its window
    from tfgpu_tui.gpu.model import Activity, DeviceSample, MigDevice, ProcessRow, Snapshot
    from tfgpu_tui.gpu.sampler import Sampler

CPU_WINDOW_SECONDS = 0.2  # a one-shot's CPU % covers at least this (20 clock ticks: 5 % steps)
DEFAULT_WINDOW_SECONDS = 2.0
CONFIRM_STEP_SECONDS = 0.5
CLEAR_SCREEN = "\x1b[H\x1b[2J"
WATCH_QUEUE = 4  # snapshots waiting to be printed with --watch
TABLE_HEADER = (
    f"{'GPU':>4} {'PID':>8} {'USER':<10} {'GPU-MiB':>8} {'SM%':>4} {'CPU%':>5} {'HOST-MiB':>8} {'TIME':>8}  "
    "COMMAND"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `gpus` subcommand."""

    parser = subparsers.add_parser(
        "gpus",
        help=COMMAND_SUMMARIES["gpus"],
        description="Print every GPU, the processes holding it (and TensorFlow processes on the CPU) and "
        "the alerts, once or with --watch. Exits 1 when there is nothing to monitor (no driver).",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object (JSON lines with --watch)")
    parser.add_argument("--watch", action="store_true", help="refresh every --interval seconds until Ctrl-C")
    parser.add_argument(
        "--demo", action="store_true", default=argparse.SUPPRESS, help="use the simulated GPUs (SIMULATED)"
    )
    add_demo_gpus_option(parser, after_command=True)
    parser.add_argument(
        "--interval",
        type=interval_seconds,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help=f"refresh interval for --watch (default 1, minimum {MIN_INTERVAL_SECONDS})",
    )
    parser.add_argument(
        "--window",
        type=window_seconds,
        default=DEFAULT_WINDOW_SECONDS,
        metavar="SECONDS",
        help="one-shot: when a reading needs confirming (a GPU at 0 %% while a TensorFlow process holds its "
        "memory, TensorFlow on the CPU, an efficiency diagnosis), keep sampling this long before answering; "
        "the diagnoses then rest on that window (default 2; 0: never)",
    )
    parser.set_defaults(func=run)


def window_seconds(text: str) -> float:
    """Parse --window: a number of seconds from 0 to 60."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 60:
        raise argparse.ArgumentTypeError(f"must be between 0 and 60 s (got {value})")
    return value


def _num(value: float | None, fmt: str = ".0f", na: str = "N/A") -> str:
    return na if value is None else format(value, fmt)


def device_line(device: DeviceSample) -> str:
    """One gpustat-like line for a GPU."""
    if device.lost:
        return f"[{device.index}] {device.name:<24} | ((GPU is lost))"
    memory = f"{_num(device.memory_used_mib):>6} / {_num(device.memory_total_mib):>6} MiB"
    zero = "" if device.zero_util_seconds is None else f" (0 % over {device.zero_util_seconds:.0f} s)"
    power = f"{_num(device.power_w)} / {_num(device.power_limit_w)} W"
    fan = f"fan {_num(device.fan_percent)}{'' if device.fan_percent is None else ' %'}"
    load = f"{_num(device.temperature_c):>3}°C {_num(device.utilization_percent):>3} %"
    return (
        f"[{device.index}] {device.name:<24} | {load} | {memory} | {power:>13} | {fan} | "
        f"SM {_num(device.sm_clock_mhz)} MHz | "
        f"P{_num(device.performance_state, 'd', '?')}{zero}"
    )


def activity_line(activity: Activity | None, indent: str = "    ") -> list[str]:
    """What GPM measured (SM, tensor, DRAM, FP32/FP16, PCIe), or why it could not; nothing where the source
    does not read it or GPM has its first sample only."""
    if activity is None or activity.measuring:
        return []
    if activity.sm_active is None and activity.basis == "none":
        return [f"{indent}SM activity: {activity.why_none}"]

    def pct(value: float | None) -> str:
        return _num(value) + ("" if value is None else " %")

    pcie = f"{_num(activity.pcie_tx_mib_s)}/{_num(activity.pcie_rx_mib_s)} MiB/s"
    return [
        f"{indent}activity (GPM): SM {pct(activity.sm_active)} (occupancy {pct(activity.sm_occupancy)}), "
        f"tensor {pct(activity.tensor_active)} (HMMA {pct(activity.hmma_active)}), DRAM "
        f"{pct(activity.dram_active)}, FP32 {pct(activity.fp32_active)}, FP16 {pct(activity.fp16_active)}, "
        f"PCIe TX/RX {pcie}"
    ]


def link_line(device: DeviceSample) -> list[str]:
    """The clock event reasons now and the PCIe link against its maximum, where NVML gives them."""
    from tfgpu_tui.gpu.clock_events import names

    parts = []
    if device.clock_events is not None:
        parts.append(f"clock events: {', '.join(names(device.clock_events)) or 'none'}")
    if device.throttled_percent is not None:
        parts.append(f"throttled {device.throttled_percent:.0f} % of the busy time")
    if device.pcie_gen is not None and device.pcie_width is not None:
        top = f" of Gen{_num(device.pcie_max_gen, 'd', '?')} x{_num(device.pcie_max_width, 'd', '?')}"
        parts.append(f"PCIe Gen{device.pcie_gen} x{device.pcie_width}{top}")
    return [f"    {'; '.join(parts)}"] if parts else []


def mig_lines(device: DeviceSample) -> list[str]:
    """A GPU in MIG mode: why its utilisation (and, unprivileged, memory) is not shown, then one line per MIG
    device: its label, profile, instance IDs, memory and UUID (what CUDA_VISIBLE_DEVICES takes)."""
    if not device.mig_mode:
        return []
    why = "    MIG mode: NVML reports no utilisation in MIG mode"
    if device.memory_used_mib is None:
        why += "; the whole GPU's memory needs privileges: each MIG device's is below"
    return [why] + [
        line for mig in device.mig_devices for line in (mig_line(mig), *activity_line(mig.activity))
    ]


def mig_line(mig: MigDevice) -> str:
    """One MIG device of a GPU in MIG mode."""
    if mig.lost:
        return f"  [{mig.label}] MIG {mig.profile or mig.name:<17} | ((MIG device is lost))"
    memory = f"{_num(mig.memory_used_mib):>6} / {_num(mig.memory_total_mib):>6} MiB"
    ids = f"GI {_num(mig.gpu_instance_id, 'd', '?')} CI {_num(mig.compute_instance_id, 'd', '?')}"
    return f"  [{mig.label}] MIG {mig.profile or mig.name:<17} | {ids:<9} | {memory} | {mig.uuid or 'N/A'}"


def process_command(row: ProcessRow) -> str:
    """The command column, in the words of the Monitor's table (`[TF]` marks TensorFlow here: no column)."""
    from tfgpu_tui.gpu.command_column import command_words

    return command_words(row, tensorflow_mark=True)


def process_line(row: ProcessRow) -> str:
    """One row of the process table."""
    gpu = "cpu" if row.gpu_index is None else row.device_label
    memory = ("≈" if row.memory_estimated else "") + _num(row.gpu_memory_mib, ".0f", "-")
    pid = "-" if row.local_pid is None else str(row.pid)
    return (
        f"{gpu:>4} {pid:>8} {(row.user or '-')[:10]:<10} {memory:>8} "
        f"{_num(row.sm_percent, '.0f', '-'):>4} {_num(row.cpu_percent, '.0f', '-'):>5} "
        f"{_num(row.host_memory_mib, '.0f', '-'):>8} {running_text(row.running_seconds, '-'):>8}  "
        f"{process_command(row)}"
    )


def render(snapshot: Snapshot) -> str:
    """The whole report as text."""
    driver = snapshot.driver
    head = f"{os.uname().nodename}  {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(snapshot.timestamp))}"
    if driver:
        head += f"  driver {driver.driver_version or '?'}  CUDA {driver.cuda_driver_version or '?'}"
    if snapshot.simulated:
        head += "  [SIMULATED]"
    lines = [head]
    if snapshot.error:
        lines += [f"No GPU to monitor: {snapshot.error.message}", f"  fix: {snapshot.error.fix}"]
    for device in snapshot.devices:
        lines += [
            device_line(device),
            *activity_line(device.activity),
            *link_line(device),
            *mig_lines(device),
        ]
    if snapshot.host:
        host = snapshot.host
        lines.append(
            f"host: CPU {host.cpu_percent:.0f} % of {host.cpu_count} cores, "
            f"memory {host.memory_used_mib:.0f} / {host.memory_total_mib:.0f} MiB"
        )
    if snapshot.processes:
        lines.append(TABLE_HEADER)
        lines += [process_line(p) for p in snapshot.processes]
    for alert in snapshot.alerts:
        if alert.kind != AlertKind.NO_GPU:
            lines += [f"! {alert.message}", f"  fix: {alert.fix}"]
    return "\n".join(lines)


def _wait(seconds: float) -> None:
    """Sleep between refreshes (a seam for tests)."""
    time.sleep(seconds)


def needs_confirming(snapshot: Snapshot) -> bool:
    """Whether a reading is suspicious but not yet an alert: a GPU at 0 % while TensorFlow holds its memory,
    or TensorFlow on the CPU (both must last a moment before they mean anything)."""
    flagged = {alert.subject for alert in snapshot.alerts if alert.kind == AlertKind.CPU_FALLBACK}
    if any(d.zero_util_seconds is not None and f"GPU {d.index}" not in flagged for d in snapshot.devices):
        return True
    return any(
        row.gpu_index is None
        and row.tensorflow_loaded
        and not row.own_child
        and f"PID {row.pid}" not in flagged
        for row in snapshot.processes
    )


def gpm_gap(snapshot: Snapshot) -> float:
    """How long to wait before the next sample so that GPM has two samples far enough apart: 0 where no GPU
    is measuring GPM."""
    from tfgpu_tui.gpu.nvml import GPM_MIN_SECONDS

    activities = [d.activity for d in snapshot.devices] + [
        m.activity for d in snapshot.devices for m in d.mig_devices
    ]
    return GPM_MIN_SECONDS + 0.01 if any(a is not None and a.measuring for a in activities) else 0.0


def _take_confirmed(sampler: Sampler, window: float, baseline: CpuBaseline) -> tuple[Snapshot, float]:
    """One-shot: a sample, then another once the CPU window opened by `baseline` has passed, then more
    until `window` after the first only while a reading needs confirming. Returns the snapshot and the
    seconds spent since the baseline."""
    started = time.monotonic() - max(0.0, time.time() - baseline.taken)
    first = sampler.sample()
    deadline = time.monotonic() + window  # the rules' clock started with that sample
    gpm = gpm_gap(first)
    _wait(max(0.0, started + CPU_WINDOW_SECONDS + 0.01 - time.monotonic(), gpm))  # 0.01: the clocks differ
    snapshot = sampler.sample()
    while (needs_confirming(snapshot) or sampler.efficiency.pending) and time.monotonic() < deadline:
        _wait(min(CONFIRM_STEP_SECONDS, max(0.0, deadline - time.monotonic())) + 0.01)
        snapshot = sampler.sample()
    return snapshot, time.monotonic() - started


def run(args: argparse.Namespace) -> int:
    """Print the report once, or until Ctrl-C with --watch; 1 when there is nothing to monitor."""
    # One-shot: the CPU window opens before the sampler and NVML load, so their loading is not waited for.
    baseline = None if args.watch else take_baseline()
    from tfgpu_tui.gpu.sampler import Sampler

    settings: Settings = settings_from_args(args)
    window = getattr(args, "window", DEFAULT_WINDOW_SECONDS)
    if not args.watch:  # a one-shot answer cannot wait 15 s: the window is the evidence, and it says so
        settings.fallback_seconds = min(settings.fallback_seconds, window)
        settings.efficiency_minutes = min(settings.efficiency_minutes, window / 60)
    host = None
    if not settings.demo:
        from tfgpu_tui.gpu.processes import HostInspector

        # one-shot: Jupyter and the CPU scan answer inline
        host = HostInspector(background=args.watch, cpu_baseline=baseline)
    sampler = Sampler(settings, host=host)
    if args.watch:
        return watch(args, settings, sampler)
    assert baseline is not None
    try:
        snapshot, spent = _take_confirmed(sampler, window, baseline)
        print(report_text(snapshot, args.json, spent), flush=True)
        return 1 if snapshot.error is not None else 0
    finally:
        sampler.close()


def report_text(snapshot: Snapshot, as_json: bool, spent: float | None = None) -> str:
    """The report of one snapshot: JSON (one line with --watch, indented once), or the table; `spent`: the
    one-shot's sampling seconds."""
    if as_json:
        import json  # loaded after the CPU baseline, as everything else the report needs

        from tfgpu_tui.gpu.report import snapshot_dict

        data = snapshot_dict(snapshot)
        if spent is not None:
            data["sampled_seconds"] = round(spent, 2)
        return json.dumps(data, indent=None if spent is None else 2)
    text = render(snapshot)
    if sys.stdout.isatty():  # one line per row on a terminal; pipes get the full commands
        import shutil  # honours $COLUMNS

        width = shutil.get_terminal_size().columns
        text = "\n".join(line[:width] for line in text.split("\n"))
        text = (CLEAR_SCREEN if spent is None else "") + text
    return text


def watch(args: argparse.Namespace, settings: Settings, sampler: Sampler) -> int:
    """--watch: print each snapshot of a SnapshotFeed (gpu/feed.py), one every --interval seconds, until
    Ctrl-C; 1 once there is nothing to monitor. The feed's first snapshot only opens the CPU window: the
    first printed is taken CPU_WINDOW_SECONDS later."""
    import queue

    from tfgpu_tui.gpu.feed import FeedUpdate, SnapshotFeed

    snapshots: queue.Queue[Snapshot] = queue.Queue(maxsize=WATCH_QUEUE)

    def receive(update: FeedUpdate) -> None:
        with contextlib.suppress(queue.Full):  # a stalled terminal skips snapshots rather than keep them
            snapshots.put_nowait(update.snapshot)

    feed = SnapshotFeed(settings, sampler=sampler)
    feed.subscribe(receive, period=settings.interval)
    feed.start()
    try:
        snapshot = snapshots.get()
        if snapshot.error is None:
            _wait(CPU_WINDOW_SECONDS)
            feed.sample_soon()
            snapshot = snapshots.get()
        while True:
            print(report_text(snapshot, args.json), flush=True)
            if snapshot.error is not None:
                return 1
            snapshot = snapshots.get()
    finally:
        feed.close()  # it closes the Sampler
