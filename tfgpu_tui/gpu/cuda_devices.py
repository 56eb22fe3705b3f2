"""Which device TensorFlow's `GPU:N` is: a GPU by its NVML index, or, on GPUs in MIG mode, a MIG device (a
"slice") named by `CUDA_VISIBLE_DEVICES=MIG-…`. CUDA runs on MIG devices only when a GPU is in MIG mode, and
a process given one sees it as `GPU:0` with the slice's memory, not the whole GPU's."""

from __future__ import annotations

from dataclasses import dataclass

from tfgpu_tui.gpu.model import DeviceSample, MigDevice


@dataclass(frozen=True)
class CudaDevice:
    """One device as TensorFlow numbers it, with the memory it has."""

    ordinal: int  # TensorFlow's GPU:N
    name: str  # "GPU 0 (NVIDIA H100)" or "MIG 1g.10gb (GPU 0:3, MIG-…)"
    memory_used_mib: float | None
    memory_total_mib: float | None
    mig: MigDevice | None = None


def mig_devices(devices: list[DeviceSample]) -> list[MigDevice]:
    """Every MIG device of every GPU in MIG mode, in NVML's order."""
    return [mig for device in devices for mig in device.mig_devices]


def _as_cuda(ordinal: int, mig: MigDevice) -> CudaDevice:
    name = f"MIG {mig.profile or mig.name} (GPU {mig.label}, {mig.uuid or 'no UUID'})"
    return CudaDevice(ordinal, name, mig.memory_used_mib, mig.memory_total_mib, mig)


def mig_cuda_devices(devices: list[DeviceSample], visible: str | None) -> tuple[list[CudaDevice], str] | None:
    """Where a GPU is in MIG mode: the MIG devices TensorFlow numbers GPU:0, GPU:1 ... given
    `CUDA_VISIBLE_DEVICES` (`visible`), and "" or why they cannot be told (no MIG device named while there is
    more than one: which one CUDA picks depends on its version). None where no GPU is in MIG mode: GPU:N is
    then NVML's GPU N, as everywhere else in tfgpu-tui."""
    if not any(device.mig_mode for device in devices):
        return None
    migs = mig_devices(devices)
    tokens = [t.strip() for t in (visible or "").split(",") if t.strip()]
    if tokens and all(t.startswith("MIG-") for t in tokens):
        by_uuid = {mig.uuid: mig for mig in migs if mig.uuid}
        found: list[CudaDevice] = []
        for token in tokens:
            mig = by_uuid.get(token)
            if mig is None:
                return found, f"CUDA_VISIBLE_DEVICES names {token}, which is no MIG device here"
            found.append(_as_cuda(len(found), mig))
        return found, ""
    if len(migs) == 1 and all(device.mig_mode for device in devices):
        return [_as_cuda(0, migs[0])], ""
    return [], (
        "a GPU is in MIG mode and CUDA_VISIBLE_DEVICES names no MIG device, so which slice TensorFlow's "
        "GPU:0 is depends on the CUDA version"
    )
