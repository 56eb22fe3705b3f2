"""The kill inside a PID namespace of its own (issue 23): only local processes, the GPU's device file
re-checked right before the signal, and a plain report when the entry's memory stays (the guess was wrong,
or a forked child holds the file) naming the processes that still hold it. The kill that frees a real
holder's memory inside a real namespace is in test_container_e2e.py."""

from __future__ import annotations

import signal
import subprocess
from dataclasses import replace

import psutil
import pytest

from tests.helpers.gpu_sources import ScriptedSource
from tfgpu_tui.gpu.kill import KillResult
from tfgpu_tui.gpu.model import Attribution, DeviceSample, HostState, ProcessRow
from tfgpu_tui.gpu.processes import HostInspector
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.source import GpuProcess, GpuReading, SignalOutcome, SignalResult
from tfgpu_tui.settings import Settings

pytestmark = pytest.mark.e2e  # real child processes


def device(index: int = 0, minor: int | None = 0) -> DeviceSample:
    return DeviceSample(index, "NVIDIA H200", 0.0, 20000.0, 143771.0, 35.0, 70.0, 700.0, None, None, 0,
                        minor_number=minor)  # fmt: skip


class Source(ScriptedSource):
    """NVML as a list of entries the test changes."""

    def __init__(self, entries: list[GpuProcess]) -> None:
        self.entries = entries

    def read(self) -> GpuReading:
        return GpuReading(None, None, [device()], list(self.entries))


class Host:
    """A container's processes: NVML entry PID -> the row it is attributed to; a kill ends nothing on NVML's
    side (the entry stays), as when the pairing was wrong."""

    own_pid_namespace = True

    def __init__(self, rows: dict[int, ProcessRow], holders: list[ProcessRow]) -> None:
        self.rows, self.holders, self.signalled = rows, holders, []

    def describe(self, processes: list[GpuProcess], reading: GpuReading | None = None) -> list[ProcessRow]:
        return [self.rows[p.pid] for p in processes]

    def cpu_tensorflow(self, exclude: set[int]) -> list[ProcessRow]:
        return []

    def stats(self) -> None:
        return None

    def terminate(self, row, grace_seconds, on_progress=None, first_signal=signal.SIGTERM) -> SignalOutcome:
        self.signalled.append(row.pid)
        return SignalOutcome(SignalResult.ENDED, f"PID {row.pid} ended (SIGTERM)", ("SIGTERM",))

    def holders_of(self, gpu_index: int) -> list[ProcessRow]:
        return self.holders

    def close(self) -> None:
        pass


def local_row(pid: int, host_pid: int, basis: Attribution, **fields) -> ProcessRow:
    row = ProcessRow(pid, 0, 8192.0, 0.0, HostState.OK, user="root", uid=0, command="python eval.py",
                     create_time=1.0, attribution=basis, host_pid=host_pid)  # fmt: skip
    return replace(row, **fields)


def test_another_namespaces_entry_is_never_signalled() -> None:
    foreign = ProcessRow(19, 0, 2048.0, 40.0, HostState.OTHER_NAMESPACE,
                         attribution=Attribution.OTHER_NAMESPACE, host_pid=19)  # fmt: skip
    host = Host({19: foreign}, [])
    sampler = Sampler(Settings(), Source([GpuProcess(19, 0, 2048.0, 40.0)]), host)
    outcome = sampler.kill(sampler.sample().processes[0])
    assert outcome.result is KillResult.REFUSED and "not yours to end" in outcome.message
    unresolved = replace(foreign, attribution=Attribution.UNRESOLVED)
    assert "which of this GPU's entries" in (sampler.kill_refusal(unresolved) or "")
    assert host.signalled == []


def test_memory_that_stays_is_reported_plainly_with_the_remaining_holders(monkeypatch) -> None:
    """A pairing by start order was wrong: the entry (NVML's PID 28901) still lists its memory after the
    process it was paired with ended; the report says the pairing was only probable and names who holds
    the GPU's device file now."""
    monkeypatch.setattr("tfgpu_tui.gpu.sampler.CONFIRM_DELAY_SECONDS", 0.0)
    paired = local_row(22, 28901, Attribution.START_ORDER)
    worker = local_row(40, 28901, Attribution.DEVICE_FILE, command="python -c worker")
    source = Source([GpuProcess(28901, 0, 8192.0, 0.0)])
    host = Host({28901: paired}, [replace(worker, gpu_memory_mib=None)])
    sampler = Sampler(Settings(), source, host)
    row = sampler.sample().processes[0]
    host.rows[28901] = worker  # after the kill, the entry is the forked worker's
    outcome = sampler.kill(row)
    assert host.signalled == [22]
    assert outcome.result is KillResult.STILL_HELD
    assert "GPU 0 still lists 8192 MiB for NVML's PID 28901" in outcome.message
    assert "only probably that entry" in outcome.message
    assert "PID 40 (python -c worker)" in outcome.message


def test_an_entry_that_leaves_after_the_kill_is_freed(monkeypatch) -> None:
    monkeypatch.setattr("tfgpu_tui.gpu.sampler.CONFIRM_DELAY_SECONDS", 0.0)
    row = local_row(16, 28849, Attribution.DEVICE_FILE, memory_estimated=True)
    source = Source([GpuProcess(28849, 0, 8192.0, 0.0)])
    host = Host({28849: row}, [])
    sampler = Sampler(Settings(), source, host)
    shown = sampler.sample().processes[0]
    source.entries = []
    outcome = sampler.kill(shown)
    assert outcome.result is KillResult.FREED and "≈ 8192 MiB freed on GPU 0" in outcome.message


@pytest.fixture
def sleeper():
    process = subprocess.Popen(["sleep", "60"])
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def test_nothing_is_sent_to_a_process_that_let_go_of_the_gpus_file(sleeper: subprocess.Popen) -> None:
    """Right before the signal the process must still hold the GPU's device file (here it never did)."""
    inspector = HostInspector(background=False, own_namespace=True)
    inspector.describe([], GpuReading(None, None, [device()], []))  # learns GPU 0's minor
    started = psutil.Process(sleeper.pid).create_time()
    row = local_row(sleeper.pid, 28848, Attribution.DEVICE_FILE, create_time=started)
    outcome = inspector.terminate(row, 0.1)
    assert outcome.result is SignalResult.REFUSED and outcome.signals_sent == ()
    assert "no longer holds GPU 0's device file" in outcome.message
    assert sleeper.poll() is None  # untouched
