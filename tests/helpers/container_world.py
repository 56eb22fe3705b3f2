"""Runs INSIDE a fakenvml container (../shared/fakenvml/container.py) and plays issue 23 as a renter would.

    container.py --lib LIB --gpus 4 --driver ERA ... -- python tests/container_world.py --driver ERA RESULTS

GPU 0's training job (real TensorFlow imported), GPU 2's other-namespace entry and PID clash, and GPU 3's two
holders come from container.py (TFGPU_SIM_PIDS says their inner and host PIDs). This script adds GPU 1's
holder: a real Jupyter server inside the container (its runtime file where Jupyter puts it by default, under
the renter's HOME: tfgpu-tui is not told where), a notebook session opened through its REST API, whose kernel
(a kernelspec of ours) opens /dev/nvidia1, /dev/nvidiactl and /dev/nvidia-uvm and then execs the real
`python -m ipykernel_launcher -f CONNECTION_FILE`; one cell is run in it over its websocket, then it idles.
Its process line is added to the scenario exactly as container.py writes its holders' lines for that driver
era (atomically: write, then rename).

Then (1) `tfgpu-tui gpus --json`, (2) the dashboard in tmux at 80x24: wait for the stale alert naming the
notebook, `a`, select that alert, `k`, `s` (Shut down kernel), wait for the outcome, and (3) what happened:
is the kernel gone, did GPU 1's memory drop (pynvml against the fake, and `gpus --json` again), is train.py
still alive.
Everything is written to RESULTS/results.json (as it goes, so a failure part-way still leaves the facts).
Every wait is bounded; the tmux server and the Jupyter server are always ended.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path

from notebook_server import JupyterServer
from notebook_server import wait as wait_for

NOTEBOOK = "analysis.ipynb"
KERNEL_MIB = 18432
KERNEL_GPU = 1
STALE_MINUTES = 0.005  # 0.3 s: the kernel is made older than that before anything samples
KILL_GRACE_SECONDS = 3.0
SCREEN = (80, 24)

# The kernel's first program: open GPU 1's device files (inheritable), then become the real kernel launcher,
# so the process NVML names has the launcher's exact argv and still holds the files. A kernel the server
# restarts after a kill is empty (no CUDA context), so the files are opened on the first start only.
KERNEL_WRAPPER = r"""
import os, sys
connection, once = sys.argv[1], sys.argv[2]
if not os.path.exists(once):
    open(once, "w").close()
    for name in ("/dev/nvidia{gpu}", "/dev/nvidiactl", "/dev/nvidia-uvm"):
        os.set_inheritable(os.open(name, os.O_RDWR), True)
os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", connection])
"""


class World:
    """The results file, written whole after every step."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.facts: dict = {"steps": [], "screens": {}, "errors": []}

    def __setitem__(self, key: str, value: object) -> None:
        self.facts[key] = value
        self.save()

    def __getitem__(self, key: str) -> object:
        return self.facts[key]

    def step(self, text: str) -> None:
        self.facts["steps"].append([round(time.monotonic() - START, 2), text])
        print(f"[{time.monotonic() - START:6.1f}s] {text}", flush=True)
        self.save()

    def screen(self, name: str, text: str) -> None:
        self.facts["screens"][name] = text
        self.save()

    def save(self) -> None:
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.facts, indent=1))
        os.replace(tmp, self.out)


START = time.monotonic()


# --- processes -------------------------------------------------------------------------------------------


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def alive(pid: int, proc: str = "/proc") -> bool:
    """Running (not gone, not a zombie), in this namespace's /proc (or the host's, at `proc`)."""
    try:
        stat = Path(f"{proc}/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def device_files(pid: int) -> list[str]:
    """The /dev/nvidia* paths the process holds open (fd links)."""
    found = []
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("/dev/nvidia"):
            found.append(target)
    return sorted(found)


def local_pids() -> list[int]:
    return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())


def host_pid_of(inner: int, host_proc: str) -> int:
    """The host PID of a process of ours, from the host's /proc: NSpid ends with `inner` AND the process is in
    our PID namespace. (container.py checks only NSpid, so while another container runs, e.g. a second test
    session, its process with the same inner PID can be taken for ours.)"""
    ours = os.readlink("/proc/self/ns/pid")
    for name in os.listdir(host_proc):
        if not name.isdigit():
            continue
        try:
            with open(f"{host_proc}/{name}/status") as handle:
                ids = next((line.split()[1:] for line in handle if line.startswith("NSpid:")), [])
            mine = len(ids) >= 2 and int(ids[-1]) == inner and int(ids[0]) == int(name)
            if mine and os.readlink(f"{host_proc}/{name}/ns/pid") == ours:
                return int(name)
        except OSError:
            continue
    raise RuntimeError(f"no host PID found for inner PID {inner}")


