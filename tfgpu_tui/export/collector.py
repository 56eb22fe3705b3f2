"""The exporter's core: samples GPUs (extended NVML source), follows training logs, and turns the latest state
into Prometheus metric families with dcgm-exporter names plus ``tfgpu_`` series (a prometheus-client
collector). A SnapshotFeed (gpu/feed.py) samples every interval and a LogFeed (training/feed.py) follows the
logs; each snapshot is stored beside the logs' latest states, and a scrape formats that."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry

from tfgpu_tui import __version__
from tfgpu_tui.alerts import Alert, AlertKind
from tfgpu_tui.export import names
from tfgpu_tui.export.efficiency_series import device_families, diagnosis_families, prof_families
from tfgpu_tui.export.process_series import DEFAULT_TOP, process_series
from tfgpu_tui.export.training_series import last_epoch_metrics, training_values
from tfgpu_tui.gpu.feed import FeedUpdate, SnapshotFeed
from tfgpu_tui.gpu.model import DeviceInfo, DeviceSample, MigDevice, Snapshot
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.checkpoints import CheckpointPolicy
from tfgpu_tui.training.feed import LogFeed, LogSpec
from tfgpu_tui.training.log_state import LogState


@dataclass(frozen=True)
class ExportState:
    """What one sample knew: the GPU snapshot, static GPU facts and each followed log."""

    snapshot: Snapshot | None = None
    device_info: tuple[DeviceInfo, ...] = ()
    logs: tuple[LogState, ...] = ()
    nvml_errors: dict[str, int] = field(default_factory=dict)
    sampled_at: float = 0.0  # time.monotonic() of the sample


def is_unsupported(reason: str) -> bool:
    """A permanent 'this GPU or driver cannot tell' (not an error to count)."""
    return reason.startswith(("not supported", "not offered", "needs more privileges"))


def count_errors(snapshot: Snapshot, errors: Counter[str]) -> None:
    """Add this sample's NVML errors by kind: the start-up failure's kind, else each failed field."""
    if snapshot.error is not None:
        errors[snapshot.error.kind] += 1
        return
    for device in snapshot.devices:
        if device.lost:
            errors["gpu_is_lost"] += 1
            continue
        for name, reason in device.unavailable.items():
            if not is_unsupported(reason):
                errors[name] += 1


class Exporter:
    """One host's exporter state (thread-safe) and a prometheus-client collector over it."""

    def __init__(
        self,
        settings: Settings,
        sampler: Sampler | None = None,
        logs: list[Path] | None = None,
        hostname: str | None = None,
        top_processes: int = DEFAULT_TOP,
        pids: Collection[int] | None = None,
    ) -> None:
        """`pids`: the local processes looked at for TensorFlow on the CPU (every one of the host by default;
        the GPU processes are those NVML lists). Ignored with a `sampler` or in the demo."""
        if sampler is None:
            source, host = None, None
            if not settings.demo:
                from tfgpu_tui.gpu.nvml import NvmlSource
                from tfgpu_tui.gpu.processes import HostInspector
                from tfgpu_tui.proc.facts import PsutilFacts

                source = NvmlSource(extended=True)
                host = None if pids is None else HostInspector(facts=PsutilFacts(pids))
            sampler = Sampler(settings, source, host)
        self.settings = settings
        self.sampler = sampler
        self.hostname = hostname or socket.gethostname()
        self.top_processes = top_processes
        policy = CheckpointPolicy(settings.checkpoint_max_epochs, settings.checkpoint_max_minutes)
        self.log_specs = [LogSpec(path, settings.checkpoints_dir, policy) for path in logs or []]
        self.log_feed = LogFeed(poll_seconds=settings.interval)  # its thread runs from `start`
        for spec in self.log_specs:
            self.log_feed.follow(spec)
        self.scrape_seconds: float | None = None  # the previous scrape's formatting time (set by the server)
        self._errors: Counter[str] = Counter()
        self._state = ExportState()
        self._lock = threading.Lock()
        self._feed: SnapshotFeed | None = None  # the sampling thread, once started

    # -- sampling ------------------------------------------------------------------------------------------
    def sample_once(self) -> ExportState:
        """Sample the GPUs now, outside the feed, and read the logs (for a one-off state without `start`)."""
        self.log_feed.refresh()
        return self._receive(self.sampler.sample())

    def _receive(self, snapshot: Snapshot) -> ExportState:
        """The logs' latest states beside a new snapshot; the new state is what the next scrape reports."""
        count_errors(snapshot, self._errors)
        logs = tuple(s for s in map(self.log_feed.latest, self.log_specs) if s is not None)
        info = tuple(self.sampler.source.device_info()) if snapshot.error is None else ()
        state = ExportState(snapshot, info, logs, dict(self._errors), time.monotonic())
        with self._lock:
            self._state = state
        return state

    def start(self) -> None:
        """Subscribe to a SnapshotFeed over this exporter's Sampler, one snapshot every `settings.interval`
        seconds; returns once the first state is there, so the first scrape has GPUs."""
        first = threading.Event()

        def receive(update: FeedUpdate) -> None:
            try:
                self._receive(update.snapshot)
            finally:
                first.set()

        self.log_feed.refresh()  # the first state has the logs too
        self.log_feed.start()
        self._feed = SnapshotFeed(self.settings, sampler=self.sampler)
        self._feed.subscribe(receive, period=self.settings.interval)
        self._feed.start()
        first.wait()

    def close(self) -> None:
        """Stop sampling; release NVML and the log files."""
        if self._feed is not None:
            self._feed.close()  # it closes the Sampler
        else:
            self.sampler.close()
        self.log_feed.close()

    @property
    def state(self) -> ExportState:
        with self._lock:
            return self._state

    # -- prometheus-client collector -------------------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        """Every family for the latest state (called by prometheus-client on each scrape)."""
        state = self.state
        snapshot = state.snapshot
        yield from self._health(state)
        if snapshot is None:
            return
        if snapshot.error is None:
            yield from dcgm_families(snapshot.devices, state.device_info, self.hostname)
            labels = dcgm_labels(snapshot.devices, state.device_info, self.hostname)
            yield from prof_families(snapshot.devices, labels)
            yield from device_families(snapshot.devices, labels)
            yield from self._gpu_extras(snapshot, state.device_info)
        yield from diagnosis_families(snapshot.diagnoses)
        yield from self._host(snapshot)
        yield from self._processes(snapshot)
        yield from self._alerts(snapshot.alerts, state.logs)
        yield from self._training(state.logs)

    def _health(self, state: ExportState) -> Iterator[Metric]:
        snapshot = state.snapshot
        info = GaugeMetricFamily(
            names.EXPORTER_INFO,
            "tfgpu-tui exporter: version, host, driver; 1.",
            labels=["version", "Hostname", "simulated", "driver_version", "cuda_driver_version"],
        )
        driver = snapshot.driver if snapshot else None
        info.add_metric(
            [
                __version__,
                self.hostname,
                str(bool(snapshot and snapshot.simulated)).lower(),
                (driver.driver_version or "") if driver else "",
                (driver.cuda_driver_version or "") if driver else "",
            ],
            1.0,
        )
        yield info
        ready = snapshot is not None and snapshot.error is None
        yield GaugeMetricFamily(names.UP, "1 when the GPUs could be read on the last sample, else 0.", ready)
        if snapshot is not None and snapshot.error is not None:
            why = GaugeMetricFamily(
                names.NVML_UNAVAILABLE,
                "Why there are no GPU series (no driver ...): 1 with the reason and the fix as labels.",
                labels=["kind", "reason", "fix"],
            )
            why.add_metric([snapshot.error.kind, snapshot.error.message, snapshot.error.fix], 1.0)
            yield why
        errors = CounterMetricFamily(
            names.NVML_ERRORS,
            "NVML errors since start, by failed field or start-up error kind.",
            labels=["kind"],
        )
        for kind, count in sorted(state.nvml_errors.items()):
            errors.add_metric([kind], count)
        yield errors
        if self.scrape_seconds is not None:
            yield GaugeMetricFamily(
                names.SCRAPE_DURATION, "Seconds the previous scrape took to format.", self.scrape_seconds
            )
        if snapshot is not None:
            yield GaugeMetricFamily(
                names.SAMPLE_DURATION, "Seconds the last GPU and host sample took.", snapshot.sample_ms / 1000
            )
            yield GaugeMetricFamily(
                names.SAMPLE_AGE, "Seconds since the last sample.", time.monotonic() - state.sampled_at
            )

    def _gpu_extras(self, snapshot: Snapshot, info: tuple[DeviceInfo, ...]) -> Iterator[Metric]:
        labels = dcgm_labels(snapshot.devices, info, self.hostname)
        yield GaugeMetricFamily(names.GPU_COUNT, "GPUs the driver reports.", len(snapshot.devices))
        total = GaugeMetricFamily(
            names.GPU_MEMORY_TOTAL, "GPU memory (in MiB).", labels=list(names.DCGM_LABELS)
        )
        limit = GaugeMetricFamily(
            names.GPU_POWER_LIMIT, "Enforced power limit (in W).", labels=list(names.DCGM_LABELS)
        )
        unsupported = GaugeMetricFamily(
            names.NVML_UNSUPPORTED,
            "1 for each field this GPU or driver does not report (its DCGM series is omitted).",
            labels=["gpu", "field", "reason"],
        )
        for device in snapshot.devices:
            values = labels[device.index]
            if device.memory_total_mib is not None:
                total.add_metric(values, device.memory_total_mib)
            if device.power_limit_w is not None:
                limit.add_metric(values, device.power_limit_w)
            for name, reason in sorted(device.unavailable.items()):
                if is_unsupported(reason):
                    unsupported.add_metric([str(device.index), name, reason], 1.0)
        yield from (total, limit, unsupported)

    def _host(self, snapshot: Snapshot) -> Iterator[Metric]:
        host = snapshot.host
        if host is None:
            return
        yield GaugeMetricFamily(names.HOST_CPU, "Host CPU busy (in %, all cores).", host.cpu_percent)
        yield GaugeMetricFamily(names.HOST_CPU_COUNT, "Host CPU cores.", host.cpu_count)
        yield GaugeMetricFamily(names.HOST_MEMORY_USED, "Host memory used (in MiB).", host.memory_used_mib)
        yield GaugeMetricFamily(names.HOST_MEMORY_TOTAL, "Host memory (in MiB).", host.memory_total_mib)

    def _processes(self, snapshot: Snapshot) -> Iterator[Metric]:
        labels = list(names.PROCESS_LABELS)
        top = self.top_processes
        memory = GaugeMetricFamily(
            names.PROCESS_GPU_MEMORY,
            f'GPU memory a process holds (in MiB); the top {top} per GPU, the rest summed as pid="other".',
            labels=labels,
        )
        sm = GaugeMetricFamily(names.PROCESS_SM, "A process's SM utilization (in %).", labels=labels)
        cpu = GaugeMetricFamily(
            names.PROCESS_CPU,
            'A process\'s CPU use (in % of one core); gpu="cpu": TensorFlow on the CPU.',
            labels=labels,
        )
        for row in process_series(snapshot.processes, top):
            for family, value in ((memory, row.gpu_memory_mib), (sm, row.sm_percent), (cpu, row.cpu_percent)):
                if value is not None:
                    family.add_metric(list(row.labels), value)
        stale = GaugeMetricFamily(
            names.PROCESS_STALE_VRAM,
            "GPU memory held by a process the stale-VRAM alert names (idle for a long time), in MiB.",
            labels=labels,
        )
        stale_pids = {a.subject for a in snapshot.alerts if a.kind == AlertKind.STALE_VRAM}
        flagged = [r for r in snapshot.processes if f"PID {r.pid}" in stale_pids and r.gpu_index is not None]
        for row in process_series(flagged, len(flagged)):
            if row.gpu_memory_mib is not None:
                stale.add_metric(list(row.labels), row.gpu_memory_mib)
        yield from (memory, sm, cpu, stale)

    def _alerts(self, alerts: list[Alert], logs: tuple[LogState, ...]) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            names.ALERT,
            "1 for each active alert, by kind, severity and subject.",
            labels=list(names.ALERT_LABELS),
        )
        seen: set[tuple[str, str, str]] = set()
        every = list(alerts) + [p.to_alert(str(log.path)) for log in logs for p in log.problems]
        for alert in every:
            key = (alert.kind, alert.severity.name.lower(), alert.subject)
            if key not in seen:
                seen.add(key)
                family.add_metric(list(key), 1.0)
        yield family

    def _training(self, logs: tuple[LogState, ...]) -> Iterator[Metric]:
        families: dict[str, GaugeMetricFamily] = {}
        metric = GaugeMetricFamily(
            names.TRAINING_METRIC,
            "The last finished epoch's metrics (loss, val_loss ...).",
            labels=["log", "metric"],
        )
        for log in logs:
            for name, help_text, value in training_values(log):
                if name not in families:
                    families[name] = GaugeMetricFamily(name, help_text, labels=["log"])
                families[name].add_metric([str(log.path)], value)
            for name, value in sorted(last_epoch_metrics(log.run).items()):
                metric.add_metric([str(log.path), name], value)
        yield from families.values()
        yield metric


