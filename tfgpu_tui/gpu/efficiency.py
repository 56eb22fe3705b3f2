"""How well each GPU is used, and why not better: the efficiency diagnoses (docs/efficiency.md).

Each diagnosis rests on named metrics over a window, says its number, and stays silent where the evidence is
missing: on a GPU without GPM, `busy_not_working` and `tensor_cores_idle` never fire; a reading that goes
missing restarts its window. No I/O: the Sampler hands in each reading; `input_bound` comes from the alert
rules' input-starvation signal (gpu/alert_rules.py) and is not made here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tfgpu_tui.alerts import Alert, AlertKind, Severity
from tfgpu_tui.durations import minutes_text
from tfgpu_tui.gpu import clock_events
from tfgpu_tui.gpu.history import RollingMeans
from tfgpu_tui.gpu.model import Activity, DeviceSample, Diagnosis, ProcessRow
from tfgpu_tui.probe.record import ProbeRecord
from tfgpu_tui.settings import Settings

KINDS = (
    "busy_not_working",
    "tensor_cores_idle",
    "input_bound",
    "throttled",
    "pcie_link_degraded",
    "over_provisioned",
)
TENSOR_CORE_CC = (7, 0)  # Volta and newer have tensor cores
BFLOAT16_CC = (8, 0)  # Ampere and newer compute in bfloat16
PCIE_BUSY_SHARE = 0.25  # a link is judged once the GPU was busy for at least this share of the window

BUSY_NOT_WORKING_FIX = (
    "Give each step more work: a larger batch (`tfgpu-tui probe` or the Batch probe tab finds the largest "
    "that fits), or compile the model with XLA (`model.compile(..., jit_compile=True)`) so that small "
    "kernels fuse"
)
MIXED_PRECISION_FIX = (
    'Use mixed precision: `keras.mixed_precision.set_global_policy("mixed_float16")` before building the '
    "model{bf16}; `tfgpu-tui probe --compare-precision` measures the speed-up on this GPU"
)
THROTTLED_FIX = {
    "power cap": "The card is held at its power limit: `nvidia-smi -q -d PERFORMANCE,POWER` shows the limit; "
    "if it was lowered, `sudo nvidia-smi -pl <watts>` restores it (up to the default)",
    "thermal": "The card is too hot: check its fans and airflow, clean the dust filters, keep the room cool; "
    "in a cloud or a data centre, report it to the provider",
    "hardware slowdown": "The board asked for a slowdown (power supply or overheating): check `nvidia-smi -q "
    "-d PERFORMANCE`, the power cables and the cooling, or report it to the provider",
}
PCIE_FIX = (
    "Seat the card in a slot of its full width and generation (not a x8 or chipset slot, no riser), and "
    "check the BIOS's PCIe setting (Auto or the card's generation); `nvidia-smi -q -d PCI` shows the link "
    "now and its maximum"
)
OVER_PROVISIONED_FIX = (
    "This job needs far less than this GPU: run it on a smaller GPU or a MIG slice of about its peak, or "
    "run several such jobs on this one"
)


@dataclass(frozen=True)
class Thresholds:
    """The diagnoses' settings (Settings fields of that meaning; docs/efficiency.md gives the defaults)."""

    window_seconds: float = 120.0
    busy_util_percent: float = 80.0
    sm_active_low_percent: float = 50.0
    tensor_idle_percent: float = 5.0
    throttled_percent: float = 20.0
    over_provisioned_seconds: float = 600.0
    over_provisioned_percent: float = 25.0

    @classmethod
    def from_settings(cls, settings: Settings) -> Thresholds:
        return cls(
            settings.efficiency_minutes * 60,
            settings.busy_util_percent,
            settings.sm_active_low_percent,
            settings.tensor_idle_percent,
            settings.throttled_percent,
            settings.over_provisioned_minutes * 60,
            settings.over_provisioned_percent,
        )


def is_training_job(row: ProcessRow) -> bool:
    """A training job, as the CPU-fallback and starvation rules count one: a process with TensorFlow loaded
    that holds memory on a GPU (not a tfgpu-tui child)."""
    return bool(row.tensorflow_loaded) and row.gpu_index is not None and bool(row.gpu_memory_mib)