def correct_host_pids(sim: dict, driver: str, host_proc: str) -> list[dict]:
    """Where container.py took another container's process for one of our holders, put the right host PID
    in the scenario's lines and in `sim`; what was corrected."""
    fixes = []
    for holder in sim["holders"]:
        right = host_pid_of(holder["pid"], host_proc)
        wrong = holder["host_pid"]
        if right == wrong:
            continue
        spec = holder["spec"]
        path = Path(os.environ["FAKE_NVML_SCENARIO"])
        lines = path.read_text().splitlines()
        for gpu in spec.get("gpus", "0").split(","):
            mib, sm = int(spec.get("mib", 1024)), int(spec.get("sm", 0))
            old = holder_line(driver, int(gpu), holder["pid"], wrong, mib, sm)
            if old not in lines:
                raise RuntimeError(f"container.py's line for PID {holder['pid']} not found: {old}")
            lines[lines.index(old)] = holder_line(driver, int(gpu), holder["pid"], right, mib, sm)
        replace_scenario("\n".join(lines) + "\n")
        holder["host_pid"] = right
        fixes.append({"pid": holder["pid"], "container_py_said": wrong, "host_pid": right})
    return fixes


# --- the scenario ----------------------------------------------------------------------------------------


def holder_line(driver: str, gpu: int, inner: int, outer: int, mib: int, sm: int) -> str:
    """A holder's process line exactly as container.py writes it for that driver era."""
    listed_pid = outer if driver == "535.104" else inner
    util_pid = inner if driver == "580" else outer
    shown = " shown_mib=0" if driver == "550" else ""
    return (
        f"process gpu={gpu} pid={listed_pid} host_pid={outer} used_mib={mib}{shown} sm={sm} "
        f"util_pid={util_pid}"
    )


def replace_scenario(text: str) -> None:
    """Rewrite $FAKE_NVML_SCENARIO atomically: a whole new file renamed over it."""
    path = Path(os.environ["FAKE_NVML_SCENARIO"])
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def add_scenario_line(line: str) -> str:
    """Append a line to $FAKE_NVML_SCENARIO (atomically); the new text."""
    text = Path(os.environ["FAKE_NVML_SCENARIO"]).read_text().rstrip("\n") + "\n" + line + "\n"
    replace_scenario(text)
    return text


