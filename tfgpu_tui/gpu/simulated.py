"""A simulated GPU source for --demo, tests and benchmarks (always labelled SIMULATED).

The default scene has two GPUs: a TensorFlow training job on GPU 0; on GPU 1 an idle Jupyter kernel holding
memory and another user's TensorFlow evaluation job whose input pipeline starves the GPU (a busy CPU, the GPU
under 50 %); and a TensorFlow job that silently fell back to the CPU. Numbers move smoothly and
deterministically with time; ``past_samples`` replays the last minutes so a demo opens with full history plots
and with the alerts whose window has already passed. Killing a simulated process acts on the simulation only.
``SimulatedSource(gpus=8, processes_per_gpu=64)`` builds a large scene for benchmarks (without a replay); its
processes' memory always fits on their card.

`DEMO_MACHINE` describes the one simulated machine of ``--demo``: its GPUs, driver and Python. The GPU
simulation, the Environment tab's demo (env/simulated.py) and the simulated batch probe (probe/simulated.py)
all read it, so every tab tells of the same machine.
"""

from __future__ import annotations

import getpass
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields

from tfgpu_tui.gpu.model import (
    DeviceInfo,
    DeviceSample,
    DriverInfo,
    HostState,
    HostStats,
    JupyterKernel,
    ProcessRow,
)
from tfgpu_tui.gpu.processes import HostUsage
from tfgpu_tui.gpu.source import GpuProcess, GpuReading, PastSample, SignalOutcome, SignalResult

BASE_USED_MIB = 420.0
RUNTIME_DIR = "~/.local/share/jupyter/runtime"


@dataclass(frozen=True)
class SimulatedMachine:
    """The simulated machine: what its GPUs are, which driver runs them, which Python trains on them."""

    gpu_name: str = "NVIDIA A100-SXM4-80GB"
    gpu_memory_mib: float = 81920.0
    power_limit_w: float = 400.0
    compute_capability: tuple[int, int] = (8, 0)
    driver_version: str = "560.35.03"
    cuda_driver_version: str = "12.6"
    python_prefix: str = "~/venvs/tf"  # the training environment, under the user's home
    python_version: str = "3.11.9"

    @property
    def nvml_version(self) -> str:
        """NVML's version string, as the driver reports it."""
        return f"12.{self.driver_version}"

    @property
    def python(self) -> str:
        """The training environment's interpreter."""
        return os.path.join(os.path.expanduser(self.python_prefix), "bin", "python")

    def driver(self) -> DriverInfo:
        """The driver as the simulated source reports it (marked simulated)."""
        return DriverInfo(f"{self.driver_version} (simulated)", self.cuda_driver_version, self.nvml_version)

    def gpu_uuid(self, index: int) -> str:
        """A stable, obviously made-up UUID for GPU `index`."""
        return f"GPU-5157a7ed-0000-4000-8000-{index:012d}"

    def devices(self, count: int) -> list[DeviceInfo]:
        """The static facts of `count` GPUs (persistence mode off, as on most rented machines)."""
        return [
            DeviceInfo(
                index,
                self.gpu_name,
                self.gpu_uuid(index),
                self.gpu_memory_mib,
                self.power_limit_w,
                self.compute_capability,
                False,
                f"00000000:{index + 1:02X}:00.0",
            )
            for index in range(count)
        ]


DEMO_MACHINE = SimulatedMachine()


@dataclass
class _SimGpu:
    name: str
    total_mib: float
    power_limit_w: float
    fan: bool


@dataclass
class _SimProcess:
    row: ProcessRow  # host details; gpu fields are filled per reading
    memory_mib: float
    sm_base: float  # mean SM %; 0 = idle
    phase: float
    alive: bool = True
    static: dict = field(default_factory=dict)  # the row's fields that never change (built once)

    def __post_init__(self) -> None:
        moving = {"gpu_memory_mib", "sm_percent", "cpu_percent", "running_seconds"}
        self.static = {f.name: getattr(self.row, f.name) for f in fields(self.row) if f.name not in moving}


