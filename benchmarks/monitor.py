"""Benchmark: what the GPU monitor costs, beside nvitop, gpustat and a bare Textual app measured in the same
run (issues 14 and 29).

Method: fakenvml (../shared/fakenvml) with the scenario of its scenario_8x64.py (8 H200s, 64 real sleeping
PIDs); every interactive program runs in its own tmux server at 160x48 with a 1 s refresh; CPU is the
CPU time of the program's whole process tree from /proc (utime + stime + reaped children's), over
--seconds after --warmup seconds; resident memory is the tree's VmRSS at the end of that window.

  * first frame: from the start of the program until it has written a GPU to the pane (its output is
    piped to a file read every 5 ms); the median of --frames starts after one uncounted start that warms the
    caches. The anchor is a bare Textual app (a Header, one line of text naming the GPU, a Footer), the
    framework's own floor, run by the same interpreter; nvitop's is shown beside it;
  * CPU while idling on the Monitor, and resident memory (--runs runs each);
  * CPU while idling on another tab: `1` switches to Environment (Monitor hidden); its check (and the
    TensorFlow probe child it starts) must finish before the warm-up begins;
  * one-shot `tfgpu-tui gpus --json` against `gpustat --json`: wall time of the whole process, median
    of --oneshots runs.

tfgpu-tui and its anchors take turns (a start of each, an idle run of each, a one-shot of each), so that a
change in the speed of a shared VM's host falls on both sides of a ratio alike.

nvitop and gpustat run from their own virtual environments when present (default /tmp/nvitop-venv and
/tmp/gpustat-venv: `python3 -m venv /tmp/nvitop-venv && /tmp/nvitop-venv/bin/pip install nvitop`).

    python benchmarks/monitor.py [--seconds 30] [--other-seconds 90] [--warmup 6] [--runs 2] [--frames 5]
                                 [--oneshots 7]
                                 [--nvitop PATH] [--gpustat PATH] [--json PATH] [--micro]
                                 [--source DIR] [--no-anchors]

--micro adds the sample cost alone (our Sampler against fakenvml, bare pynvml for the same fields).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

FAKENVML = Path(
    os.environ.get("TFGPU_FAKENVML_DIR", Path(__file__).resolve().parents[2] / "shared" / "fakenvml")
)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
COLUMNS, LINES = 160, 48
OURS_MARKER = "H200"  # the GPU name on our GPU card: the first frame that shows a GPU
NVITOP_MARKER = "140.4GiB"  # nvitop at 160 columns shows no name; its GPU row shows the total memory
POLL_SECONDS = 0.005  # how often the pane output file is read while waiting for a frame

# The targets (issue 29): key -> (kind, limit), kind "abs" (our figure) or "ratio" (ours / the row's anchor).
TARGETS = {
    "first_frame": ("ratio", 1.5),  # a bare Textual app
    "cpu_monitor": ("ratio", 0.5),  # nvitop
    "rss": ("abs", 45.0),
    "oneshot": ("ratio", 0.35),  # gpustat --json
    "cpu_other_tab": ("abs", 0.3),
}

# The framework's floor for the first frame: what any Textual app with a header, a line and a footer costs.
BARE_TEXTUAL = """
from textual.app import App
from textual.widgets import Footer, Header, Static


class Bare(App):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self):
        yield Header()
        yield Static("GPU 0  NVIDIA H200  37 %  20480 / 143771 MiB")
        yield Footer()


Bare().run()
"""

SAMPLE_CHILD = r"""
import json, statistics, sys, time
import pynvml
from tfgpu_tui.gpu.nvml import NvmlSource
from tfgpu_tui.gpu.processes import HostInspector
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.settings import Settings
n = int(sys.argv[1])
sampler = Sampler(Settings(), NvmlSource(), HostInspector())
for _ in range(5):
    sampler.sample(); time.sleep(0.05)
ours = []
for _ in range(n):
    t = time.perf_counter(); snap = sampler.sample(); ours.append((time.perf_counter() - t) * 1000)