def dcgm_labels(
    devices: list[DeviceSample], info: tuple[DeviceInfo, ...], hostname: str
) -> dict[int, list[str]]:
    """dcgm-exporter's label values for each GPU index: gpu, UUID, pci_bus_id, device, modelName, Hostname."""
    by_index = {i.index: i for i in info}
    labels: dict[int, list[str]] = {}
    for device in devices:
        static = by_index.get(device.index)
        labels[device.index] = [
            str(device.index),
            (static.uuid or "") if static else "",
            (static.pci_bus_id or "") if static else "",
            f"nvidia{device.index}",
            device.name,
            hostname,
        ]
    return labels


def mig_memory(devices: list[DeviceSample]) -> dict[str, list[tuple[MigDevice, float]]]:
    """FB_USED and FB_FREE per GPU instance of the GPUs in MIG mode (compute instances of one GPU instance
    share its memory: one series each, as dcgm-exporter has)."""
    found: dict[str, list[tuple[MigDevice, float]]] = {"DCGM_FI_DEV_FB_USED": [], "DCGM_FI_DEV_FB_FREE": []}
    for device in devices:
        seen: set[int | None] = set()
        for mig in device.mig_devices:
            if device.lost or mig.lost or mig.memory_used_mib is None or mig.gpu_instance_id in seen:
                continue
            seen.add(mig.gpu_instance_id)
            found["DCGM_FI_DEV_FB_USED"].append((mig, mig.memory_used_mib))
            if mig.memory_total_mib is not None:
                found["DCGM_FI_DEV_FB_FREE"].append((mig, mig.memory_total_mib - mig.memory_used_mib))
    return found


