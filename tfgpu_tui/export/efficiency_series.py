"""The exporter's efficiency series: GPM readings under dcgm-exporter's profiling names (ratios 0-1, PCIe in
B/s), the clock event reasons, the PCIe link and the diagnoses as ``tfgpu_`` series. A metric a GPU cannot
measure has no series for that GPU (never a 0)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from tfgpu_tui.export import names
from tfgpu_tui.gpu.model import Activity, DeviceSample, Diagnosis


def _measured(devices: list[DeviceSample], labels: dict[int, list[str]]) -> Iterator[tuple[dict, Activity]]:
    """(labels, activity) of each GPU, and in MIG mode of each GPU instance (with dcgm-exporter's labels)."""
    label_names = list(names.DCGM_LABELS)
    for device in devices:
        if device.lost:
            continue
        base = dict(zip(label_names, labels[device.index], strict=True))
        if not device.mig_mode and device.activity is not None:
            yield base, device.activity
        seen: set[int | None] = set()
        for mig in device.mig_devices:
            if mig.lost or mig.activity is None or mig.gpu_instance_id in seen:
                continue
            seen.add(mig.gpu_instance_id)
            yield dict(base, GPU_I_PROFILE=mig.profile or "", GPU_I_ID=str(mig.gpu_instance_id)), mig.activity


def prof_families(devices: list[DeviceSample], labels: dict[int, list[str]]) -> Iterator[Metric]:
    """One family per profiling field some GPU measured; the others are absent."""
    measured = list(_measured(devices, labels))
    for spec in names.PROF_FIELDS:
        family = Metric(spec.name, spec.help, "gauge")
        for series_labels, activity in measured:
            value = getattr(activity, spec.attribute)
            if value is not None:
                family.add_sample(spec.name, series_labels, value * spec.scale)
        if family.samples:
            yield family


def device_families(devices: list[DeviceSample], labels: dict[int, list[str]]) -> Iterator[Metric]:
    """The clock event reasons (bitmask) and the PCIe link now and at most, where the GPU reports them."""
    label_names = list(names.DCGM_LABELS)
    reasons = GaugeMetricFamily(
        names.CLOCKS_EVENT_REASONS,
        "Why the clocks are below their maximum: a bitmask of nvmlClocksEventReason* (4 power cap, 8 "
        "hardware slowdown, 32/64 thermal, 128 power brake; 1 idle).",
        labels=label_names,
    )
    generation = GaugeMetricFamily(
        names.PCIE_LINK_GEN, "PCIe link generation, now and at most.", labels=[*label_names, "link"]
    )
    width = GaugeMetricFamily(
        names.PCIE_LINK_WIDTH, "PCIe link width (lanes), now and at most.", labels=[*label_names, "link"]
    )
    for device in devices:
        if device.lost:
            continue
        values = labels[device.index]
        if device.clock_events is not None:
            reasons.add_metric(values, device.clock_events)
        for family, now, top in (
            (generation, device.pcie_gen, device.pcie_max_gen),
            (width, device.pcie_width, device.pcie_max_width),
        ):
            for link, value in (("current", now), ("max", top)):
                if value is not None:
                    family.add_metric([*values, link], value)
    yield from (f for f in (reasons, generation, width) if f.samples)


def diagnosis_families(diagnoses: list[Diagnosis]) -> Iterator[Metric]:
    """1 for each active diagnosis, and the number it rests on, by kind, GPU, PID and subject."""
    active = GaugeMetricFamily(
        names.DIAGNOSIS,
        "1 for each efficiency diagnosis that holds (docs/efficiency.md), by kind, GPU, PID and subject.",
        labels=list(names.DIAGNOSIS_LABELS),
    )
    value = GaugeMetricFamily(
        names.DIAGNOSIS_VALUE,
        "The number an efficiency diagnosis rests on (in %; e.g. SM activity for busy_not_working).",
        labels=list(names.DIAGNOSIS_LABELS),
    )
    for diagnosis in diagnoses:
        gpu = str(diagnosis.gpu_index) + ("" if diagnosis.mig_index is None else f":{diagnosis.mig_index}")
        key = [diagnosis.kind, gpu, "" if diagnosis.pid is None else str(diagnosis.pid), diagnosis.subject]
        active.add_metric(key, 1.0)
        if diagnosis.value is not None:
            value.add_metric(key, diagnosis.value)
    yield from (active, value)
