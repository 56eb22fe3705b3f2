"""Prometheus series (from the HTTP API or a scraped exporter) back into per-host snapshots."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.export import names
from tfgpu_tui.fleet.hosts import TrainingSummary
from tfgpu_tui.gpu.model import (
    Attribution,
    DeviceSample,
    HostState,
    HostStats,
    JupyterKernel,
    MigDevice,
    ProcessRow,
    Snapshot,
)

# one sample: metric name, labels, value
Sample = tuple[str, dict[str, str], float]
_DEVICE_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": "utilization_percent",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "memory_util_percent",
    "DCGM_FI_DEV_FB_USED": "memory_used_mib",
    "DCGM_FI_DEV_FB_FREE": "memory_free_mib",
    "DCGM_FI_DEV_GPU_TEMP": "temperature_c",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "energy_mj",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz",
    "DCGM_FI_DEV_MEM_CLOCK": "mem_clock_mhz",
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": "pcie_tx_kbs",
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": "pcie_rx_kbs",
    names.GPU_MEMORY_TOTAL: "memory_total_mib",
    names.GPU_POWER_LIMIT: "power_limit_w",
}
_PROCESS_FIELDS = {
    names.PROCESS_GPU_MEMORY: "gpu_memory_mib",
    names.PROCESS_SM: "sm_percent",
    names.PROCESS_CPU: "cpu_percent",
}
_TRAINING_FIELDS = {
    "tfgpu_training_epoch": "epoch",
    "tfgpu_training_epochs": "total_epochs",
    "tfgpu_training_step": "step",
    "tfgpu_training_steps": "total_steps",
    "tfgpu_training_loss": "loss",
    "tfgpu_training_eta_seconds": "eta_seconds",
    "tfgpu_training_samples_per_second": "samples_per_second",
    "tfgpu_training_finished": "finished",
}
_WHOLE = {"epoch", "total_epochs", "step", "total_steps"}
OTHER_COMMAND = "other processes (summed)"
_OTHERS = (
    names.EXPORTER_INFO, names.UP, names.NVML_UNAVAILABLE, names.HOST_CPU, names.HOST_CPU_COUNT,
    names.HOST_MEMORY_USED, names.HOST_MEMORY_TOTAL, names.ALERT, names.TRAINING_METRIC,
)  # fmt: skip
# every metric the decoder reads: readers may skip the rest before parsing their lines
DECODED = (*_DEVICE_FIELDS, *_PROCESS_FIELDS, *_TRAINING_FIELDS, *_OTHERS)


@dataclass
class HostSeries:
    """The series of one host, sorted by kind while decoding."""

    hostname: str = ""
    simulated: bool = False
    driver: str = ""
    up: bool | None = None
    unavailable: str = ""
    devices: dict[int, dict] = field(default_factory=dict)
    processes: dict[tuple[str, str, str], dict] = field(default_factory=dict)  # by (gpu, pid, host_pid)
    host: dict[str, float] = field(default_factory=dict)
    alerts: list[Alert] = field(default_factory=list)
    training: dict[str, dict] = field(default_factory=dict)
    seen: bool = False

    def add(self, name: str, labels: dict[str, str], value: float) -> None:
        """File one sample."""
        self.seen = True
        if name in _DEVICE_FIELDS:
            self._device(name, labels, value)
        elif name in _PROCESS_FIELDS:
            key = (labels.get("gpu", ""), labels.get("pid", ""), labels.get("host_pid", ""))
            self.processes.setdefault(key, {"labels": labels})[_PROCESS_FIELDS[name]] = value
        elif name == names.EXPORTER_INFO:
            self.hostname = labels.get("Hostname", "")
            self.simulated = labels.get("simulated") == "true"
            self.driver = labels.get("driver_version", "")
        elif name == names.UP:
            self.up = value == 1
        elif name == names.NVML_UNAVAILABLE:
            self.unavailable = labels.get("reason", "no GPU")
        elif name in (names.HOST_CPU, names.HOST_CPU_COUNT, names.HOST_MEMORY_USED, names.HOST_MEMORY_TOTAL):
            self.host[name] = value
        elif name == names.ALERT and value == 1:
            self.alerts.append(_alert(labels))
        elif name in _TRAINING_FIELDS:
            self.training.setdefault(labels.get("log", ""), {})[_TRAINING_FIELDS[name]] = value
        elif name == names.TRAINING_METRIC:
            entry = self.training.setdefault(labels.get("log", ""), {})
            entry.setdefault("metrics", {})[labels.get("metric", "")] = value

    def _device(self, name: str, labels: dict[str, str], value: float) -> None:
        try:
            index = int(labels.get("gpu", ""))
        except ValueError:
            return
        entry = self.devices.setdefault(index, {"name": labels.get("modelName", f"GPU {index}")})
        instance = labels.get("GPU_I_ID", "")
        if instance.isdigit():  # a MIG device's memory (one series per GPU instance)
            migs = entry.setdefault("mig", {})
            mig = migs.setdefault(int(instance), {"profile": labels.get("GPU_I_PROFILE", "")})
            mig[_DEVICE_FIELDS[name]] = value
            return
        entry[_DEVICE_FIELDS[name]] = value

    def snapshot(self, timestamp: float) -> Snapshot:
        """The Monitor's Snapshot of this host (processes beyond the top N are one "other" row per GPU)."""
        devices = [_device_sample(index, fields) for index, fields in sorted(self.devices.items())]
        processes = [_process_row(entry) for entry in self.processes.values()]
        processes.sort(
            key=lambda r: (r.gpu_index is None, r.gpu_index or 0, r.pid == 0, -(r.gpu_memory_mib or 0.0))
        )  # each GPU's "other" bucket after its named processes
        host = None
        if names.HOST_CPU in self.host:
            host = HostStats(
                self.host.get(names.HOST_CPU, 0.0),
                int(self.host.get(names.HOST_CPU_COUNT, 0)),
                self.host.get(names.HOST_MEMORY_USED, 0.0),
                self.host.get(names.HOST_MEMORY_TOTAL, 0.0),
            )
        alerts = sorted(self.alerts, key=lambda a: a.severity, reverse=True)
        return Snapshot(timestamp, self.simulated, None, None, devices, processes, host, alerts)

    def summaries(self) -> tuple[TrainingSummary, ...]:
        """Each followed log's progress."""
        out = []
        for log, values in sorted(self.training.items()):
            kwargs = {
                k: (int(v) if k in _WHOLE else v)
                for k, v in values.items()
                if k not in ("metrics", "finished")
            }
            out.append(
                TrainingSummary(
                    log, finished=values.get("finished") == 1, metrics=values.get("metrics", {}), **kwargs
                )
            )
        return tuple(out)