def dcgm_families(
    devices: list[DeviceSample], info: tuple[DeviceInfo, ...], hostname: str
) -> Iterator[Metric]:
    """One family per DCGM field some GPU reported; GPUs that cannot tell a field are left out of it."""
    labels = dcgm_labels(devices, info, hostname)
    label_names = list(names.DCGM_LABELS)
    slices = mig_memory(devices)
    for spec in names.DCGM_FIELDS:
        # a GPU in MIG mode: its memory is its GPU instances' (as dcgm-exporter has it), not the parent's
        readings = [
            (d, getattr(d, spec.attribute))
            for d in devices
            if not d.lost and not (d.mig_mode and spec.name in names.MIG_FIELDS)
        ]
        readings = [(d, v) for d, v in readings if v is not None]
        per_slice = slices.get(spec.name, []) if spec.name in names.MIG_FIELDS else []
        if not readings and not per_slice:
            continue
        family = Metric(spec.name, spec.help, spec.type)
        for device, value in readings:
            family.add_sample(spec.name, dict(zip(label_names, labels[device.index], strict=True)), value)
        for mig, value in per_slice:
            values = dict(zip(label_names, labels[mig.gpu_index], strict=True))
            values.update(GPU_I_PROFILE=mig.profile or "", GPU_I_ID=str(mig.gpu_instance_id))
            family.add_sample(spec.name, values, value)
        yield family
    util = [d for d in devices if not d.lost and d.utilization_percent is not None]
    if util:
        family = Metric(
            names.GR_ENGINE_ACTIVE,
            "Approximation from NVML: DCGM_FI_DEV_GPU_UTIL / 100 (NVML has no profiling counters).",
            "gauge",
        )
        for device in util:
            values = dict(zip(label_names, labels[device.index], strict=True))
            values["approximation"] = "nvml_gpu_util"
            family.add_sample(names.GR_ENGINE_ACTIVE, values, device.utilization_percent / 100)  # type: ignore[operator]
        yield family


def exposition(registry: CollectorRegistry) -> bytes:
    """Prometheus's text format from prometheus-client, with dcgm-exporter's counter names kept as they are
    (prometheus-client would declare them with a ``_total`` suffix their samples do not have)."""
    from prometheus_client.exposition import generate_latest

    text = generate_latest(registry)
    for name in names.DCGM_COUNTERS:
        if name.encode() in text:
            wrong = f"{name}_total ".encode()
            text = text.replace(b"# HELP " + wrong, f"# HELP {name} ".encode())
            text = text.replace(b"# TYPE " + wrong, f"# TYPE {name} ".encode())
    return text


def registry_for(exporter: Exporter) -> CollectorRegistry:
    """A registry holding only this exporter (no process or platform collectors)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(exporter)  # type: ignore[arg-type]
    return registry
