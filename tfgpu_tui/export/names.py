"""Metric names shared by the exporter and the readers: dcgm-exporter's fields and tfgpu-tui's own series.

The DCGM fields follow dcgm-exporter's ``etc/default-counters.csv``: same names, types, units and labels.
Each is read from one DeviceSample attribute; a field the GPU does not report (None) is omitted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DcgmField:
    """One dcgm-exporter metric and the DeviceSample attribute it comes from."""

    name: str
    type: str  # gauge | counter
    help: str
    attribute: str


DCGM_FIELDS: tuple[DcgmField, ...] = (
    DcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "utilization_percent"),
    DcgmField("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "memory_util_percent"),
    DcgmField("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "memory_used_mib"),
    DcgmField("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "memory_free_mib"),
    DcgmField("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "temperature_c"),
    DcgmField("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power_w"),
    DcgmField(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "counter",
        "Total energy consumption since boot (in mJ).",
        "energy_mj",
    ),
    DcgmField("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "sm_clock_mhz"),
    DcgmField("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", "mem_clock_mhz"),
    DcgmField(
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
        "counter",
        "PCIe TX throughput (in KB/s, NVML's 20 ms sample, typed counter as dcgm-exporter does).",
        "pcie_tx_kbs",
    ),
    DcgmField(
        "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
        "counter",
        "PCIe RX throughput (in KB/s, NVML's 20 ms sample, typed counter as dcgm-exporter does).",
        "pcie_rx_kbs",
    ),
)
DCGM_BY_NAME = {f.name: f for f in DCGM_FIELDS}
DCGM_COUNTERS = tuple(f.name for f in DCGM_FIELDS if f.type == "counter")
DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
# dcgm-exporter adds these to a MIG device's series (one per GPU instance): its profile and GPU instance ID
MIG_LABELS = ("GPU_I_PROFILE", "GPU_I_ID")
MIG_FIELDS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")  # what dcgm-exporter reports per MIG device
# Dashboard 12239 draws "GPU Utilization" from this profiling field, which NVML cannot measure: exported as
# GPU_UTIL / 100 with approximation="nvml_gpu_util" so nobody mistakes it for the real thing.
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


@dataclass(frozen=True)
class ProfField:
    """One dcgm-exporter profiling (DCP) metric and the gpu.model.Activity attribute it is read from: DCGM
    gives ratios from 0 to 1 (`scale` turns GPM's percent into that) and PCIe in bytes per second."""

    name: str
    help: str
    attribute: str
    scale: float


PROF_FIELDS: tuple[ProfField, ...] = (
    ProfField("DCGM_FI_PROF_SM_ACTIVE", "Ratio of cycles an SM has at least 1 warp assigned (NVML GPM).",
              "sm_active", 0.01),
    ProfField("DCGM_FI_PROF_SM_OCCUPANCY", "Ratio of resident warps to the SMs' maximum (NVML GPM).",
              "sm_occupancy", 0.01),
    ProfField("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles any tensor pipe is active (NVML GPM).",
              "tensor_active", 0.01),
    ProfField("DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active (NVML GPM).",
              "dram_active", 0.01),
    ProfField("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "Ratio of cycles the FP32 pipe is active (NVML GPM).",
              "fp32_active", 0.01),
    ProfField("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "Ratio of cycles the FP16 pipe is active (NVML GPM).",
              "fp16_active", 0.01),
    ProfField("DCGM_FI_PROF_PCIE_TX_BYTES", "PCIe data transmitted, headers included (in B/s, NVML GPM).",
              "pcie_tx_mib_s", 2.0**20),
    ProfField("DCGM_FI_PROF_PCIE_RX_BYTES", "PCIe data received, headers included (in B/s, NVML GPM).",
              "pcie_rx_mib_s", 2.0**20),
)  # fmt: skip
CLOCKS_EVENT_REASONS = (
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"  # a bitmask (nvmlClocksEventReason*), as DCGM has it
)

PREFIX = "tfgpu_"
EXPORTER_INFO = "tfgpu_exporter_info"
UP = "tfgpu_up"
NVML_UNAVAILABLE = "tfgpu_nvml_unavailable"
NVML_ERRORS = "tfgpu_nvml_errors"  # a counter: exposed as tfgpu_nvml_errors_total
NVML_UNSUPPORTED = "tfgpu_nvml_unsupported"
SCRAPE_DURATION = "tfgpu_scrape_duration_seconds"
SAMPLE_DURATION = "tfgpu_sample_duration_seconds"
SAMPLE_AGE = "tfgpu_sample_age_seconds"
GPU_COUNT = "tfgpu_gpu_count"
GPU_MEMORY_TOTAL = "tfgpu_gpu_memory_total_mib"
GPU_POWER_LIMIT = "tfgpu_gpu_power_limit_watts"
HOST_CPU = "tfgpu_host_cpu_percent"
HOST_CPU_COUNT = "tfgpu_host_cpu_count"
HOST_MEMORY_USED = "tfgpu_host_memory_used_mib"
HOST_MEMORY_TOTAL = "tfgpu_host_memory_total_mib"
PROCESS_GPU_MEMORY = "tfgpu_process_gpu_memory_mib"
PROCESS_SM = "tfgpu_process_sm_percent"
PROCESS_CPU = "tfgpu_process_cpu_percent"
PROCESS_STALE_VRAM = "tfgpu_process_stale_vram_mib"
# pid: the local PID ("" for another namespace's entry, "other" for a GPU's summed rest); host_pid: NVML's PID
# where it differs; attribution: how the entry was joined to the process (gpu/attribution.py)
PROCESS_LABELS = ("gpu", "pid", "user", "notebook", "command", "host_pid", "attribution")
PCIE_LINK_GEN = "tfgpu_gpu_pcie_link_generation"  # label link: "current" or "max"
PCIE_LINK_WIDTH = "tfgpu_gpu_pcie_link_width"
DIAGNOSIS = "tfgpu_diagnosis_active"  # 1 per efficiency diagnosis (gpu/efficiency.py)
DIAGNOSIS_VALUE = "tfgpu_diagnosis_value"  # the number it rests on (in %)
DIAGNOSIS_LABELS = ("kind", "gpu", "pid", "subject")
ALERT = "tfgpu_alert_active"
ALERT_LABELS = ("kind", "severity", "subject")
TRAINING_PREFIX = "tfgpu_training_"
TRAINING_METRIC = "tfgpu_training_metric"  # the last finished epoch's metrics, label metric
OTHER = "other"  # the pid label of the bucket summing the processes beyond the top N of a GPU
CPU_GPU_LABEL = "cpu"  # the gpu label of a TensorFlow process that holds no GPU memory
