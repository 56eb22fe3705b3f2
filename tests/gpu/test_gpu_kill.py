"""The safe kill on real child processes: SIGTERM, SIGKILL escalation, PID-reuse guard, refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace

import psutil
import pytest

from tests.helpers.gpu_sources import ScriptedSource
from tfgpu_tui.gpu import kill
from tfgpu_tui.gpu.model import HostState, ProcessIdentity, ProcessRow
from tfgpu_tui.gpu.processes import HostInspector
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.gpu.source import GpuProcess, GpuReading, SignalOutcome, SignalResult

pytestmark = pytest.mark.e2e  # real child processes

IGNORES_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def default_signal_dispositions() -> None:
    """In the child before exec: SIGINT and SIGTERM end it, whatever pytest inherited (a shell script that
    starts pytest in the background leaves SIGINT ignored, and exec keeps an ignored signal ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.fixture
def child():
    """A plain child process (sleep) that SIGINT and SIGTERM end, reaped at the end."""
    process = subprocess.Popen(["sleep", "60"], preexec_fn=default_signal_dispositions)
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


@pytest.fixture
def stubborn():
    """A child that ignores SIGTERM."""
    process = subprocess.Popen([sys.executable, "-c", IGNORES_SIGTERM], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def identity(process: subprocess.Popen) -> ProcessIdentity:
    return ProcessIdentity(process.pid, psutil.Process(process.pid).create_time())


@pytest.fixture(params=[True, False], ids=["pidfd", "no-pidfd"])
def pidfd_mode(request, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Run a test with and without pidfd support: without, this Python is made to look like one built for
    an OS that has none (Python < 3.9, Linux < 5.3, other systems), where os.pidfd_open does not exist."""
    if request.param and not hasattr(os, "pidfd_open"):
        pytest.skip("this OS/Python has no pidfd")
    if not request.param:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    return request.param


def test_sigterm_ends_a_cooperative_process(child: subprocess.Popen, pidfd_mode: bool) -> None:
    progress: list[str] = []
    # a grace far longer than a loaded machine needs to end `sleep` (5 s was a window SIGKILL could follow)
    outcome = kill.terminate_process(identity(child), grace_seconds=60, on_progress=progress.append)
    assert outcome.result == "ended" and outcome.signals_sent == ("SIGTERM",)
    assert child.wait(timeout=5) == -signal.SIGTERM
    assert progress and "SIGTERM" in progress[0]


def test_escalates_to_sigkill_when_sigterm_is_ignored(stubborn: subprocess.Popen, pidfd_mode: bool) -> None:
    outcome = kill.terminate_process(identity(stubborn), grace_seconds=0.3)
    assert outcome.result == "ended" and outcome.signals_sent == ("SIGTERM", "SIGKILL")
    assert stubborn.wait(timeout=5) == -signal.SIGKILL


IGNORES_SIGINT_TOO = IGNORES_SIGTERM.replace("SIGTERM", "SIGINT")


def test_sigint_first_then_sigkill_when_it_is_ignored(pidfd_mode: bool) -> None:
    process = subprocess.Popen([sys.executable, "-c", IGNORES_SIGINT_TOO], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        progress: list[str] = []
        outcome = kill.terminate_process(identity(process), 0.3, progress.append, first_signal=signal.SIGINT)
        assert outcome.result is SignalResult.ENDED and outcome.signals_sent == ("SIGINT", "SIGKILL")
        assert process.wait(timeout=5) == -signal.SIGKILL
        assert "SIGINT" in progress[0] and "sending SIGKILL" in progress[1]
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def test_sigint_ends_a_process_that_stops_on_ctrl_c(child: subprocess.Popen) -> None:
    outcome = kill.terminate_process(identity(child), 60, first_signal=signal.SIGINT)  # grace: see above
    assert outcome.result is SignalResult.ENDED and outcome.signals_sent == ("SIGINT",)
    assert child.wait(timeout=5) == -signal.SIGINT


def test_sigkill_chosen_is_sent_alone_without_a_grace_period(stubborn: subprocess.Popen) -> None:
    outcome = kill.terminate_process(identity(stubborn), grace_seconds=30, first_signal=signal.SIGKILL)
    assert outcome.result is SignalResult.ENDED and outcome.signals_sent == ("SIGKILL",)
    assert stubborn.wait(timeout=5) == -signal.SIGKILL


def test_only_the_offered_signals_start_a_kill(child: subprocess.Popen) -> None:
    with pytest.raises(ValueError, match="SIGTERM, SIGKILL, SIGINT"):
        kill.terminate_process(identity(child), 0.1, first_signal=signal.SIGUSR1)
    assert child.poll() is None


def test_outcomes_are_enums_and_a_misspelt_result_is_refused() -> None:
    assert kill.KillOutcome(1, "freed", "ok").result is kill.KillResult.FREED
    assert SignalOutcome("still_alive", "stuck").result is SignalResult.STILL_ALIVE
    with pytest.raises(ValueError):
        kill.KillOutcome(1, "fred", "typo")


def test_recycled_pid_is_never_signalled(child: subprocess.Popen) -> None:
    stale = ProcessIdentity(child.pid, psutil.Process(child.pid).create_time() - 100)
    outcome = kill.terminate_process(stale, grace_seconds=0.1)
    assert outcome.result == "pid_reused" and outcome.signals_sent == ()
    assert child.poll() is None  # still running, untouched


def test_already_gone_and_zombie(child: subprocess.Popen) -> None:
    ident = identity(child)
    child.kill()
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited but not reaped: a zombie
    assert kill.terminate_process(ident, 0.1).result == "already_gone"
    child.wait()
    assert kill.terminate_process(ident, 0.1).result == "already_gone"


# Imports first, then drops to nobody (the interpreter's files may not be readable by nobody), then signals.
AS_NOBODY = (
    "import os, sys\n"
    "import psutil\n"
    "from tfgpu_tui.gpu import kill\n"
    "from tfgpu_tui.gpu.model import ProcessIdentity\n"
    "os.setgid(65534); os.setuid(65534)\n"
    "outcome = kill.terminate_process(ProcessIdentity(int(sys.argv[1]), float(sys.argv[2])), 0.1)\n"
    "print(outcome.result.value); print(outcome.message)\n"
)


def test_permission_denied_is_reported(child: subprocess.Popen) -> None:
    """Another user's process: the signal is refused by the kernel, and the outcome says so."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run a child as another user")
    if psutil.Process(child.pid).uids().real == 65534:
        pytest.skip("the target must not belong to nobody")
    target = identity(child)
    done = subprocess.run(
        [sys.executable, "-c", AS_NOBODY, str(target.pid), repr(target.create_time)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    result, message = done.stdout.splitlines()[:2]
    assert result == "permission_denied" and "another user" in message
    assert child.poll() is None  # untouched


class OneProcessSource(ScriptedSource):
    """A GPU source listing one real child as holding memory while it is alive (as the driver does)."""

    def __init__(self, process: subprocess.Popen, mib: float, sticky: bool = False) -> None:
        self.process, self.mib, self.sticky = process, mib, sticky

    def read(self) -> GpuReading:
        alive = self.sticky or self.process.poll() is None
        processes = [GpuProcess(self.process.pid, 0, self.mib, 0.0)] if alive else []
        return GpuReading(None, None, [], processes)


def sampler_for(process: subprocess.Popen, sticky: bool = False, **settings: object) -> Sampler:
    from tfgpu_tui.settings import Settings

    source = OneProcessSource(process, 2048, sticky)
    return Sampler(Settings(kill_grace_seconds=0.3, **settings), source, HostInspector(False))


def test_sampler_kill_reports_freed_memory(stubborn: subprocess.Popen) -> None:
    sampler = sampler_for(stubborn)
    row = sampler.sample().processes[0]
    assert row.pid == stubborn.pid and row.host_state is HostState.OK
    outcome = sampler.kill(row)
    assert outcome.result == "freed" and outcome.freed_mib == 2048
    assert outcome.signals_sent == ("SIGTERM", "SIGKILL") and "2048 MiB freed on GPU 0" in outcome.message


def test_sampler_kill_with_the_chosen_signal_reports_freed_memory(child: subprocess.Popen) -> None:
    sampler = sampler_for(child)
    outcome = sampler.kill(sampler.sample().processes[0], first_signal=signal.SIGINT)
    assert outcome.result is kill.KillResult.FREED and outcome.signals_sent == ("SIGINT",)
    assert "2048 MiB freed on GPU 0" in outcome.message and child.wait(timeout=5) == -signal.SIGINT


def test_memory_still_listed_after_the_process_ended_is_reported(
    child: subprocess.Popen, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tfgpu_tui.gpu.sampler.CONFIRM_DELAY_SECONDS", 0.01)
    sampler = sampler_for(child, sticky=True)  # the driver keeps listing the PID (e.g. a leaked context)
    outcome = sampler.kill(sampler.sample().processes[0])
    assert (
        outcome.result == "still_held"
        and outcome.freed_mib is None
        and "still lists 2048 MiB" in outcome.message
    )
    assert child.wait(timeout=5) == -signal.SIGTERM


def test_readonly_refuses_and_sends_nothing(child: subprocess.Popen) -> None:
    sampler = sampler_for(child, readonly=True)
    row = sampler.sample().processes[0]
    outcome = sampler.kill(row)
    assert outcome.result == "refused" and "--readonly" in outcome.message
    assert child.poll() is None


def test_refusals(child: subprocess.Popen, monkeypatch: pytest.MonkeyPatch) -> None:
    sampler = sampler_for(child)
    row = sampler.sample().processes[0]
    assert sampler.kill_refusal(row) is None
    assert "init" in (sampler.kill_refusal(replace(row, pid=1)) or "")
    assert "this dashboard" in (sampler.kill_refusal(replace(row, pid=os.getpid())) or "")
    assert "zombie" in (sampler.kill_refusal(replace(row, host_state=HostState.ZOMBIE)) or "")
    assert "not yours" in (sampler.kill_refusal(replace(row, host_state=HostState.OTHER_NAMESPACE)) or "")
    assert "start time" in (sampler.kill_refusal(replace(row, create_time=None)) or "")
    other = replace(row, uid=4321, user="alice")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "alice" in (sampler.kill_refusal(other) or "")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert sampler.kill_refusal(other) is None  # root may
    assert child.poll() is None


def test_demo_kill_acts_on_the_simulation_only() -> None:
    from tfgpu_tui.settings import Settings

    sampler = Sampler(Settings(demo=True), SimulatedSource())
    snapshot = sampler.sample()
    kernel = next(r for r in snapshot.processes if r.jupyter is not None)
    outcome = sampler.kill(kernel)
    assert outcome.result == "freed" and outcome.freed_mib == kernel.gpu_memory_mib
    after = sampler.sample()
    assert kernel.pid not in {r.pid for r in after.processes}
    gpu = after.devices[kernel.gpu_index or 0]
    before_gpu = snapshot.devices[kernel.gpu_index or 0]
    assert gpu.memory_used_mib == pytest.approx(before_gpu.memory_used_mib - kernel.gpu_memory_mib)


def test_unknown_row_is_refused_safely() -> None:
    from tfgpu_tui.settings import Settings

    sampler = Sampler(Settings(), SimulatedSource())
    row = ProcessRow(4_194_301, 0, 100.0, 0.0, HostState.NO_SUCH_PROCESS)
    assert sampler.kill(row).result == "refused"