@dataclass(frozen=True)
class _Target:
    """What GPM measured: a whole GPU, or a MIG device (its GPU instance)."""

    gpu_index: int
    mig_index: int | None
    label: str  # "GPU 0", "GPU 0:2"
    activity: Activity | None
    compute_capability: tuple[int, int] | None
    memory_total_mib: float | None


def _targets(devices: list[DeviceSample]) -> Iterator[_Target]:
    for d in devices:
        if d.lost:
            continue
        if not d.mig_mode:
            yield _Target(
                d.index, None, f"GPU {d.index}", d.activity, d.compute_capability, d.memory_total_mib
            )
        for mig in d.mig_devices:
            if not mig.lost:
                label = f"GPU {mig.label}"
                yield _Target(d.index, mig.mig_index, label, mig.activity, d.compute_capability,
                              mig.memory_total_mib)  # fmt: skip


@dataclass
class _Life:
    """What a training job peaked at since it was first seen."""

    first_seen: float
    memory_mib: float = 0.0
    sm_percent: float = 0.0
    sm_basis: str = ""


class Efficiency:
    """Evaluates the diagnoses one reading at a time, remembering each one's window."""

    def __init__(
        self, thresholds: Thresholds, probe_records: Callable[[], dict[int, ProbeRecord]] | None = None
    ) -> None:
        """`probe_records`: the probe's answers by GPU index (probe/record.py), asked only when a diagnosis
        whose fix can quote them holds."""
        self.thresholds = thresholds
        self._probe_records = probe_records or dict
        self._means: dict[tuple[str, int, int | None], RollingMeans] = {}
        self._lives: dict[tuple[int, float | None, int, int | None], _Life] = {}
        self._throttle_bits: dict[int, int] = {}
        self.pending: set[str] = set()  # diagnoses whose condition holds but whose window is not yet full
        # GPU -> share of its busy readings throttled over the window so far (the last evaluation's)
        self.throttled_percent: dict[int, float] = {}

    def _with_probe(self, fix: str, gpu_index: int, quote: Callable[[ProbeRecord], str | None]) -> str:
        """`fix`, with what the probe measured on this GPU where it has been run there."""
        record = self._probe_records().get(gpu_index)
        measured = quote(record) if record is not None else None
        return f"{fix} ({measured})" if measured else fix

    def evaluate(
        self, now: float, devices: list[DeviceSample], processes: list[ProcessRow]
    ) -> list[Diagnosis]:
        """The diagnoses that hold now."""
        self.pending = set()
        self.throttled_percent = {}
        seen: set[tuple[str, int, int | None]] = set()
        jobs = [row for row in processes if is_training_job(row) and not row.own_child]
        found: list[Diagnosis] = []
        for device in devices:
            if device.lost or device.mig_mode:
                continue
            found += self._busy_not_working(now, device, seen)
            found += self._throttled(now, device, seen)
            found += self._pcie(now, device, seen)
        targets = list(_targets(devices))
        for target in targets:
            found += self._tensor_cores_idle(now, target, jobs, seen)
        found += self._over_provisioned(now, targets, jobs)
        for key in [k for k in self._means if k not in seen]:
            del self._means[key]
        return found

    def _window(
        self,
        now: float,
        seen: set,
        kind: str,
        target: tuple[int, int | None],
        values: tuple[float, ...] | None,
        covered: float | None = None,
    ) -> tuple[float, ...] | None:
        """Record `values` in that rule's window; its means once the window is full (None before, and when
        `values` is None: missing evidence restarts the window). `covered`: the seconds the first values
        already cover (GPM's are over the interval since the previous sample)."""
        key = (kind, *target)
        if values is None:
            return None
        seen.add(key)
        means = self._means.get(key)
        if means is None or means.window_seconds != self.thresholds.window_seconds:
            means = self._means[key] = RollingMeans(self.thresholds.window_seconds, len(values))
            means.first_seen = now - (covered or 0.0)
        means.add(now, values)
        return means.means() if means.covers(now) else None

    def _hold(self, kind: str, condition: bool, means: tuple[float, ...] | None) -> bool:
        """Whether the diagnosis fires; a condition that holds before the window is full is pending."""
        if condition and means is None:
            self.pending.add(kind)
        return condition and means is not None

    # -- the rules ------------------------------------------------------------------------------------------
    def _busy_not_working(self, now: float, device: DeviceSample, seen: set) -> list[Diagnosis]:
        """Utilisation high while few SMs are active: kernels too small for the GPU."""
        t = self.thresholds
        span = minutes_text(t.window_seconds)
        sm = device.activity.sm_active if device.activity else None
        util = device.utilization_percent
        evidence = (util, sm) if util is not None and sm is not None else None
        covered = device.activity.window_seconds if device.activity else None
        means = self._window(now, seen, "busy_not_working", (device.index, None), evidence, covered)
        values = means or evidence or (0.0, 0.0)
        busy_idle = values[0] >= t.busy_util_percent and values[1] < t.sm_active_low_percent
        if not self._hold("busy_not_working", busy_idle, means):
            return []
        mean_util, mean_sm = values
        return [
            Diagnosis(
                "busy_not_working",
                device.index,
                None,
                f"GPU {device.index} reads {mean_util:.0f} % utilisation, but only {mean_sm:.0f} % of its "
                "SMs are active: its kernels are too small to fill it",
                f"means over {span} of NVML's utilization.gpu (the share of time any "
                "kernel ran) and GPM SM activity (the share of SMs busy); under "
                f"{t.sm_active_low_percent:.0f} % SM activity is ineffective use (DCGM's guidance)",
                self._with_probe(BUSY_NOT_WORKING_FIX, device.index, ProbeRecord.batch_text),
                value=round(mean_sm, 1),
            )
        ]

    def _tensor_cores_idle(
        self, now: float, target: _Target, jobs: list[ProcessRow], seen: set
    ) -> list[Diagnosis]:
        """A training job on a tensor-core GPU keeps its SMs busy while the tensor cores stay near 0."""
        t = self.thresholds
        span = minutes_text(t.window_seconds)
        cc = target.compute_capability
        mine = [j for j in jobs if j.gpu_index == target.gpu_index and j.mig_index == target.mig_index]
        activity = target.activity
        sm = activity.sm_active if activity else None
        tensor = activity.tensor_active if activity else None
        evidence = None
        if mine and cc is not None and cc >= TENSOR_CORE_CC and sm is not None and tensor is not None:
            evidence = (sm, tensor)
        covered = activity.window_seconds if activity else None
        key = (target.gpu_index, target.mig_index)
        means = self._window(now, seen, "tensor_cores_idle", key, evidence, covered)
        values = means or evidence or (0.0, 100.0)
        idle = values[0] >= t.sm_active_low_percent and values[1] < t.tensor_idle_percent
        if not self._hold("tensor_cores_idle", idle, means) or cc is None:
            return []
        mean_sm, mean_tensor = values
        bf16 = (
            ' ("mixed_bfloat16" on this GPU, which computes in bfloat16)' if cc and cc >= BFLOAT16_CC else ""
        )
        who = mine[0] if len(mine) == 1 else None
        job = f"PID {who.pid}" if who else f"the {len(mine)} training jobs"
        return [
            Diagnosis(
                "tensor_cores_idle",
                target.gpu_index,
                who.pid if who else None,
                f"{target.label}: {job} keeps {mean_sm:.0f} % of the SMs busy, but the tensor cores work "
                f"only {mean_tensor:.1f} % of the time: it computes in float32",
                f"means over {span} of GPM SM activity and tensor activity (any tensor "
                f"op) on a GPU with tensor cores (compute capability {cc[0]}.{cc[1]}); near 0 means under "
                f"{t.tensor_idle_percent:g} %",
                self._with_probe(
                    MIXED_PRECISION_FIX.format(bf16=bf16), target.gpu_index, ProbeRecord.speedup_text
                ),
                target.mig_index,
                round(mean_tensor, 1),
            )
        ]

    def _throttled(self, now: float, device: DeviceSample, seen: set) -> list[Diagnosis]:
        """A power or thermal cap (or a hardware slowdown) for a share of the time the GPU was busy."""
        t = self.thresholds
        span = minutes_text(t.window_seconds)
        util, mask = device.utilization_percent, device.clock_events
        evidence = None
        if util is not None and mask is not None:
            busy = util >= t.busy_util_percent
            throttling = mask & clock_events.THROTTLING if busy else 0
            if throttling:
                self._throttle_bits[device.index] = self._throttle_bits.get(device.index, 0) | throttling
            evidence = (float(busy), float(bool(throttling)))
        means = self._window(now, seen, "throttled", (device.index, None), evidence)
        recorded = self._means.get(("throttled", device.index, None))
        if evidence is not None and recorded is not None:  # the share so far, shown with the GPU
            so_far_busy, so_far_throttled = recorded.means()
            if so_far_busy:
                self.throttled_percent[device.index] = round(100.0 * so_far_throttled / so_far_busy, 1)
        busy_share, throttled_share = means or evidence or (0.0, 0.0)
        share = 100.0 * throttled_share / busy_share if busy_share else 0.0
        if not self._hold("throttled", share >= t.throttled_percent, means):
            if means is not None or evidence is None:
                self._throttle_bits.pop(device.index, None)
            return []
        kind = clock_events.throttle_kind(self._throttle_bits.get(device.index, 0))
        reasons = ", ".join(clock_events.names(self._throttle_bits.get(device.index, 0)))
        fix = "; ".join(THROTTLED_FIX[k] for k in kind.split(" and "))
        return [
            Diagnosis(
                "throttled",
                device.index,
                None,
                f"GPU {device.index} was slowed by its {kind} {share:.0f} % of the time it was busy",
                f"NVML's clock event reasons ({reasons}) in each reading over {span}, "
                f"counted while utilisation was at least {t.busy_util_percent:.0f} %",
                fix,
                value=round(share, 1),
            )
        ]

    def _pcie(self, now: float, device: DeviceSample, seen: set) -> list[Diagnosis]:
        """The PCIe link below the card's maximum whenever the GPU was busy (an idle link trains down)."""
        t = self.thresholds
        span = minutes_text(t.window_seconds)
        gen, width, top_gen, top_width = (
            device.pcie_gen,
            device.pcie_width,
            device.pcie_max_gen,
            device.pcie_max_width,
        )
        util = device.utilization_percent
        evidence = None
        if None not in (gen, width, top_gen, top_width, util):
            busy = util >= t.busy_util_percent  # type: ignore[operator]
            below = busy and (gen < top_gen or width < top_width)  # type: ignore[operator]
            evidence = (float(busy), float(below))
        means = self._window(now, seen, "pcie_link_degraded", (device.index, None), evidence)
        busy_share, below_share = means or evidence or (0.0, 0.0)
        condition = busy_share > 0 and below_share >= busy_share
        if not self._hold("pcie_link_degraded", condition, means) or busy_share < PCIE_BUSY_SHARE:
            return []
        return [
            Diagnosis(
                "pcie_link_degraded",
                device.index,
                None,
                f"GPU {device.index}'s PCIe link runs at Gen{gen} x{width} while busy; the card can do "
                f"Gen{top_gen} x{top_width}",
                f"NVML's current and maximum PCIe link generation and width, in every reading over "
                f"{span} with utilisation at least {t.busy_util_percent:.0f} % (an idle "
                "link trains down to save power, so it is judged only under load)",
                PCIE_FIX,
                value=round(100.0 * (gen * width) / (top_gen * top_width), 1),  # type: ignore[operator]
            )
        ]

    def _over_provisioned(
        self, now: float, targets: list[_Target], jobs: list[ProcessRow]
    ) -> list[Diagnosis]:
        """A training job that, for all the time it was watched, used little of its GPU's memory and SMs."""
        t = self.thresholds
        by_device = {(tg.gpu_index, tg.mig_index): tg for tg in targets}
        live = set()
        found = []
        for job in jobs:
            gpu = job.gpu_index if job.gpu_index is not None else -1
            target = by_device.get((gpu, job.mig_index))
            key = (job.pid, job.create_time, gpu, job.mig_index)
            if target is not None and target.activity is not None and target.activity.measuring:
                live.add(key)  # GPM's first sample: its numbers (the basis from now on) come next time
                continue
            sm, basis = _sm_upper_bound(job, target)
            if target is None or not target.memory_total_mib or sm is None:
                self._lives.pop(key, None)  # missing evidence: its life is not known whole
                continue
            live.add(key)
            life = self._lives.setdefault(key, _Life(now))
            life.memory_mib = max(life.memory_mib, job.gpu_memory_mib or 0.0)
            life.sm_percent, life.sm_basis = max(life.sm_percent, sm), life.sm_basis or basis
            memory_share = 100.0 * life.memory_mib / target.memory_total_mib
            small = memory_share < t.over_provisioned_percent and life.sm_percent < t.over_provisioned_percent
            if not small or now - life.first_seen < t.over_provisioned_seconds:
                continue
            found.append(
                Diagnosis(
                    "over_provisioned",
                    gpu,
                    job.pid,
                    f"PID {job.pid} peaked at {life.memory_mib / 1024:.1f} GiB of {target.label}'s "
                    f"{target.memory_total_mib / 1024:.0f} GiB ({memory_share:.0f} %) and "
                    f"{life.sm_percent:.0f} % of its SMs",
                    f"its peak GPU memory and the peak of {life.sm_basis} over the "
                    f"{minutes_text(now - life.first_seen)} it was watched; both under "
                    f"{t.over_provisioned_percent:.0f} %" + _unwatched(job, now - life.first_seen),
                    OVER_PROVISIONED_FIX,
                    job.mig_index,
                    round(memory_share, 1),
                )
            )
        for key in [k for k in self._lives if k not in live]:
            del self._lives[key]
        return found


