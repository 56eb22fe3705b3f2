"""Host details of GPU processes on real child processes: identity, markers, TensorFlow, Jupyter notebooks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.gpu_sources import ScriptedSource
from tfgpu_tui.gpu import processes
from tfgpu_tui.gpu.jupyter import (
    NO_SERVER,
    TOKEN_UNREADABLE,
    JupyterResolver,
    lookup,
    server_base_url,
)
from tfgpu_tui.gpu.kernel_argv import kernel_from_cmdline
from tfgpu_tui.gpu.model import HostState
from tfgpu_tui.gpu.processes import HostInspector
from tfgpu_tui.gpu.source import GpuProcess
from tfgpu_tui.proc.facts import (
    ProcessIdentity,
    ProcessStat,
    PsutilFacts,
    cpu_percent_between,
    take_baseline,
    tensorflow_loaded,
)

SLEEPER = "import time, sys; print('ready', flush=True); time.sleep(60)"
MAPPER = (
    "import mmap, sys, time\n"
    "f = open(sys.argv[1], 'r+b'); m = mmap.mmap(f.fileno(), 0)\n"
    "print('ready', flush=True); time.sleep(60)\n"
)

pytestmark = pytest.mark.e2e  # real child processes


def start(args: list[str]) -> subprocess.Popen:
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


@pytest.fixture
def children():
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


class FakeFacts:
    """A host made of dataclasses: what each process is, and a log of what was read."""

    def __init__(self) -> None:
        self.stats: dict[int, ProcessStat] = {}
        self.identities: dict[int, ProcessIdentity | Exception] = {}
        self.tensorflow: dict[int, bool | None] = {}
        self.read: list[tuple[str, int]] = []

    def add(self, pid: int, name: str, tensorflow: bool = False, cmdline: list[str] | None = None) -> None:
        self.stats[pid] = ProcessStat(False, 1000.0 + pid, 1.0, 50.0, 1)
        self.identities[pid] = ProcessIdentity(1000, "ann", cmdline or [name, "job.py"], name, b"")
        self.tensorflow[pid] = tensorflow

    def pids(self) -> list[int]:
        return sorted(self.stats)

    def stat(self, pid: int) -> ProcessStat | None:
        self.read.append(("stat", pid))
        return self.stats.get(pid)

    def identity(self, pid: int) -> ProcessIdentity:
        self.read.append(("identity", pid))
        found = self.identities.get(pid, ProcessLookupError(pid))
        if isinstance(found, Exception):
            raise found
        return found

    def name(self, pid: int) -> str | None:
        self.read.append(("name", pid))
        found = self.identities.get(pid)
        return found.name if isinstance(found, ProcessIdentity) else None

    def tensorflow_loaded(self, pid: int) -> bool | None:
        self.read.append(("maps", pid))
        return self.tensorflow.get(pid)

    def host_cpu_times(self) -> tuple[float, float]:
        return 10.0, 100.0

    def host_memory(self) -> tuple[int, int]:
        return 16 * 2**30, 8 * 2**30

    def count(self, what: str, pid: int) -> int:
        return self.read.count((what, pid))


def test_psutil_facts_of_self_and_of_nothing() -> None:
    facts = PsutilFacts()
    stat = facts.stat(os.getpid())
    assert stat is not None and not stat.zombie and stat.rss_mib > 1 and stat.create_time > 0
    assert stat.parent_pid == os.getppid()
    assert facts.stat(4_194_301) is None and facts.name(4_194_301) is None
    with pytest.raises(ProcessLookupError):
        facts.identity(4_194_301)
    me = facts.identity(os.getpid())
    assert me.uid == os.getuid() and me.cmdline and me.environ is not None


def test_psutil_facts_keep_an_odd_argv_and_name_kernel_threads() -> None:
    argv = [sys.executable, "-c", SLEEPER, "two words", "", os.fsdecode(b"caf\xe9")]
    child = start(argv)
    try:
        assert PsutilFacts().identity(child.pid).cmdline == argv
    finally:
        child.kill()
        child.wait()
    if PsutilFacts().stat(2) is None:
        pytest.skip("PID 2 is not visible here (a PID namespace)")
    kthreadd = PsutilFacts().identity(2)  # a kernel thread: no argv, a name
    assert kthreadd.cmdline == [] and kthreadd.name


def test_psutil_facts_given_pids_list_only_those_while_they_run() -> None:
    child = start([sys.executable, "-c", SLEEPER])
    facts = PsutilFacts([child.pid, 4_194_301])
    try:
        assert facts.pids() == [child.pid]
    finally:
        child.kill()
        child.wait()
    assert facts.pids() == []  # reaped: gone from the host's list, so from this one


def test_psutil_facts_forget_a_process_that_has_gone() -> None:
    child = start([sys.executable, "-c", SLEEPER])
    facts = PsutilFacts()
    try:
        first = facts.stat(child.pid)
        assert first is not None and not first.zombie and first.parent_pid == os.getpid()
    finally:
        child.kill()
        child.wait()
    assert facts.stat(child.pid) is None  # kept between refreshes, yet gone once the process is


def test_tensorflow_loaded_reads_the_maps(tmp_path: Path) -> None:
    (tmp_path / "5").mkdir()
    filler = b"7f00-7f01 r-xp 0 08:01 1 /usr/lib/libc.so.6\n" * 3000  # crosses the 64 KiB read size
    (tmp_path / "5" / "maps").write_bytes(
        filler + b"7f02-7f03 r-xp 0 08:01 2 /site/libtensorflow_framework.so.2\n"
    )
    (tmp_path / "6").mkdir()
    (tmp_path / "6" / "maps").write_bytes(filler)
    assert tensorflow_loaded(5, str(tmp_path)) is True
    assert tensorflow_loaded(6, str(tmp_path)) is False
    assert tensorflow_loaded(7, str(tmp_path)) is None


def test_describe_a_real_process(children: list) -> None:
    child = start([sys.executable, "-c", SLEEPER])
    children.append(child)
    clock = [1e9]
    inspector = HostInspector(background=False, clock=lambda: clock[0])
    first = inspector.describe([GpuProcess(child.pid, 0, 512.0, 10.0)])[0]
    assert first.host_state is HostState.OK and first.gpu_memory_mib == 512.0 and first.sm_percent == 10.0
    assert first.command and "time.sleep(60)" in first.command
    assert first.uid == os.getuid() and first.user and first.create_time and first.running_seconds is not None
    assert first.host_memory_mib and first.host_memory_mib > 1
    assert first.tensorflow_loaded is False and first.jupyter is None
    assert first.cpu_percent is None  # needs two readings
    clock[0] += 1
    # listed on two GPUs: both rows get the same CPU % (not 0 % for the second read in the same refresh)
    second, third = inspector.describe(
        [GpuProcess(child.pid, 0, 512.0, 10.0), GpuProcess(child.pid, 1, 1.0, 0.0)]
    )
    assert (
        second.cpu_percent is not None and second.cpu_percent >= 0 and third.cpu_percent == second.cpu_percent
    )


BUSY = "import time; print('ready', flush=True)\nwhile True: pass"


def test_a_baseline_gives_the_first_reading_its_cpu_percent(children: list) -> None:
    busy = start([sys.executable, "-c", BUSY])
    children.append(busy)
    baseline = take_baseline()
    stat = PsutilFacts().stat(busy.pid)
    assert stat is not None and baseline.since(busy.pid, stat.create_time) is not None
    assert baseline.since(busy.pid, stat.create_time + 1) is None  # another process under a reused PID
    from tests.helpers.waiting import wait_for
    from tfgpu_tui.gpu.processes import MIN_CPU_WINDOW_SECONDS

    at_baseline, used = baseline.since(busy.pid, stat.create_time), 0.1

    def busy_since_baseline() -> bool:  # 0.1 s of CPU, over at least the shortest CPU window
        now = PsutilFacts().stat(busy.pid)
        spent = now is not None and now.cpu_seconds - at_baseline >= used
        return spent and time.time() - baseline.taken >= MIN_CPU_WINDOW_SECONDS

    # polled for, not a fixed 0.3 s sleep assuming the busy loop got a fifth of a core on a loaded machine
    wait_for(busy_since_baseline)
    seeded = HostInspector(background=False, cpu_baseline=baseline)
    row = seeded.describe([GpuProcess(busy.pid, 0, 64.0, 0.0)])[0]
    window = time.time() - baseline.taken  # at least the window the reading measured
    # the first reading counts what the busy loop used since the baseline (a lower bound; load only lowers it)
    assert row.cpu_percent is not None and row.cpu_percent >= 100 * used / window - 0.1
    assert (
        HostInspector(background=False).describe([GpuProcess(busy.pid, 0, 64.0, 0.0)])[0].cpu_percent is None
    )


def test_host_cpu_percent_between_readings() -> None:
    assert cpu_percent_between((10.0, 100.0), (15.0, 110.0)) == 50.0
    assert cpu_percent_between((10.0, 100.0), (10.0, 100.0)) == 0.0  # no time passed: nothing to divide
    busy, total = PsutilFacts().host_cpu_times()
    assert 0 <= busy <= total
    inspector = HostInspector(background=False, own_namespace=False, facts=FakeFacts())
    stats = inspector.stats()
    assert stats is not None and stats.memory_total_mib == 16 * 1024 and stats.memory_used_mib == 8 * 1024


def test_zombie_and_vanished_processes_keep_their_rows(
    children: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = subprocess.Popen(["sleep", "60"])
    children.append(child)
    inspector = HostInspector(background=False, own_namespace=False)
    assert inspector.describe([GpuProcess(child.pid, 0, 1.0, 0.0)])[0].host_state is HostState.OK
    child.kill()
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    row = inspector.describe([GpuProcess(child.pid, 0, 1.0, 0.0)])[0]
    assert row.host_state is HostState.ZOMBIE and row.gpu_memory_mib == 1.0 and row.parent_pid == os.getpid()
    from tfgpu_tui.gpu.sampler import Sampler
    from tfgpu_tui.settings import Settings

    refusal = Sampler(Settings(), host=inspector, source=ScriptedSource()).kill_refusal(row) or ""
    assert "zombie" in refusal and f"its parent, PID {os.getpid()}" in refusal
    child.wait()
    assert inspector.describe([GpuProcess(child.pid, 0, 1.0, 0.0)])[0].host_state is HostState.NO_SUCH_PROCESS


def test_unreadable_process_is_marked_no_permission() -> None:
    facts = FakeFacts()
    facts.add(40, "python")
    facts.identities[40] = PermissionError(13, "Permission denied")  # as under a hidepid=2 /proc
    inspector = HostInspector(background=False, own_namespace=False, facts=facts)
    row = inspector.describe([GpuProcess(40, 0, 64.0, 0.0)])[0]
    assert row.host_state is HostState.NO_PERMISSION and row.gpu_memory_mib == 64.0 and row.command is None


def test_a_reused_pid_is_described_afresh() -> None:
    facts = FakeFacts()
    facts.add(40, "python", cmdline=["python", "train.py"])
    inspector = HostInspector(background=False, own_namespace=False, facts=facts)
    assert inspector.describe([GpuProcess(40, 0, 64.0, 0.0)])[0].command == "python train.py"
    facts.add(40, "python", cmdline=["python", "other.py"])  # same create time: the cached identity holds
    assert inspector.describe([GpuProcess(40, 0, 64.0, 0.0)])[0].command == "python train.py"
    facts.stats[40] = ProcessStat(False, 5000.0, 0.0, 10.0, 1)  # another process under the same PID
    row = inspector.describe([GpuProcess(40, 0, 64.0, 0.0)])[0]
    assert row.command == "python other.py" and row.create_time == 5000.0 and row.cpu_percent is None


def test_cpu_tensorflow_processes_are_found(children: list, tmp_path: Path) -> None:
    fake_lib = tmp_path / "libtensorflow_framework.so.2"
    fake_lib.write_bytes(b"\0" * 4096)
    child = start([sys.executable, "-c", MAPPER, str(fake_lib)])
    children.append(child)
    inspector = HostInspector(background=False)
    rows = {r.pid: r for r in inspector.cpu_tensorflow(set())}
    assert child.pid in rows and rows[child.pid].gpu_index is None and rows[child.pid].tensorflow_loaded
    assert child.pid not in {r.pid for r in inspector.cpu_tensorflow({child.pid})}


KERNEL_FILE = "/run/user/1/jupyter/kernel-0a1b-2c.json"


@pytest.mark.parametrize(
    "cmdline",
    [
        ["python", "-m", "ipykernel_launcher", "-f", KERNEL_FILE],
        ["/opt/venv/bin/python3.11", "-m", "ipykernel_launcher", f"--f={KERNEL_FILE}"],
        ["python", "-m", "ipykernel", "--IPKernelApp.connection_file=" + KERNEL_FILE],
        ["python3", "/usr/local/lib/python3.10/dist-packages/colab_kernel_launcher.py", "-f", KERNEL_FILE],
        [
            "python",
            "/home/u/.vscode/extensions/ms-toolsai/pythonFiles/vscode_datascience_helpers/"
            "kernel_launcher_daemon.py",
            "-f",
            KERNEL_FILE,
        ],
        ["python", "my_own_launcher.py", "--stdin", "-f", KERNEL_FILE],  # a kernel file anywhere on argv
    ],
)
def test_every_kernel_launcher_is_labelled_from_argv(cmdline: list[str]) -> None:
    kernel = kernel_from_cmdline(cmdline)
    assert kernel is not None and kernel.kernel_id == "0a1b-2c" and kernel.notebook_path is None


def test_non_kernels_and_kernels_without_a_connection_file() -> None:
    assert kernel_from_cmdline(["python", "train.py", "-f", "config.yaml"]) is None
    assert kernel_from_cmdline(["python", "train.py", "-f", "data.json"]) is None
    bare = kernel_from_cmdline(["python", "-m", "ipykernel_launcher"])
    assert bare is not None and bare.kernel_id == "?" and "no connection file" in bare.why_unknown
    vscode = kernel_from_cmdline(["python", "-m", "ipykernel_launcher", "--f=/tmp/x/kernel-v2-4242abc.json"])
    assert vscode is not None and vscode.kernel_id == "v2-4242abc"


@pytest.mark.parametrize(
    ("info", "url"),
    [
        ({"url": "http://localhost:8888/", "port": 8888}, "http://localhost:8888/"),
        (
            {"url": "http://gpu-box:8888/lab/", "port": 8888, "base_url": "/lab/"},
            "http://127.0.0.1:8888/lab/",
        ),
        ({"url": "http://0.0.0.0:9000/", "port": 9000, "base_url": "/"}, "http://127.0.0.1:9000/"),
        ({"port": 8890, "base_url": "user/ann/", "secure": True}, "https://127.0.0.1:8890/user/ann/"),
        ({"url": "http://127.0.0.1:8888/?token=abc", "port": 8888}, "http://127.0.0.1:8888/"),
        ({"sock": "/run/jupyter.sock", "url": "http+unix://x"}, None),
    ],
)
def test_servers_are_asked_on_loopback_at_their_base_url(info: dict, url: str | None) -> None:
    assert server_base_url(info) == url


def test_no_server_found_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    kernel = JupyterResolver(background=False).resolve(
        ["python", "-m", "ipykernel_launcher", "-f", str(tmp_path / "kernel-ffff.json")]
    )
    assert kernel is not None and kernel.kernel_id == "ffff" and kernel.why_unknown == NO_SERVER


def test_a_server_file_left_by_a_dead_server_is_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    dead = subprocess.Popen(["true"])
    dead.wait()
    info = {"url": "http://127.0.0.1:9/", "port": 9, "token": "t", "pid": dead.pid}
    (tmp_path / f"jpserver-{dead.pid}.json").write_text(json.dumps(info))
    assert lookup([tmp_path]).why == NO_SERVER


def test_token_not_readable_as_another_user(tmp_path: Path) -> None:
    """Run the lookup as nobody against root's private runtime file: the row must say why."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run a child as another user")
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    server = runtime / "jpserver-1.json"
    server.write_text(json.dumps({"url": "http://127.0.0.1:9/", "port": 9, "token": "secret", "pid": 1}))
    server.chmod(0o600)
    tmp_path.chmod(0o755)
    runtime.chmod(0o755)
    code = (
        "import sys; from pathlib import Path; from tfgpu_tui.gpu.jupyter import lookup; "
        "print(lookup([Path(sys.argv[1])]).why)"
    )
    if subprocess.run(["test", "-x", sys.executable], user=65534, check=False).returncode != 0:
        pytest.skip("this interpreter cannot be run by another user here (it lives in root's home)")
    done = subprocess.run(
        [sys.executable, "-c", code, str(runtime)],
        capture_output=True,
        text=True,
        user=65534,
        timeout=60,
        cwd="/",
        env={**os.environ, "HOME": "/nonexistent", "JUPYTER_RUNTIME_DIR": str(runtime)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == TOKEN_UNREADABLE


def test_describing_processes_does_not_load_the_jupyter_client() -> None:
    """The first frame stays light: the Jupyter lookup loads with the first kernel seen."""
    code = (
        "import os, sys; from tfgpu_tui.gpu.processes import HostInspector; "
        "from tfgpu_tui.gpu.source import GpuProcess; "
        "inspector = HostInspector(background=False); "
        "row = inspector.describe([GpuProcess(os.getpid(), 0, 1.0, 0.0)])[0]; inspector.stats(); "
        "assert row.command and row.user and row.create_time, row; "
        "print(sorted(m for m in ('tfgpu_tui.gpu.jupyter', 'urllib.request') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "-f", "kernel-1.json"])
    try:
        script = code.replace("os.getpid()", str(sleeper.pid))
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "tfgpu_tui.gpu.jupyter" in done.stdout  # a kernel's command line: its server is asked
    finally:
        sleeper.kill()
        sleeper.wait()


def test_tensorflow_is_rechecked_often_only_in_python_gpu_processes() -> None:
    """A Python process may import TensorFlow any moment; a CUDA binary has its libraries loaded."""
    facts = FakeFacts()
    facts.add(10, "train_cuda", cmdline=["/opt/bin/train_cuda"])
    facts.add(11, "python3")
    now = [1000.0]
    inspector = HostInspector(background=False, clock=lambda: now[0], own_namespace=False, facts=facts)
    gpu = [GpuProcess(10, 0, 64.0, 0.0), GpuProcess(11, 0, 64.0, 0.0)]
    seen_at: dict[int, float] = {}
    for _ in range(7):  # 0 s, 5 s, ... 30 s; both load TensorFlow after the first reading
        for row in inspector.describe(gpu):
            if row.tensorflow_loaded:
                seen_at.setdefault(row.pid, now[0] - 1000.0)
        facts.tensorflow = {10: True, 11: True}
        now[0] += 5.0
    assert seen_at == {11: 10.0, 10: 30.0}  # rechecked after 10 s (Python), after 30 s (not Python)


def test_the_cpu_scan_reads_a_process_that_is_not_python_by_its_name_alone() -> None:
    """Every process on the host is scanned: one that is not Python costs one read of its name, rechecked
    after OTHER_RECHECK_SECONDS; a Python one without TensorFlow has its stat and maps read every
    TF_RECHECK_SECONDS; one with TensorFlow is listed."""
    facts = FakeFacts()
    facts.add(20, "sleep")
    facts.add(21, "python3")
    facts.add(22, "python3", tensorflow=True)
    now = [1000.0]
    inspector = HostInspector(background=False, clock=lambda: now[0], own_namespace=False, facts=facts)
    for _ in range(3):  # at 0, 2 and 4 s
        assert [row.pid for row in inspector.cpu_tensorflow(set())] == [22]
        now[0] += processes.TF_RECHECK_SECONDS
    assert facts.count("name", 20) == 1 and facts.count("stat", 20) == 0
    assert facts.count("maps", 21) == 3
    now[0] += processes.OTHER_RECHECK_SECONDS
    inspector.cpu_tensorflow(set())
    assert facts.count("name", 20) == 2 and facts.count("stat", 20) == 0
    assert inspector.cpu_tensorflow({22}) == []


def test_maps_are_read_again_only_once_the_address_space_has_changed() -> None:
    """Loading TensorFlow maps its libraries: a process whose address space keeps its size has loaded none,
    so its maps are not read again; once the size changes, TensorFlow is found at the next recheck."""
    facts = FakeFacts()
    facts.add(11, "python3")
    facts.stats[11] = replace(facts.stats[11], virtual_bytes=2**30)
    now = [1000.0]
    inspector = HostInspector(background=False, clock=lambda: now[0], own_namespace=False, facts=facts)
    gpu = [GpuProcess(11, 0, 64.0, 0.0)]

    def tensorflow_after(seconds: float) -> bool | None:
        now[0] += seconds
        return inspector.describe(gpu)[0].tensorflow_loaded

    assert tensorflow_after(0) is False
    facts.tensorflow[11] = True  # as the maps would say; the size says nothing was loaded
    assert tensorflow_after(10) is False
    facts.stats[11] = replace(facts.stats[11], virtual_bytes=3 * 2**30)  # TensorFlow's libraries mapped
    assert tensorflow_after(10) is True