def gpu_memory_used(index: int) -> int:
    """GPU `index`'s used memory in MiB, from NVML (the fake) in a fresh process."""
    code = (
        "import pynvml; pynvml.nvmlInit(); "
        f"print(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex({index})).used // 2**20)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"pynvml failed: {done.stderr.strip()}")
    return int(done.stdout.strip())


# --- Jupyter ---------------------------------------------------------------------------------------------


class Jupyter(JupyterServer):
    """A real jupyter_server inside the container (notebook_server.py; its runtime file under `env`'s HOME,
    where Jupyter puts it by default), with a kernelspec of ours whose kernel holds GPU 1's device files."""

    def __init__(self, base: Path, env: dict[str, str]) -> None:
        spec_dir = base / "path" / "kernels" / "gpu1"
        spec_dir.mkdir(parents=True)
        wrapper = base / "gpu_kernel.py"
        wrapper.write_text(KERNEL_WRAPPER.replace("{gpu}", str(KERNEL_GPU)))
        self.once = base / "gpu-files-opened"
        spec = {
            "argv": [sys.executable, str(wrapper), "{connection_file}", str(self.once)],
            "display_name": "Python 3 (GPU 1)",
            "language": "python",
        }
        (spec_dir / "kernel.json").write_text(json.dumps(spec))
        self.kernel_id = ""
        super().__init__(base, {**env, "JUPYTER_PATH": str(base / "path")})  # where our kernelspec is

    def open_session(self) -> dict:
        """The notebook's session (its kernel started); the server's answer."""
        self.kernel_id = self.open_notebook(NOTEBOOK, "gpu1")
        return self.sessions[-1]

    def launcher_pids(self) -> list[int]:
        """Live local processes that are this kernel (the launcher's argv names its connection file)."""
        return [
            pid
            for pid in local_pids()
            if alive(pid)
            and any(self.kernel_id in part for part in cmdline(pid))
            and "ipykernel_launcher" in cmdline(pid)
        ]

    def run_cell(self, code: str, timeout: float = 60) -> str:
        """What a notebook tab does: connect to the kernel's channels, run one cell, wait until the kernel is
        idle after it, go away. The cell's reply status."""
        import asyncio

        import aiohttp

        async def run() -> str:
            url = self.url.replace("http://", "ws://") + f"api/kernels/{self.kernel_id}/channels"
            headers = {"Authorization": f"token {self.token}"}
            msg_id, status, idle = uuid.uuid4().hex, "", False
            request = {
                "header": {"msg_id": msg_id, "username": "renter", "session": uuid.uuid4().hex,
                           "msg_type": "execute_request", "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell",
                "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                            "allow_stdin": False},
            }  # fmt: skip
            async with aiohttp.ClientSession() as client, client.ws_connect(url, headers=headers) as socket:
                await socket.send_str(json.dumps(request))
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    message = await socket.receive(timeout=deadline - time.monotonic())
                    if message.type != aiohttp.WSMsgType.TEXT:
                        continue
                    data = json.loads(message.data)
                    if data.get("parent_header", {}).get("msg_id") != msg_id:
                        continue
                    kind, content = data.get("msg_type"), data.get("content", {})
                    if kind == "execute_reply":
                        status = content.get("status", "")
                    idle = idle or (kind == "status" and content.get("execution_state") == "idle")
                    if idle and status:  # the reply and the idle status, in either order
                        return status
            raise TimeoutError(f"the cell did not finish within {timeout:g} s")

        return asyncio.run(run())

    def kernel(self) -> dict:
        kernel = self.api("GET", f"api/kernels/{self.kernel_id}")
        assert isinstance(kernel, dict)
        return kernel

    def stop(self) -> None:
        super().stop()
        if self.kernel_id:  # a kernel the server left behind
            for pid in local_pids():
                if any(self.kernel_id in part for part in cmdline(pid)):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)


def user_env(home: Path) -> dict[str, str]:
    """The environment of the renter's shell: its own HOME, no Jupyter or XDG directories set (so the
    server writes its runtime file where Jupyter puts it by default, and tfgpu-tui has to find it there)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "XDG_")) and k != "NO_COLOR"}
    env["HOME"] = str(home)
    return env


def iso_age_seconds(stamp: str | None) -> float:
    """Seconds since an ISO time stamp from the Jupyter API (0 if missing)."""
    if not stamp:
        return 0.0
    from datetime import datetime, timezone

    when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (datetime.now(timezone.utc) - when).total_seconds()


# --- tmux ------------------------------------------------------------------------------------------------


class Terminal:
    """One private tmux server, one 80x24 window running the command."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.socket = f"tfgpu-ctr-{uuid.uuid4().hex[:8]}"
        self.env = env
        line = " ".join(shlex.quote(part) for part in command)
        width, height = SCREEN
        self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), "-s", "app", line)
        self.tmux("set-option", "-t", "app", "remain-on-exit", "on")  # a crash stays readable

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", os.devnull, *args],
            capture_output=True, text=True, env=self.env, timeout=10,
        )  # fmt: skip
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "app")

    def press(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "app", *keys)

    def wait_for(self, test: Callable[[str], object], timeout: float, what: str) -> str:
        try:
            wait_for(lambda: test(self.screen()), timeout, what, step=0.2)
        except TimeoutError as error:
            raise TimeoutError(f"{error}\n--- screen ---\n{self.screen()}") from None
        return self.screen()

    def close(self) -> None:
        self.tmux("kill-server")


# --- the world -------------------------------------------------------------------------------------------


def run_gpus_json(env: dict[str, str]) -> dict:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tfgpu_tui", "gpus", "--json"],
        env=env, capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    result: dict = {
        "rc": done.returncode,
        "stderr": done.stderr[-4000:],
        "seconds": round(time.monotonic() - started, 2),
    }
    try:
        result["json"] = json.loads(done.stdout)
    except ValueError:
        result["json"] = None
        result["stdout"] = done.stdout[-4000:]
    return result