def _unwatched(job: ProcessRow, watched: float) -> str:
    """What of the job's life was not watched, where it had run a while before (its start time is known)."""
    before = (job.running_seconds or 0.0) - watched
    return f" (it had run {minutes_text(before)} before that, unwatched)" if before >= 60 else ""


def _sm_upper_bound(job: ProcessRow, target: _Target | None) -> tuple[float | None, str]:
    """How busy the job's SMs were at most, and on what basis: its GPU's GPM SM activity (which includes the
    job's), else NVML's per-process SM % (the share of time its kernels ran, never below its SM activity)."""
    activity = target.activity if target else None
    if activity is not None and activity.sm_active is not None:
        return activity.sm_active, "GPM SM activity of its GPU"
    if job.sm_percent is not None:
        return job.sm_percent, "NVML's per-process SM % (time its kernels ran)"
    return None, ""


# How each diagnosis shows among the alerts: hardware limits warn; how the job uses the GPU is advice.
ALERT_SEVERITY = {"throttled": Severity.WARNING, "pcie_link_degraded": Severity.WARNING}
SHORT = {
    "busy_not_working": "SMs mostly idle",
    "tensor_cores_idle": "tensor cores idle",
    "input_bound": "input-bound",
    "throttled": "throttled",
    "pcie_link_degraded": "PCIe link degraded",
    "over_provisioned": "over-provisioned",
}


