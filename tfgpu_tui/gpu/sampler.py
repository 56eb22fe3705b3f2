"""The Sampler: one per app. Each ``sample()`` reads the GPUs, adds host details, records history and
evaluates the alert rules into one Snapshot; ``kill()`` is the safe kill with freed-memory confirmation."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from tfgpu_tui.alerts import Alert, AlertKind, Severity
from tfgpu_tui.gpu.alert_rules import AlertRules
from tfgpu_tui.gpu.efficiency import Efficiency, Thresholds, diagnosis_alert
from tfgpu_tui.gpu.history import History
from tfgpu_tui.gpu.kill import KillOutcome, KillResult
from tfgpu_tui.gpu.model import Attribution, Diagnosis, HostState, NvmlUnavailable, ProcessRow, Snapshot
from tfgpu_tui.gpu.source import GpuReading, GpuSource, ProcessHost, SignalResult
from tfgpu_tui.probe.record import RecordReader
from tfgpu_tui.serve.policy import signal_refusal
from tfgpu_tui.settings import Settings

CONFIRM_SAMPLES = 3
CONFIRM_DELAY_SECONDS = 0.5

UNRESOLVED_REFUSALS = {
    HostState.ZOMBIE: "PID {pid} is a zombie: it has already exited and only its parent can reap it "
    "(end the parent process instead)",
    HostState.NO_SUCH_PROCESS: "PID {pid} does not exist on this host any more",
    HostState.NO_PERMISSION: "PID {pid} cannot be inspected (no permission), so its identity is unknown",
    HostState.OTHER_NAMESPACE: "NVML's PID {pid} is no process of this container: it is another container's "
    "or the host's, so it is not yours to end here (the provider or the host's administrator can end it)",
}


def source_for(settings: Settings) -> GpuSource:
    """The source the settings ask for: the simulation for the demo, else NVML."""
    if settings.demo:
        from tfgpu_tui.gpu.simulated import SimulatedSource

        return SimulatedSource(gpus=settings.demo_gpus)
    from tfgpu_tui.gpu.nvml import NvmlSource

    return NvmlSource()


def read_gpus(source: GpuSource) -> GpuReading:
    """The source's reading; a source that raises reads as no GPU, with why."""
    try:
        return source.read()
    except Exception as exc:  # a source bug must not take the dashboard down
        return GpuReading(
            NvmlUnavailable(
                "unknown", f"Reading the GPUs failed: {exc}", "Run `nvidia-smi` to check the driver"
            ),
            None,
        )


def error_alerts(reading: GpuReading) -> list[Alert]:
    """Why there is no GPU to monitor, as an alert (none when the GPUs were read)."""
    if reading.error is None:
        return []
    return [Alert(AlertKind.NO_GPU, Severity.WARNING, reading.error.message, reading.error.fix)]


def _row_order(row: ProcessRow) -> tuple:
    return (row.gpu_index is None, row.gpu_index or 0, -(row.gpu_memory_mib or 0.0), row.pid)


