"""The `tfgpu-tui gpus --json` report: a Snapshot as plain JSON-ready data."""

from __future__ import annotations

import dataclasses
import socket
from typing import Any

from tfgpu_tui.gpu.model import DeviceSample, ProcessRow, Snapshot


def device_dict(device: DeviceSample) -> dict[str, Any]:
    """One GPU's readings; unavailable fields are null and ``unavailable`` says why."""
    data = dataclasses.asdict(device)
    data["memory_percent"] = device.memory_percent
    for mig, exported in zip(device.mig_devices, data["mig_devices"], strict=True):
        exported["memory_percent"] = mig.memory_percent
        exported["label"] = mig.label
    return data


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
        "error": dataclasses.asdict(error) if error else None,
        "host": dataclasses.asdict(snapshot.host) if snapshot.host else None,
        "sample_ms": round(snapshot.sample_ms, 3),
    }