def kill_from_the_alert(world: World, term: Terminal, kernel_pid: int) -> None:
    """`a`, select the stale alert naming the notebook, `k`, `s` (Shut down kernel); screens kept."""
    term.press("a")
    screen = term.wait_for(lambda s: selected_alert_text(s), 10, "the alerts list focused (an alert's text)")
    world.screen("alerts_focused", screen)
    # the selected alert's full text shows below the list: move down until it is the notebook's stale alert
    for moves in range(12):  # noqa: B007 - reported after the loop
        shown = selected_alert_text(screen)
        if NOTEBOOK in shown and "idle" in shown:
            break
        term.press("Down")
        screen = term.wait_for(lambda s, before=shown: selected_alert_text(s) not in ("", before), 10,
                               "the next alert's text")  # fmt: skip
    else:
        raise RuntimeError("no selected alert named the notebook after 12 moves")
    world.screen("stale_alert_selected", screen)
    world.step(f"stale alert selected after {moves} moves")
    term.press("k")
    screen = term.wait_for(lambda s: re.search(r"End process \d+\?", s), 15, "the kill dialog")
    world.screen("kill_dialog", screen)
    if not re.search(rf"End process {kernel_pid}\?", screen) or "ipykernel" not in screen:
        term.press("Escape")
        raise RuntimeError(f"the kill dialog is not about the kernel (PID {kernel_pid}); not confirmed")
    if "[s] Shut down kernel" not in screen:
        term.press("Escape")
        raise RuntimeError("the kill dialog offers no Shut down kernel (its Jupyter server was not found)")
    term.press("s")  # through the Jupyter server inside the container: the notebook shows it shut down
    world.step("Shut down kernel chosen")


def stale_alert_line(screen: str) -> str:
    """The line of the screen where a stale alert names the notebook (the header's or the list's), or ""."""
    return next((line for line in screen.splitlines() if "Stale" in line and NOTEBOOK in line), "")


def stale_alert_with_rows(screen: str) -> str:
    """The stale alert's line once the process table shows its rows too, or "". The first frame shows the GPUs
    alone; the header and the table take the next snapshot each in its turn, so a frame may show the alert
    before the rows."""
    return stale_alert_line(screen) if re.search(r"^ Processes \(\d+\)", screen, re.MULTILINE) else ""