class Sampler:
    """Reads a GpuSource (NVML or the simulation) into Snapshots; thread-safe."""

    def __init__(
        self,
        settings: Settings,
        source: GpuSource | None = None,
        host: ProcessHost | None = None,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        """`clock` stamps the snapshots; `timer` measures their cost (tests hand in fixed ones)."""
        if source is None:
            source = source_for(settings)
        self.settings = settings
        self.clock = clock
        self.timer = timer
        self.source = source
        # None: the real host's inspector, created at its first use
        self._host = host if host is not None else source.host
        self._host_lock = threading.Lock()
        self.simulated: bool = source.simulated
        self.history = History()
        self.rules = AlertRules(settings)
        self.efficiency = Efficiency(Thresholds.from_settings(settings), RecordReader())
        if self._host is not None:
            self.rules.own_pid_namespace = self._host.own_pid_namespace
        self.last: Snapshot | None = None
        self._static_alerts: list[Alert] | None = None
        self._lock = threading.Lock()
        self._replay_past()

    def _replay_past(self) -> None:
        """Feed a source's recorded past (the demo's) to the history and the alert rules, so plots start full
        and windowed alerts (input starvation) show from the first frame. Real sources have no past."""
        # every 2 s (the plots cannot show finer at this width; half the start-up cost of 1 s), one point
        # short of the plot window so no replayed point falls off the plot's left edge
        step = max(self.settings.interval, 2.0)
        now = self.clock()
        with contextlib.suppress(Exception):
            for ago, reading, rows in self.source.past_samples(self.history.window_seconds - step, step):
                self.history.add(now - ago, reading.devices)
                self.rules.evaluate(now - ago, reading.devices, rows)

    @property
    def host(self) -> ProcessHost:
        """The processes' host: the source's, one handed in, or the real host's inspector, created (with
        psutil) at its first use, so that a snapshot of the GPUs alone never loads it."""
        with self._host_lock:
            if self._host is None:
                from tfgpu_tui.gpu.processes import HostInspector

                self._host = HostInspector()
                self.rules.own_pid_namespace = self._host.own_pid_namespace
            return self._host

    def series(self, gpu_index: int, metric: str) -> tuple[list[float], list[float]]:
        """A copy of one GPU's recorded series (see History.series), taken under the sampler's lock: a kill's
        confirming sample in another thread may be adding to the history."""
        with self._lock:
            return self.history.series(gpu_index, metric)

    def sample(self) -> Snapshot:
        """Take one snapshot (blocking; call from a worker thread). Never raises."""
        with self._lock:
            started = self.timer()
            reading = read_gpus(self.source)
            rows = self._describe(reading)
            with contextlib.suppress(Exception):
                rows += self.host.cpu_tensorflow({row.pid for row in rows if row.local})
            host = None
            with contextlib.suppress(Exception):
                host = self.host.stats()
            now = self.clock()
            rows.sort(key=_row_order)
            self.history.add(now, reading.devices)
            alerts = self._alerts(reading, now, rows)
            diagnoses = self._diagnoses(reading, now, rows)
            alerts += [diagnosis_alert(d) for d in diagnoses if d.kind != "input_bound"]
            devices, rows = self._with_idle_times(reading, rows)
            snapshot = Snapshot(
                timestamp=now,
                simulated=self.simulated,
                error=reading.error,
                driver=reading.driver,
                devices=devices,
                processes=rows,
                host=host,
                alerts=alerts,
                sample_ms=(self.timer() - started) * 1000,
                diagnoses=diagnoses,
            )
            self.last = snapshot
            return snapshot

    def _with_idle_times(self, reading: GpuReading, rows: list[ProcessRow]) -> tuple[list, list[ProcessRow]]:
        """Devices with their "0 % for N s" and share of busy time throttled, and rows with their "idle N
        min", as the rules last saw them."""
        zero = self.rules.zero_util_seconds
        throttled = self.efficiency.throttled_percent
        devices = [
            replace(d, zero_util_seconds=round(zero[d.index], 1)) if d.index in zero else d
            for d in reading.devices
        ]
        if throttled:
            devices = [replace(d, throttled_percent=throttled.get(d.index)) for d in devices]
        if self.rules.idle_seconds:
            rows = [
                replace(row, idle_seconds=round(idle, 1))
                if (idle := self.rules.idle_for(row)) is not None
                else row
                for row in rows
            ]
        return devices, rows

    def _describe(self, reading: GpuReading) -> list[ProcessRow]:
        try:
            return self.host.describe(reading.processes, reading)
        except Exception:
            return [
                ProcessRow(p.pid, p.gpu_index, p.memory_mib, p.sm_percent, HostState.NO_PERMISSION)
                for p in reading.processes
            ]

    def _diagnoses(self, reading: GpuReading, now: float, rows: list[ProcessRow]) -> list[Diagnosis]:
        """How well the GPUs are used: the starvation rule's input_bound, then the efficiency diagnoses."""
        try:
            watched = [row for row in rows if not row.own_child]
            return self.rules.input_bound + self.efficiency.evaluate(now, reading.devices, watched)
        except Exception:  # a rule's bug must not take the dashboard down
            return []

    def _alerts(self, reading: GpuReading, now: float, rows: list[ProcessRow]) -> list[Alert]:
        alerts = error_alerts(reading)
        try:
            alerts += self.rules.evaluate(now, reading.devices, rows)
        except Exception as exc:
            alerts.append(Alert(AlertKind.INTERNAL, Severity.INFO, f"Alert rules failed: {exc}"))
        if reading.error is None and reading.devices:
            alerts += self._persistence_alerts()
        return alerts

    def _persistence_alerts(self) -> list[Alert]:
        """An INFO alert when persistence mode is off (every NVML call is slower); computed once."""
        if self._static_alerts is None:
            off = [d.index for d in self.source.device_info() if d.persistence_mode is False]
            self._static_alerts = []
            if off:
                gpus = ", ".join(str(i) for i in off)
                self._static_alerts.append(
                    Alert(
                        AlertKind.PERSISTENCE_OFF,
                        Severity.INFO,
                        f"Persistence mode is off on GPU {gpus}: the driver re-initialises between "
                        "uses, which slows start-up and monitoring",
                        "`sudo nvidia-smi -pm 1`, or enable the nvidia-persistenced service",
                    )
                )
        return self._static_alerts

    # -- kill -----------------------------------------------------------------------------------------------
    def kill_refusal(self, row: ProcessRow) -> str | None:
        """Why this process may not be signalled, or None when it may."""
        refusal = signal_refusal(self.settings)  # --readonly, or least privilege without --allow-kill
        if refusal is not None:
            return refusal
        if not row.local:
            return UNRESOLVED_REFUSALS[HostState.OTHER_NAMESPACE].format(pid=row.nvml_pid) + (
                " (which of this GPU's entries are this container's is not known)"
                if row.attribution is Attribution.UNRESOLVED
                else ""
            )
        if row.pid <= 1:
            return f"PID {row.pid} is the init process; ending it would stop the machine or container"
        if row.pid == os.getpid():
            return f"PID {row.pid} is this dashboard"
        if row.host_state in UNRESOLVED_REFUSALS:
            refusal = UNRESOLVED_REFUSALS[row.host_state].format(pid=row.pid)
            if row.host_state is HostState.ZOMBIE and row.parent_pid:
                refusal = refusal.replace("the parent process", f"its parent, PID {row.parent_pid}")
            return refusal
        if row.create_time is None:
            return f"PID {row.pid} has no known start time, so its identity cannot be checked"
        euid = os.geteuid()
        if euid != 0 and row.uid is not None and row.uid != euid:
            return (
                f"PID {row.pid} belongs to {row.user or row.uid}; only root may signal another user's process"
            )
        return None

    def _held(self, snapshot: Snapshot | None, row: ProcessRow) -> dict[str, float | None]:
        """Device (`0`, or `0:2` for a MIG device) -> memory held there by the NVML entries of the row's
        process, in a snapshot. Keyed by NVML's PID, so that an entry attributed to another process after the
        kill still counts as held."""
        if snapshot is None:
            return {}
        local = row.pid if row.local else None
        return {
            r.device_label: r.gpu_memory_mib
            for r in snapshot.processes
            if r.gpu_index is not None and (r.nvml_pid == row.nvml_pid or (r.local and r.pid == local))
        }

    def kill(
        self,
        row: ProcessRow,
        on_progress: Callable[[str], None] | None = None,
        first_signal: signal.Signals = signal.SIGTERM,
    ) -> KillOutcome:
        """Blocking safe kill: identity re-check, `first_signal` (SIGTERM by default), grace, SIGKILL, then
        confirm memory was freed."""
        refusal = self.kill_refusal(row)
        if refusal:
            return KillOutcome(row.pid, KillResult.REFUSED, refusal)
        before = self._held(self.last, row)
        if not before and row.gpu_index is not None:
            before = {row.device_label: row.gpu_memory_mib}
        try:
            outcome = self.host.terminate(row, self.settings.kill_grace_seconds, on_progress, first_signal)
        except Exception as exc:
            return KillOutcome(row.pid, KillResult.ERROR, f"Could not signal PID {row.pid}: {exc}")
        if outcome.result not in (SignalResult.ENDED, SignalResult.STILL_ALIVE):
            result = KillResult(outcome.result.value)  # permission_denied, already_gone, pid_reused, error
            return KillOutcome(row.pid, result, outcome.message, signals_sent=outcome.signals_sent)
        if outcome.result is SignalResult.STILL_ALIVE or not before:
            result = KillResult.STILL_HELD if outcome.result is SignalResult.STILL_ALIVE else KillResult.FREED
            return KillOutcome(row.pid, result, outcome.message, None, outcome.signals_sent)
        if on_progress:
            on_progress(f"PID {row.pid} ended; checking that its GPU memory was freed")
        held = before
        for attempt in range(CONFIRM_SAMPLES):
            if attempt:
                time.sleep(CONFIRM_DELAY_SECONDS)
            held = self._held(self.sample(), row)
            if not held:
                break
        gpus = ", ".join(f"GPU {i}" for i in sorted(before))
        if not held:
            known = [m for m in before.values() if m is not None]
            freed = sum(known) if known else None
            approx = "≈ " if row.memory_estimated else ""
            amount = f"{approx}{freed:.0f} MiB freed" if freed is not None else "memory freed"
            message = f"{outcome.message}; {amount} on {gpus}"
            return KillOutcome(row.pid, KillResult.FREED, message, freed, outcome.signals_sent)
        return KillOutcome(
            row.pid, KillResult.STILL_HELD, self._still_held_message(row, outcome.message, held), None,
            outcome.signals_sent,
        )  # fmt: skip

    def _still_held_message(self, row: ProcessRow, ended: str, held: dict[str, float | None]) -> str:
        """Why the memory was not freed, plainly: the attribution may have been wrong, or another process
        (a forked child) still holds the GPU's device file; those holders are named."""
        gpus = ", ".join(f"GPU {i}" for i in sorted(held))
        known = [m for m in held.values() if m is not None]
        amount = f"{sum(known):.0f} MiB" if known else "memory"
        entry = f"NVML's PID {row.nvml_pid}" if row.host_pid is not None else "it"
        message = f"{ended}, but {gpus} still lists {amount} for {entry}"
        gpu_indices = sorted({int(label.split(":")[0]) for label in held})
        holders = [h for gpu in gpu_indices for h in self.host.holders_of(gpu)]
        if row.attribution is not None and row.attribution is not Attribution.NVML:
            message += (
                f": the process ended was only {'probably' if row.attribution.guess else 'by elimination'} "
                "that entry, so the attribution was wrong or another process holds the memory"
            )
        if holders:
            named = ", ".join(f"PID {h.pid} ({(h.command or '?')[:40]})" for h in holders)
            message += f"; still holding the GPU's device file here: {named} (a forked child keeps memory)"
        elif row.attribution is None:
            message += " (the driver may need a moment, or an unreaped child still holds the context)"
        else:
            message += "; no process here holds the GPU's device file any more (the driver may need a moment)"
        return message

    def close(self) -> None:
        """Release NVML and caches."""
        with contextlib.suppress(Exception):
            self.source.close()
        if self._host is not None:
            with contextlib.suppress(Exception):
                self._host.close()
