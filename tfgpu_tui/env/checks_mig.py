"""GPUs in MIG mode: which MIG devices ("slices") there are, which one this process can use, and that
TensorFlow sees it as GPU:0 with the slice's memory."""

from __future__ import annotations

from tfgpu_tui.env.check_base import Verdict, check
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.inspection_data import InspectionResult
from tfgpu_tui.gpu.cuda_devices import mig_cuda_devices
from tfgpu_tui.gpu.model import MigDevice
from tfgpu_tui.sizes import gib_text

WHY = (
    "On a GPU in MIG mode CUDA runs only on its MIG devices: TensorFlow sees the slice it is given as GPU:0, "
    "with the slice's memory, not the whole GPU's."
)


def _free(mig: MigDevice) -> float | None:
    if mig.memory_total_mib is None or mig.memory_used_mib is None:
        return None
    return mig.memory_total_mib - mig.memory_used_mib


def _slice(mig: MigDevice) -> str:
    memory = f"{gib_text(_free(mig), '?')} free of {gib_text(mig.memory_total_mib, '?')}"
    return f"{mig.label} {mig.profile or mig.name} ({memory}, {mig.uuid})"


def _freest(migs: list[MigDevice]) -> MigDevice | None:
    known = [m for m in migs if m.uuid and _free(m) is not None]
    return max(known, key=lambda m: _free(m) or 0.0, default=None)


@check("mig", "MIG slices", order=45)
def check_mig(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    readings = facts.nvml.readings
    in_mig = [str(d.index) for d in readings if d.mig_mode]
    if not in_mig:
        return Verdict(Status.OK, "No GPU is in MIG mode.", WHY, informational=True)
    migs = facts.nvml.mig_devices
    gpus = f"GPU {', '.join(in_mig)} {'is' if len(in_mig) == 1 else 'are'} in MIG mode"
    if not migs:
        return Verdict(
            Status.FAILURE,
            f"{gpus} with no MIG device: CUDA cannot run on {'it' if len(in_mig) == 1 else 'them'}.",
            WHY,
            "Ask the administrator to create one (`sudo nvidia-smi mig -cgi 1g.10gb -C`), or to turn MIG "
            "mode off (`sudo nvidia-smi -mig 0`)",
        )
    mapped = mig_cuda_devices(readings, facts.env_vars.get("CUDA_VISIBLE_DEVICES"))
    found, problem = mapped if mapped is not None else ([], "")
    listed = "; ".join(_slice(mig) for mig in migs)
    freest = _freest(migs)
    fix = (
        f"export CUDA_VISIBLE_DEVICES={freest.uuid}   # the slice with the most free memory" if freest else ""
    )
    if problem:
        return Verdict(Status.WARNING, f"{gpus}: {problem}. MIG devices: {listed}.", WHY, fix)
    uses = ", ".join(f"GPU:{c.ordinal} = {c.name}" for c in found)
    first = found[0].mig if found else None
    memory = (
        f" with {gib_text(first.memory_total_mib, '?')} ({gib_text(_free(first), '?')} free)" if first else ""
    )
    return Verdict(
        Status.OK,
        f"{gpus}. TensorFlow sees {uses}{memory}; the batch probe budgets by that slice.",
        WHY,
        informational=True,
    )
