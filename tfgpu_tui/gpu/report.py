"""The `tfgpu-tui gpus --json` report: a Snapshot as plain JSON-ready data."""

from __future__ import annotations

import dataclasses
import socket
from typing import Any

from tfgpu_tui.gpu import clock_events
from tfgpu_tui.gpu.model import Activity, DeviceSample, Diagnosis, ProcessRow, Snapshot, no_activity

NOT_READ = "not read: the simulation (--demo) has no GPM, or the device stopped answering"
ACTIVITY_FIELDS = ("sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp32_active", "fp16_active")


def activity_dict(activity: Activity | None) -> dict[str, Any]:
    """What the SMs, tensor cores and DRAM did (percent, or null), its `basis` ("gpm" or "none") and
    `why_none`; also HMMA and PCIe MiB/s, the window between the two GPM samples and per-metric reasons."""
    return dataclasses.asdict(activity if activity is not None else no_activity(NOT_READ))


def device_dict(device: DeviceSample) -> dict[str, Any]:
    """One GPU's readings; unavailable fields are null and ``unavailable`` says why. `activity` is GPM's,
    `clock_events` the names of the active clock event reasons (null where not readable), `pcie` the link
    now and at most."""
    data = dataclasses.asdict(device)
    data["memory_percent"] = device.memory_percent
    data["activity"] = activity_dict(device.activity)
    events = device.clock_events
    data["clock_events"] = clock_events.names(events) if events is not None else None
    data["pcie"] = {
        "gen": device.pcie_gen,
        "width": device.pcie_width,
        "max_gen": device.pcie_max_gen,
        "max_width": device.pcie_max_width,
    }
    for key in ("pcie_gen", "pcie_width", "pcie_max_gen", "pcie_max_width"):
        del data[key]
    for mig, exported in zip(device.mig_devices, data["mig_devices"], strict=True):
        exported["memory_percent"] = mig.memory_percent
        exported["label"] = mig.label
        exported["activity"] = activity_dict(mig.activity)
    return data


def diagnosis_dict(diagnosis: Diagnosis) -> dict[str, Any]:
    """One diagnosis: `kind`, `gpu_index`, `pid` (or null), `summary`, `basis`, `fix`, and the MIG device and
    number it rests on."""
    return dataclasses.asdict(diagnosis)


def process_dict(row: ProcessRow) -> dict[str, Any]:
    """One process row; ``gpu_index`` is null for a TensorFlow process on the CPU. ``pid`` is the local PID,
    or null for another namespace's entry; ``host_pid`` is NVML's where it differs; ``attribution`` the
    basis of the join (``nvml`` where NVML's PID is the process's own; null on the CPU). A Jupyter kernel's
    ``jupyter`` gives its server's URL (no token), kernel id, notebook and the ``actions`` its server's API
    offers (``shutdown``, ``restart``)."""
    data = dataclasses.asdict(row)
    if row.jupyter is not None:
        data["jupyter"]["actions"] = list(row.jupyter.actions)
    data["host_state"] = row.host_state.value
    data["pid"] = row.local_pid
    data["attribution"] = row.basis
    return data


def snapshot_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The whole snapshot: devices, processes, alerts, error and context."""
    error = snapshot.error
    return {
        "hostname": socket.gethostname(),
        "timestamp": snapshot.timestamp,
        "simulated": snapshot.simulated,
        "driver": dataclasses.asdict(snapshot.driver) if snapshot.driver else None,
        "devices": [device_dict(d) for d in snapshot.devices],
        "processes": [process_dict(p) for p in snapshot.processes],
        "alerts": [a.as_dict() for a in snapshot.alerts],
        "diagnoses": [diagnosis_dict(d) for d in snapshot.diagnoses],
        "error": dataclasses.asdict(error) if error else None,
        "host": dataclasses.asdict(snapshot.host) if snapshot.host else None,
        "sample_ms": round(snapshot.sample_ms, 3),
    }