def _alert(labels: dict[str, str]) -> Alert:
    severity = Severity.__members__.get(labels.get("severity", "").upper(), Severity.INFO)
    kind = labels.get("kind", "")
    subject = labels.get("subject", "")
    message = kind.replace("_", " ") + (f": {subject}" if subject else "")
    return Alert(kind, severity, message, subject=subject)


def _mig_devices(index: int, name: str, migs: dict[int, dict]) -> tuple[MigDevice, ...]:
    """A host's MIG devices from their series: one per GPU instance, in the order of their IDs."""
    found = []
    for position, (instance, fields) in enumerate(sorted(migs.items())):
        used, free = fields.get("memory_used_mib"), fields.get("memory_free_mib")
        total = used + free if used is not None and free is not None else None
        profile = fields.get("profile") or None
        found.append(MigDevice(index, position, f"{name} MIG {profile or '?'}", profile, None, instance, None,
                               used, total))  # fmt: skip
    return tuple(found)


def _device_sample(index: int, fields: dict) -> DeviceSample:
    migs = _mig_devices(index, fields["name"], fields.get("mig", {}))
    values = {k: v for k, v in fields.items() if k not in ("name", "mig")}
    base = {k: values.pop(k, None) for k in ("utilization_percent", "memory_used_mib", "memory_total_mib")}
    if (
        base["memory_total_mib"] is None
        and base["memory_used_mib"] is not None
        and "memory_free_mib" in values
    ):
        base["memory_total_mib"] = base["memory_used_mib"] + values["memory_free_mib"]
    return DeviceSample(
        mig_mode=bool(migs),
        mig_devices=migs,
        index=index,
        name=fields["name"],
        temperature_c=values.pop("temperature_c", None),
        power_w=values.pop("power_w", None),
        power_limit_w=values.pop("power_limit_w", None),
        fan_percent=None,
        sm_clock_mhz=values.pop("sm_clock_mhz", None),
        performance_state=None,
        **base,
        **values,
    )


def _process_row(entry: dict) -> ProcessRow:
    labels = entry["labels"]
    gpu = labels.get("gpu", "")
    pid_text = labels.get("pid", "")
    other = pid_text == names.OTHER
    notebook = labels.get("notebook", "")
    parent, _, mig = gpu.partition(":")  # "0:2": MIG device 2 of GPU 0
    host_pid_text = labels.get("host_pid", "")
    host_pid = int(host_pid_text) if host_pid_text.isdigit() else None
    try:
        attribution = Attribution(labels.get("attribution", "")) if labels.get("attribution") else None
    except ValueError:
        attribution = None
    if attribution is Attribution.NVML and host_pid is None:
        attribution = None  # NVML's PID is the process's own: as on a host
    foreign = attribution is not None and not attribution.local
    pid = int(pid_text) if pid_text.isdigit() else (host_pid if foreign and host_pid is not None else 0)
    return ProcessRow(
        pid=pid,
        gpu_index=int(parent) if parent.isdigit() else None,
        mig_index=int(mig) if parent.isdigit() and mig.isdigit() else None,
        gpu_memory_mib=entry.get("gpu_memory_mib"),
        sm_percent=entry.get("sm_percent"),
        host_state=HostState.OTHER_NAMESPACE if foreign else HostState.OK,
        attribution=attribution,
        host_pid=host_pid,
        user=labels.get("user") or None,
        command=OTHER_COMMAND if other else labels.get("command") or None,
        cpu_percent=entry.get("cpu_percent"),
        jupyter=JupyterKernel("", notebook) if notebook else None,
    )


def group_by_instance(samples: Iterable[tuple[str, dict[str, str], float]]) -> dict[str, HostSeries]:
    """Samples from Prometheus (each with its ``instance`` label) filed per host; NaN values are skipped
    except for training metrics (a NaN loss is news)."""
    hosts: dict[str, HostSeries] = {}
    for name, labels, value in samples:
        if math.isnan(value) and not name.startswith(names.TRAINING_PREFIX):
            continue
        instance = labels.get("instance", "")
        hosts.setdefault(instance, HostSeries()).add(name, labels, value)
    return hosts