assert len(snap.devices) == 8 and sum(p.gpu_index is not None for p in snap.processes) == 64, snap.error
handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
def bare():
    for h in handles:
        pynvml.nvmlDeviceGetMemoryInfo(h); pynvml.nvmlDeviceGetUtilizationRates(h)
        pynvml.nvmlDeviceGetTemperature(h, 0); pynvml.nvmlDeviceGetPowerUsage(h)
        pynvml.nvmlDeviceGetClockInfo(h, 1); pynvml.nvmlDeviceGetPerformanceState(h)
        pynvml.nvmlDeviceGetComputeRunningProcesses(h); pynvml.nvmlDeviceGetGraphicsRunningProcesses(h)
        try: pynvml.nvmlDeviceGetProcessUtilization(h, 0)
        except pynvml.NVMLError: pass
raw = []
for _ in range(n):
    t = time.perf_counter(); bare(); raw.append((time.perf_counter() - t) * 1000)
print(json.dumps({"ours": statistics.median(ours), "bare": statistics.median(raw)}))
"""


# --- /proc ---


def tree(pid: int) -> list[int]:
    """``pid`` and all its live descendants."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                with contextlib.suppress(OSError):
                    todo += [int(child) for child in (task / "children").read_text().split()]
    return found


def tree_ticks(pid: int) -> int:
    """CPU ticks of the tree: each process's utime + stime + the utime + stime of its reaped children."""
    total = 0
    for member in tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(value) for value in fields[11:15])
    return total


def tree_rss_mib(pid: int) -> float:
    total = 0
    for member in tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


# --- tmux ---