def diagnosis_alert(diagnosis: Diagnosis) -> Alert:
    """The diagnosis as an alert of the same kind: its summary, then its basis; `e` shows the fix."""
    return Alert(
        AlertKind(diagnosis.kind),
        ALERT_SEVERITY.get(diagnosis.kind, Severity.INFO),
        f"{diagnosis.summary} (basis: {diagnosis.basis})",
        diagnosis.fix,
        diagnosis.subject,
        short=f"{SHORT[diagnosis.kind]}: {diagnosis.subject}",
    )


# What each diagnosis means, in a few sentences, for `e` on its alert (docs/efficiency.md says more).
MEANING = {
    "busy_not_working": "NVML's utilisation is the share of time at least one kernel ran, however small: one "
    "tiny kernel at a time reads 100 %. GPM's SM activity is the share of the SMs that had work. High "
    "utilisation with few SMs active means the kernels are too small for this GPU.",
    "tensor_cores_idle": "Tensor cores multiply matrices in reduced precision many times faster than the "
    "FP32 pipes. A training job whose SMs are busy while the tensor cores stay near 0 computes in float32 "
    "and leaves most of the GPU's arithmetic unused.",
    "input_bound": "The GPU waits for data: its utilisation stays low while the job's CPU is busy preparing "
    "batches.",
    "throttled": "The clocks were lowered below their maximum for a reason that costs speed (a power cap, a "
    "thermal limit or a hardware slowdown) while the GPU was busy.",
    "pcie_link_degraded": "The PCIe link carries data between the host and the GPU. It runs below the "
    "generation or width the card and slot can do even under load, so transfers are slower than they "
    "should be.",
    "over_provisioned": "The job used a small part of this GPU's memory and SMs for all the time it was "
    "watched: a smaller (cheaper) GPU or a MIG slice would run it as fast.",
}