def _wave(now: float, base: float, amplitude: float, period: float, phase: float) -> float:
    """A smooth deterministic wobble around ``base``, clamped to 0..100."""
    value = (
        base + amplitude * math.sin(now / period + phase) + 0.3 * amplitude * math.sin(now / 1.7 + 2 * phase)
    )
    return max(0.0, min(100.0, value))


class SimulatedSource:
    """A GpuSource and ProcessHost in one, driven by a clock; nothing real is touched."""

    simulated = True

    def __init__(
        self,
        gpus: int = 2,
        processes_per_gpu: int | None = None,
        clock: Callable[[], float] = time.time,
        machine: SimulatedMachine = DEMO_MACHINE,
    ) -> None:
        self.machine = machine
        self._clock = clock
        self._lock = threading.Lock()
        self._user = getpass.getuser()
        self._uid = os.getuid()
        self._host_usage = HostUsage()  # the real host's CPU and memory, on the real clock
        self.host = self
        start = clock()
        self._replays = processes_per_gpu is None
        if self._replays:
            self._gpus, self._procs, self._cpu_procs = self._demo_scene(start, gpus)
        else:
            self._gpus, self._procs, self._cpu_procs = self._scaled_scene(start, gpus, processes_per_gpu or 0)
        self._by_pid = {p.row.pid: p for p in self._procs}

    # -- scenes ---------------------------------------------------------------------------------------------
    def _row(self, pid: int, gpu: int | None, command: str, started: float, **details: object) -> ProcessRow:
        fields: dict = {"user": self._user, "uid": self._uid, "tensorflow_loaded": True}
        fields.update(details)
        return ProcessRow(
            pid=pid,
            gpu_index=gpu,
            gpu_memory_mib=None,
            sm_percent=None,
            host_state=HostState.OK,
            command=command,
            create_time=started,
            **fields,
        )

    def _demo_scene(
        self, now: float, count: int = 2
    ) -> tuple[list[_SimGpu], list[_SimProcess], list[_SimProcess]]:
        """The two-GPU story; with `count` > 2, each further GPU runs one busy training worker."""
        machine = self.machine
        gpus = [
            _SimGpu(machine.gpu_name, machine.gpu_memory_mib, machine.power_limit_w, fan=False)
            for _ in range(max(2, count))
        ]
        kernel_id = "6f1c2a9e-4b1d-4c83-9a57-2e0d5b7c1f42"
        runtime = os.path.expanduser(RUNTIME_DIR)
        other_uid = 1001 if self._uid != 1001 else 1002
        procs = [
            _SimProcess(
                self._row(
                    41873,
                    0,
                    "python train.py --epochs 50 --batch-size 256",
                    now - 2 * 3600 - 754,
                    host_memory_mib=11850.0,
                ),
                memory_mib=62310.0,
                sm_base=86.0,
                phase=0.0,
            ),
            _SimProcess(
                self._row(
                    39012,
                    1,
                    f"python -m ipykernel_launcher -f {runtime}/kernel-{kernel_id}.json",
                    now - 5 * 3600 - 1320,
                    host_memory_mib=3420.0,
                    jupyter=JupyterKernel(
                        kernel_id,
                        "experiments/resnet_finetune.ipynb",
                        execution_state="idle",
                        last_activity=_iso(now - 47 * 60),
                    ),
                ),
                memory_mib=18432.0,
                sm_base=0.0,
                phase=1.0,
            ),
            _SimProcess(
                self._row(
                    40555,
                    1,
                    "python eval.py --checkpoint runs/bert/ckpt-12",
                    now - 1860,
                    user="bob",
                    uid=other_uid,
                    host_memory_mib=5120.0,
                ),
                memory_mib=9216.0,
                sm_base=34.0,
                phase=2.0,
            ),
        ]
        cpu_procs = [
            _SimProcess(
                self._row(
                    42210, None, "python train_small.py --data ./csv", now - 640, host_memory_mib=2890.0
                ),
                memory_mib=0.0,
                sm_base=0.0,
                phase=3.0,
            )
        ]
        for gpu in range(2, len(gpus)):
            command = f"python train.py --rank {gpu} --world-size {len(gpus)}"
            row = self._row(43000 + gpu, gpu, command, now - 3600 - 60 * gpu, host_memory_mib=6144.0)
            procs.append(_SimProcess(row, memory_mib=40960.0 + 1024.0 * gpu, sm_base=75.0, phase=gpu * 0.7))
        return gpus, procs, cpu_procs

    def _scaled_scene(
        self, now: float, gpus: int, per_gpu: int
    ) -> tuple[list[_SimGpu], list[_SimProcess], list[_SimProcess]]:
        sim_gpus = [_SimGpu("NVIDIA H200", 143771.0, 700.0, fan=False) for _ in range(gpus)]
        # 1-8 GiB per process, scaled down where they would not fit: together at most 80 % of the card.
        weights = [1 + slot % 8 for slot in range(per_gpu)]
        fits = 0.8 * (143771.0 - BASE_USED_MIB) / max(1, 1024.0 * sum(weights))
        unit_mib = 1024.0 * min(1.0, fits)
        procs = []
        for gpu in range(gpus):
            for slot in range(per_gpu):
                number = gpu * per_gpu + slot
                procs.append(
                    _SimProcess(
                        self._row(
                            100000 + number,
                            gpu,
                            f"python worker.py --shard {number}",
                            now - 60 * (number + 1),
                            host_memory_mib=512.0 + 16 * slot,
                            tensorflow_loaded=slot % 2 == 0,
                        ),
                        memory_mib=unit_mib * weights[slot],
                        sm_base=float((number * 7) % 60),
                        phase=number * 0.37,
                    )
                )
        return sim_gpus, procs, []

    # -- GpuSource ------------------------------------------------------------------------------------------
    def read(self) -> GpuReading:
        """One simulated reading of every GPU and its processes."""
        return self._reading(self._clock())

    def _reading(self, now: float) -> GpuReading:
        with self._lock:
            live = [p for p in self._procs if p.alive]
        processes = [
            GpuProcess(
                p.row.pid,
                p.row.gpu_index if p.row.gpu_index is not None else 0,
                p.memory_mib,
                float(round(_wave(now, p.sm_base, min(8.0, p.sm_base / 4), 9.0, p.phase)))
                if p.sm_base
                else 0.0,
            )
            for p in live
        ]
        held_by_gpu = [0.0] * len(self._gpus)
        busy_by_gpu = [0.0] * len(self._gpus)
        for p in processes:  # one pass, not one per GPU
            held_by_gpu[p.gpu_index] += p.memory_mib or 0.0
            busy_by_gpu[p.gpu_index] = max(busy_by_gpu[p.gpu_index], p.sm_percent or 0.0)
        devices = []
        for index, gpu in enumerate(self._gpus):
            held, busy = held_by_gpu[index], busy_by_gpu[index]
            util = float(round(min(100.0, busy * 1.05))) if busy else 0.0
            devices.append(
                DeviceSample(
                    index=index,
                    name=gpu.name,
                    utilization_percent=util,
                    memory_used_mib=BASE_USED_MIB + held,
                    memory_total_mib=gpu.total_mib,
                    temperature_c=float(round(34 + util * 0.38)),
                    power_w=round(58 + util * (gpu.power_limit_w - 70) / 100, 1),
                    power_limit_w=gpu.power_limit_w,
                    fan_percent=None,
                    sm_clock_mhz=1410.0 if util else 210.0,
                    performance_state=0 if util else 8,
                    unavailable={} if gpu.fan else {"fan": "not supported (passively cooled)"},
                )
            )
        return GpuReading(None, self.machine.driver(), devices, processes)

    def close(self) -> None:
        """Nothing to release."""

    def device_info(self) -> list[DeviceInfo]:
        """None: the simulation has no static device facts (so no persistence-mode alert)."""
        return []

    def past_samples(self, seconds: float, step: float) -> Iterator[PastSample]:
        """(seconds ago, reading, process rows) every ``step`` s over the last ``seconds``, oldest first; the
        demo scene only (the benchmark scenes start empty, like a real source)."""
        if not self._replays or step <= 0:
            return
        now = self._clock()
        count = int(seconds // step)
        for back in range(count, 0, -1):
            at = now - back * step
            reading = self._reading(at)
            rows = self._rows(at, reading.processes)
            yield back * step, reading, rows + self._cpu_rows(at, {row.pid for row in rows})

    # -- ProcessHost ----------------------------------------------------------------------------------------
    def describe(self, processes: list[GpuProcess], reading: GpuReading | None = None) -> list[ProcessRow]:
        """Host details of simulated GPU processes (never in a container: `reading` is not needed)."""
        return self._rows(self._clock(), processes)

    def _rows(self, now: float, processes: list[GpuProcess]) -> list[ProcessRow]:
        by_pid = self._by_pid
        rows = []
        for gpu_process in processes:
            sim = by_pid.get(gpu_process.pid)
            if sim is None:
                rows.append(
                    ProcessRow(
                        gpu_process.pid,
                        gpu_process.gpu_index,
                        gpu_process.memory_mib,
                        gpu_process.sm_percent,
                        HostState.NO_SUCH_PROCESS,
                    )
                )
                continue
            rows.append(self._live_row(sim, now, gpu_process))
        return rows

    def _live_row(self, sim: _SimProcess, now: float, gpu_process: GpuProcess | None) -> ProcessRow:
        cpu = _wave(now, 98.0, 6.0, 5.0, sim.phase) if sim.sm_base else 0.4
        if sim.row.gpu_index is None:
            cpu = 2 * _wave(now, 95.0, 4.0, 4.0, sim.phase)
        # Filled in place of ProcessRow(**fields): the frozen dataclass's __init__ sets each of its fields
        # through object.__setattr__, the larger cost in the benchmark's scene (docs/performance.md). Only the
        # simulation does this; the real host builds its rows normally.
        row = object.__new__(ProcessRow)
        row.__dict__.update(
            sim.static,
            gpu_memory_mib=gpu_process.memory_mib if gpu_process else None,
            sm_percent=gpu_process.sm_percent if gpu_process else None,
            cpu_percent=round(cpu, 1),
            running_seconds=now - (sim.row.create_time or now),
        )
        return row

    own_pid_namespace = False  # the simulation is not in a container

    def holders_of(self, gpu_index: int) -> list[ProcessRow]:
        """No device files in the simulation."""
        return []

    def cpu_tensorflow(self, exclude: set[int]) -> list[ProcessRow]:
        """The simulated TensorFlow job running on the CPU."""
        return self._cpu_rows(self._clock(), exclude)

    def _cpu_rows(self, now: float, exclude: set[int]) -> list[ProcessRow]:
        return [self._live_row(p, now, None) for p in self._cpu_procs if p.alive and p.row.pid not in exclude]

    def stats(self) -> HostStats | None:
        """The real host's CPU and memory (the simulation only replaces the GPUs)."""
        return self._host_usage.stats()

    def terminate(
        self,
        row: ProcessRow,
        grace_seconds: float,
        on_progress: Callable[[str], None] | None = None,
        first_signal: signal.Signals = signal.SIGTERM,
    ) -> SignalOutcome:
        """End a simulated process (no real signal is sent)."""
        name = first_signal.name
        with self._lock:
            for sim in self._procs + self._cpu_procs:
                if sim.row.pid == row.pid and sim.alive:
                    sim.alive = False
                    if on_progress:
                        on_progress(f"Sent {name} to simulated PID {row.pid}")
                    message = f"PID {row.pid} ended ({name}, simulated)"
                    return SignalOutcome(SignalResult.ENDED, message, (name,))
        return SignalOutcome(SignalResult.ALREADY_GONE, f"PID {row.pid} had already exited")


def _iso(timestamp: float) -> str:
    """An ISO 8601 UTC time as Jupyter writes it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(timestamp))