class Tmux:
    """One program in its own tmux server (own socket, no config) at COLUMNS x LINES. The pane's output goes
    to a file (pipe-pane), so waiting for a frame costs no tmux call per poll; the program starts (clock
    running) only once that pipe is in place."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.socket = f"tfgpu-bench-{os.getpid()}-{time.monotonic_ns()}"
        exports = [f"{key}={value}" for key, value in env.items()]
        # env -i: exactly this environment, nothing inherited (a PYTHONDONTWRITEBYTECODE from the shell would
        # keep the warm-up start from writing the bytecode caches)
        command = "read _; exec env -i " + shlex.join([*exports, *argv])  # waits for the Enter below
        self._tmux("new-session", "-d", "-s", "bench", "-x", str(COLUMNS), "-y", str(LINES), command)
        self.pid = int(self._tmux("display-message", "-p", "-t", "bench", "#{pane_pid}").strip())
        self.output = Path(tempfile.mkstemp(prefix="tfgpu-bench-pane-")[1])
        self._tmux("pipe-pane", "-O", "-t", "bench", f"cat >> {shlex.quote(str(self.output))}")
        self.started = time.perf_counter()
        self.keys("Enter")

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-f", "/dev/null", "-L", self.socket, *args], capture_output=True, text=True, check=True
        )
        return done.stdout

    def wait_for(self, text: str, timeout: float = 60) -> float | None:
        """Seconds from the start until the program has written ``text``; None after ``timeout``."""
        wanted = text.encode()
        seen = b""
        with self.output.open("rb") as stream:
            while time.perf_counter() - self.started < timeout:
                seen = seen[-len(wanted) :] + stream.read()
                if wanted in seen:
                    return time.perf_counter() - self.started
                if not Path(f"/proc/{self.pid}").exists():
                    print(f"    the program exited before showing {text!r}", flush=True)
                    return None
                time.sleep(POLL_SECONDS)
        return None

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "bench", *keys)

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.keys("q")
        for _ in range(50):
            if not Path(f"/proc/{self.pid}").exists():
                break
            time.sleep(0.1)
        with contextlib.suppress(subprocess.CalledProcessError):
            self._tmux("kill-server")
        self.output.unlink(missing_ok=True)


def wait_children_done(pid: int, timeout: float) -> float:
    """Wait until ``pid`` has no child processes (a tab's check has ended); the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < timeout and len(tree(pid)) > 1:
        time.sleep(0.5)
    return time.monotonic() - started


# --- measurements ---


@dataclass
class Figures:
    """Every figure of one program; lists hold one value per run."""

    first_frame: list[float] = field(default_factory=list)
    cpu_monitor: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    cpu_other_tab: list[float] = field(default_factory=list)
    oneshot: list[float] = field(default_factory=list)
    oneshot_sampling: list[float] = field(default_factory=list)  # our JSON's sampled_seconds


def first_frame(argv: list[str], env: dict[str, str], marker: str) -> float | None:
    """Seconds from one start of the program until it shows ``marker``."""
    session = Tmux(argv, env)
    try:
        return session.wait_for(marker)
    finally:
        session.close()
        time.sleep(0.5)


def idle_cpu(
    argv: list[str],
    env: dict[str, str],
    seconds: float,
    warmup: float,
    marker: str,
    keys: tuple[str, ...] = (),
) -> tuple[float, float] | None:
    """(CPU % of one core over ``seconds``, tree RSS MiB at the end); ``keys`` are pressed after the first
    frame (and the children they start are waited for) before the warm-up."""
    session = Tmux(argv, env)
    try:
        if session.wait_for(marker) is None:
            return None
        if keys:
            session.keys(*keys)
            time.sleep(1)
            waited = wait_children_done(session.pid, 120)
            print(f"    (after {' '.join(keys)}: children ended after {waited:.1f} s)", flush=True)
        time.sleep(warmup)
        ticks, started = tree_ticks(session.pid), time.perf_counter()
        time.sleep(seconds)
        used = (tree_ticks(session.pid) - ticks) / CLOCK_TICKS
        elapsed = time.perf_counter() - started
        return 100 * used / elapsed, tree_rss_mib(session.pid)
    finally:
        session.close()


def oneshot(argv: list[str], env: dict[str, str], sampling: list[float]) -> float | None:
    """Wall time of one run; the ``sampled_seconds`` our JSON reports goes to ``sampling``."""
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or "H200" not in done.stdout:
        print(f"    one-shot failed ({done.returncode}): {done.stderr.strip()[-300:]}")
        return None
    with contextlib.suppress(ValueError, KeyError, TypeError):
        sampling.append(float(json.loads(done.stdout)["sampled_seconds"]))
    return elapsed


@dataclass
class Program:
    """One program under measure: its interactive command (with the marker of its first frame with a GPU)
    and its one-shot command, either absent."""

    name: str
    app: list[str] | None
    oneshot: list[str] | None
    marker: str = OURS_MARKER
    figures: Figures = field(default_factory=Figures)
    idles: bool = True  # measured idling too, not only started


def measure(programs: list[Program], env: dict[str, str], args: argparse.Namespace) -> None:
    """Every figure of every program, taking turns: each start, idle run and one-shot of tfgpu-tui is
    followed by the same for its anchor, so that a change in the machine's speed (a shared VM's host) falls
    on both sides of a ratio alike."""
    apps = [program for program in programs if program.app is not None]
    for start in range(args.frames + 1):  # start 0 is not counted: it warms the caches (bytecode, disk)
        for program in apps:
            print(f"{program.name}: first frame {start}/{args.frames}", flush=True)
            seconds = first_frame(program.app, env, program.marker)
            if seconds is not None and start > 0:
                program.figures.first_frame.append(seconds)
    for run in range(args.runs):
        for program in (program for program in apps if program.idles):
            print(f"{program.name}: idling on the Monitor, run {run + 1}", flush=True)
            result = idle_cpu(program.app, env, args.seconds, args.warmup, program.marker)
            if result is not None:
                program.figures.cpu_monitor.append(result[0])
                program.figures.rss.append(result[1])
    shots = [program for program in programs if program.oneshot is not None]
    print(f"one-shots x{args.oneshots}: {', '.join(program.name for program in shots)}", flush=True)
    for _ in range(args.oneshots):
        for program in shots:
            seconds = oneshot(program.oneshot, env, program.figures.oneshot_sampling)
            if seconds is not None:
                program.figures.oneshot.append(seconds)


# --- report ---


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def cell(values: list[float], unit: str, digits: int = 2) -> str:
    if not values:
        return "-"
    each = f" ({', '.join(f'{v:.{digits}f}' for v in values)})" if len(values) > 1 else ""
    return f"{statistics.median(values):.{digits}f} {unit}{each}"


def verdict(key: str | None, ours: float | None, anchor: float | None) -> str:
    if key is None:
        return "-"
    kind, limit = TARGETS[key]
    value = ours if kind == "abs" else (ours / anchor if ours is not None and anchor else None)
    if value is None:
        return f"target {'<=' if kind == 'abs' else 'ratio <='} {limit}: not measured"
    return f"target {'<=' if kind == 'abs' else 'ratio <='} {limit}: {'MET' if value <= limit else 'NOT MET'}"


def report(
    ours: Figures,
    nvitop: Figures | None,
    gpustat: Figures | None,
    bare: Figures | None,
    seconds: float,
    other_seconds: float,
) -> None:
    rows = [
        (
            "first frame (median)",
            "first_frame",
            ours.first_frame,
            bare and bare.first_frame,
            "s",
            "bare Textual",
        ),
        ("first frame (median)", None, ours.first_frame, nvitop and nvitop.first_frame, "s", "nvitop"),
        (
            f"CPU idling on the Monitor ({seconds:.0f} s)",
            "cpu_monitor",
            ours.cpu_monitor,
            nvitop and nvitop.cpu_monitor,
            "%",
            "nvitop",
        ),
        ("resident memory (tree)", "rss", ours.rss, nvitop and nvitop.rss, "MiB", "nvitop"),
        ("one-shot gpus --json", "oneshot", ours.oneshot, gpustat and gpustat.oneshot, "s", "gpustat"),
        (
            f"CPU idling on Environment ({other_seconds:.0f} s)",
            "cpu_other_tab",
            ours.cpu_other_tab,
            None,
            "%",
            "-",
        ),
    ]
    print()
    print("| measure | tfgpu-tui | anchor, same run | ratio | target |")
    print("|---|---|---|---|---|")
    for label, key, mine, theirs, unit, anchor_name in rows:
        mine_m, theirs_m = median(mine), median(theirs or [])
        ratio = f"{mine_m / theirs_m:.2f}" if mine_m is not None and theirs_m else "-"
        anchor = f"{anchor_name} {cell(theirs, unit)}" if theirs else "-"
        print(f"| {label} | {cell(mine, unit)} | {anchor} | {ratio} | {verdict(key, mine_m, theirs_m)} |")
    if ours.oneshot_sampling:
        print(
            f"(one-shot: of which the CPU window and sampling, as `gpus --json` reports them: "
            f"{cell(ours.oneshot_sampling, 's')}; "
            "longer when a reading needs confirming, e.g. TensorFlow processes on the CPU)"
        )


# --- set-up ---


def tool(explicit: str | None, default: str) -> str | None:
    path = Path(explicit or default)
    return str(path) if path.exists() else None


def version(executable: str) -> str:
    done = subprocess.run([executable, "--version"], capture_output=True, text=True)
    return (done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else "?"


def start_scenario(tmp: Path) -> tuple[Path, list[int]]:
    """Start the 64 sleeps of scenario_8x64.py and write its scenario."""
    scenario = tmp / "scenario_8x64.txt"
    out = subprocess.run(
        [sys.executable, str(FAKENVML / "scenario_8x64.py"), str(scenario), "1800"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return scenario, [int(pid) for pid in out.stdout.split()]


def micro(env: dict[str, str], iterations: int) -> None:
    done = subprocess.run([sys.executable, "-c", SAMPLE_CHILD, str(iterations)], env=env, capture_output=True)
    if done.returncode != 0:
        print(f"sample cost: child failed: {done.stderr.decode()[-400:]}")
        return
    result = json.loads(done.stdout.decode().strip().splitlines()[-1])
    print(
        f"sample cost ({iterations} samples): ours median {result['ours']:.3f} ms, "
        f"bare pynvml for the same fields {result['bare']:.3f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="CPU measurement window")
    parser.add_argument("--warmup", type=float, default=6.0, help="seconds before the window opens")
    parser.add_argument(
        "--other-seconds",
        type=float,
        default=90.0,
        help="CPU window on the Environment tab (longer: at 0.3 %% a 30 s window holds 9 clock ticks)",
    )
    parser.add_argument("--runs", type=int, default=2, help="idle runs per program")
    parser.add_argument("--frames", type=int, default=5, help="starts for the first-frame median")
    parser.add_argument("--oneshots", type=int, default=7, help="runs for the one-shot median")
    parser.add_argument(
        "--nvitop", default=None, help="nvitop executable (default /tmp/nvitop-venv/bin/nvitop)"
    )
    parser.add_argument("--gpustat", default=None, help="gpustat executable (default /tmp/gpustat-venv/...)")
    parser.add_argument("--no-anchors", action="store_true", help="measure tfgpu-tui only")
    parser.add_argument("--json", type=Path, default=None, help="also write every figure here")
    parser.add_argument(
        "--source", type=Path, default=None, help="run tfgpu-tui from this source tree (e.g. a git archive)"
    )
    parser.add_argument("--micro", action="store_true", help="also time one sample against fakenvml")
    args = parser.parse_args()
    if shutil.which("tmux") is None or shutil.which("gcc") is None or not (FAKENVML / "build.sh").exists():
        print(f"needs tmux, gcc and {FAKENVML}")
        return 1
    nvitop = None if args.no_anchors else tool(args.nvitop, "/tmp/nvitop-venv/bin/nvitop")
    gpustat = None if args.no_anchors else tool(args.gpustat, "/tmp/gpustat-venv/bin/gpustat")
    if args.json is not None:
        args.json = args.json.resolve()
    with tempfile.TemporaryDirectory(prefix="tfgpu-bench-") as tmp_name:
        tmp = Path(tmp_name)
        # Programs start in here: `python -m` puts its working directory first on sys.path, which would
        # shadow --source when run from a checkout.
        os.chdir(tmp)
        subprocess.run(["sh", str(FAKENVML / "build.sh"), str(tmp / "lib")], check=True, capture_output=True)
        scenario, pids = start_scenario(tmp)
        (tmp / "config").mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/root"),
            "TERM": "tmux-256color",
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(tmp / "config"),  # no settings file: the defaults
            "LD_LIBRARY_PATH": str(tmp / "lib"),
            "FAKE_NVML_SCENARIO": str(scenario),
        }
        if args.source is not None:
            env["PYTHONPATH"] = str(args.source.resolve())
        try:
            print(f"python {sys.version.split()[0]}; {os.cpu_count()} CPUs; tmux {COLUMNS}x{LINES}")
            print(
                f"nvitop: {nvitop and version(nvitop)}; gpustat: {gpustat and version(gpustat)}", flush=True
            )
            if args.micro:
                micro(env, 300)
            app = [sys.executable, "-m", "tfgpu_tui", "--interval", "1"]
            ours = Program("tfgpu-tui", app, [sys.executable, "-m", "tfgpu_tui", "gpus", "--json"])
            bare = Program("bare Textual", [sys.executable, "-c", BARE_TEXTUAL], None, idles=False)
            programs = [ours, bare]
            if nvitop:
                programs.append(Program("nvitop", [nvitop, "--interval", "1"], None, NVITOP_MARKER))
            if gpustat:
                programs.append(Program("gpustat", None, [gpustat, "--json"]))
            measure(programs, env, args)
            print("tfgpu-tui: idling on the Environment tab", flush=True)
            result = idle_cpu(app, env, args.other_seconds, args.warmup, OURS_MARKER, keys=("1",))
            if result is not None:
                ours.figures.cpu_other_tab.append(result[0])
            anchors = {program.name: program.figures for program in programs}
            theirs, stat = anchors.get("nvitop"), anchors.get("gpustat")
            report(ours.figures, theirs, stat, bare.figures, args.seconds, args.other_seconds)
            if args.json:
                every = {"tfgpu-tui": ours.figures, "nvitop": theirs, "gpustat": stat}
                every["bare Textual"] = bare.figures
                args.json.write_text(json.dumps({k: v and v.__dict__ for k, v in every.items()}, indent=1))
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