def selected_alert_text(screen: str) -> str:
    """The selected alert's full text, shown between the alert lines (badges) and the process table's
    caption while the alerts list has the focus; "" when none shows."""
    lines = screen.splitlines()
    badges = [i for i, line in enumerate(lines) if re.match(r"^ (WARN|INFO|CRIT) ", line)]
    caption = next((i for i, line in enumerate(lines) if line.startswith(" Processes (")), None)
    if not badges or caption is None or caption <= badges[-1] + 1:
        return ""
    return " ".join(line.strip(" \u2588") for line in lines[badges[-1] + 1 : caption]).strip()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--driver", required=True)
    parser.add_argument("results", type=Path)
    args = parser.parse_args()
    args.results.mkdir(parents=True, exist_ok=True)
    world = World(args.results / "results.json")
    world["driver"] = args.driver
    sim = json.loads(Path(os.environ["TFGPU_SIM_PIDS"]).read_text())
    world["host_pid_fixes"] = correct_host_pids(sim, args.driver, os.environ["FAKE_NVML_HOST_PROC"])
    world["sim"] = sim
    world["namespace_inode"] = os.stat("/proc/self/ns/pid").st_ino
    world["run_dir"] = str(Path(os.environ["FAKE_NVML_SCENARIO"]).parent)  # container.py's, left behind
    world["scenario_before"] = Path(os.environ["FAKE_NVML_SCENARIO"]).read_text()
    world["holders_files"] = {str(h["pid"]): device_files(h["pid"]) for h in sim["holders"]}
    world["collide_files"] = {str(c["pid"]): device_files(c["pid"]) for c in sim["collide"]}
    base = Path(tempfile.mkdtemp(prefix="world-", dir=args.results))
    config = base / "config.toml"
    config.write_text(f"stale_minutes = {STALE_MINUTES}\nkill_grace_seconds = {KILL_GRACE_SECONDS}\n")
    user = user_env(base / "home")
    jupyter: Jupyter | None = None
    term: Terminal | None = None
    try:
        jupyter = Jupyter(base / "jupyter", user)
        world.step(f"Jupyter server answers at {jupyter.url}")
        world["session"] = jupyter.open_session()
        pids = wait_for(jupyter.launcher_pids, 60, "the kernel's process (ipykernel_launcher with its id)")
        assert isinstance(pids, list)
        if len(pids) != 1:
            raise RuntimeError(f"expected one kernel process, found {pids}")
        inner = pids[0]
        files = wait_for(lambda: device_files(inner), 30, "the kernel holds the device files")
        outer = host_pid_of(inner, os.environ["FAKE_NVML_HOST_PROC"])
        line = holder_line(args.driver, KERNEL_GPU, inner, outer, KERNEL_MIB, 0)
        world["kernel"] = {
            "pid": inner, "host_pid": outer, "kernel_id": jupyter.kernel_id, "cmdline": cmdline(inner),
            "device_files": files, "line": line,
        }  # fmt: skip
        world["scenario"] = add_scenario_line(line)
        world.step(f"kernel {jupyter.kernel_id}: inner PID {inner}, host PID {outer}; scenario line added")
        world["cell"] = jupyter.run_cell("import os\nrows = [os.getpid()]")  # used, then left idle
        world.step(f"a cell ran in the kernel: {world['cell']}")
        # old enough to be stale: the server's last activity more than a second ago (a condition, polled)
        kernel = wait_for(
            lambda: (
                (k := jupyter.kernel())["execution_state"] == "idle"
                and iso_age_seconds(k.get("last_activity")) > 1.0
                and k
            ),
            30,
            "the kernel idle for over a second",
        )
        world["kernel_api_before"] = kernel
        used_before = gpu_memory_used(KERNEL_GPU)
        world["gpu1_used_before"] = used_before

        env = {**user, "TFGPU_TUI_CONFIG": str(config), "TERM": "xterm-256color"}
        world["gpus_json"] = run_gpus_json(env)
        world.step(f"gpus --json: rc {world.facts['gpus_json']['rc']}")

        # the dashboard at 80x24
        term = Terminal([sys.executable, "-m", "tfgpu_tui"], env)
        screen = term.wait_for(stale_alert_with_rows, 40, f"the stale alert naming {NOTEBOOK}, and the rows")
        world.screen("stale_alert", screen)
        world.step("the dashboard shows the notebook")
        kill_from_the_alert(world, term, inner)
        gone = bool(wait_for(lambda: not alive(inner), 30, "the kernel process ends"))
        world["kernel_gone"] = gone
        world.step("the kernel process is gone")
        try:
            screen = term.wait_for(
                lambda s: re.search(r"freed|still h[eo]ld", s), 20, "the kill's outcome (freed or not)"
            )
        except TimeoutError as error:
            world.facts["errors"].append(str(error))
        world.screen("after_kill", term.screen())
        # the memory, from NVML itself: polled, because the fake drops it once the host sees the PID gone
        try:
            drop = f"GPU 1's memory drops by the kernel's {KERNEL_MIB} MiB"
            wait_for(lambda: gpu_memory_used(KERNEL_GPU) <= used_before - KERNEL_MIB, 20, drop)
        except TimeoutError as error:
            world.facts["errors"].append(str(error))
        world["gpu1_used_after"] = gpu_memory_used(KERNEL_GPU)
        world["gpus_json_after"] = run_gpus_json(env)
        world.screen("final", term.screen())
        train = next(h for h in sim["holders"] if h["spec"].get("cmd") == "train.py")
        world["train_alive_after"] = alive(train["pid"])
        # nothing else was signalled: the other holders, the clash's sleep, the other container's process
        host_proc = os.environ["FAKE_NVML_HOST_PROC"]
        world["alive_after"] = {
            **{h["spec"]["cmd"]: alive(h["pid"]) for h in sim["holders"]},
            **{f"clash {c['pid']}": alive(c["pid"]) for c in sim["collide"]},
            **{f"foreign {f['host_pid']}": alive(f["host_pid"], host_proc) for f in sim["foreign"]},
        }
        world["train_files_after"] = device_files(train["pid"])
        # as the fake sees them: each holder through the host's /proc, and every GPU's memory from NVML
        world["host_view_after"] = {
            str(h["host_pid"]): alive(h["host_pid"], host_proc) for h in sim["holders"]
        }
        world["gpus_used_after"] = [gpu_memory_used(index) for index in range(4)]
        try:
            world["kernel_pids_after"] = jupyter.launcher_pids()
            world["kernel_api_after"] = jupyter.kernel()
        except Exception as error:  # noqa: BLE001 - a fact like any other (404 after a shutdown)
            world["kernel_api_after"] = repr(error)
        world.step("done")
        return 0
    except Exception:  # noqa: BLE001 - recorded for the pytest side, which reports it
        world.facts["errors"].append(traceback.format_exc())
        if term is not None:
            world.screen("at_error", term.screen())
        world.save()
        print(traceback.format_exc(), file=sys.stderr, flush=True)
        return 1
    finally:
        if term is not None:
            term.close()
        if jupyter is not None:
            jupyter.stop()
            world["jupyter_log_tail"] = (base / "jupyter" / "server.log").read_text()[-3000:]
        world["cleaned_up"] = True


if __name__ == "__main__":
    sys.exit(main())
