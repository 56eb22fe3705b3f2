"""Runs INSIDE a fakenvml container (../shared/fakenvml/container.py): a notebook's kernels ended the way
Jupyter does (issue 30 item 7), as a renter would in a cloud notebook.

    container.py --lib LIB --gpus 1 --driver ERA -- python tests/container_kernel_actions.py --driver ERA OUT

A real Jupyter server inside the container (its runtime file where Jupyter puts it by default, under the
renter's HOME: tfgpu-tui is not told where), three notebook sessions whose kernels (a kernelspec of ours
opens GPU 0's device files, then execs the real `python -m ipykernel_launcher -f CONNECTION_FILE`) each get a
process line holding KERNEL_MIB, written as container.py writes its holders' lines for that driver era. Then,
through the Sampler and gpu/kernel_actions.py as the dashboard's kill flow uses them: Shut down the first,
Restart the second, SIGKILL the third (its server restarts it by itself); `gpus --json` before. What
happened goes to OUT/results.json as it goes. Every wait is bounded; the Jupyter server is always ended.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import traceback
from pathlib import Path

from container_world import add_scenario_line, holder_line, host_pid_of, user_env
from notebook_server import JupyterServer

KERNEL_MIB = 18432
RESTART_WATCH_SECONDS = 180.0  # a hang guard: ends as soon as the server's restart is seen
WRAPPER = r"""
import os, sys
for name in ("/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"):
    os.set_inheritable(os.open(name, os.O_RDWR), True)
os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", sys.argv[1]])
"""


def kernelspec(base: Path) -> Path:
    """A kernelspec `gpu0` (the folder to put on JUPYTER_PATH)."""
    spec_dir = base / "path" / "kernels" / "gpu0"
    spec_dir.mkdir(parents=True)
    wrapper = base / "gpu_kernel.py"
    wrapper.write_text(WRAPPER)
    spec = {
        "argv": [sys.executable, str(wrapper), "{connection_file}"],
        "display_name": "GPU 0",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return base / "path"


def gpu_used_mib() -> int:
    import pynvml

    pynvml.nvmlInit()
    try:
        return int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).used // (1 << 20))
    finally:
        pynvml.nvmlShutdown()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--driver", required=True)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    results: dict = {"driver": args.driver, "errors": [], "namespace": os.readlink("/proc/self/ns/pid")}

    def save() -> None:
        (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))

    base = args.out / "world"
    env = user_env(base / "home")
    env["JUPYTER_PATH"] = str(kernelspec(base))
    os.environ.update(HOME=env["HOME"])  # the renter's HOME: the dashboard finds the runtime file there
    for name in [k for k in os.environ if k.startswith(("JUPYTER_", "XDG_"))]:
        del os.environ[name]
    server = JupyterServer(base / "jupyter", env)
    results["server_url"] = server.url
    try:
        from tfgpu_tui.gpu.kernel_actions import KernelAction, end_process
        from tfgpu_tui.gpu.nvml import NvmlSource
        from tfgpu_tui.gpu.processes import HostInspector
        from tfgpu_tui.gpu.sampler import Sampler
        from tfgpu_tui.settings import Settings

        kernels = {}
        for name in ("shutdown", "restart", "signal"):
            kernel_id = server.open_notebook(f"{name}.ipynb", "gpu0")
            (inner,) = server.kernel_pids(kernel_id)
            outer = host_pid_of(inner, os.environ["FAKE_NVML_HOST_PROC"])
            add_scenario_line(holder_line(args.driver, 0, inner, outer, KERNEL_MIB, 0))
            kernels[name] = {"kernel_id": kernel_id, "pid": inner, "host_pid": outer}
        results["kernels"] = kernels
        results["gpu_used_before"] = gpu_used_mib()
        done = subprocess.run(
            [sys.executable, "-m", "tfgpu_tui", "gpus", "--json"], capture_output=True, text=True, timeout=120
        )
        results["gpus_json"] = {"rc": done.returncode, "stderr": done.stderr[-2000:]}
        results["gpus_json"]["rows"] = json.loads(done.stdout)["processes"] if done.returncode == 0 else []
        results["token_in_gpus_json"] = server.token in done.stdout
        save()
        choices = {
            "shutdown": KernelAction.SHUTDOWN,
            "restart": KernelAction.RESTART,
            "signal": signal.SIGKILL,
        }
        for name, choice in choices.items():
            sampler = Sampler(Settings(kill_grace_seconds=3), NvmlSource(), HostInspector(background=False))
            try:
                pid = kernels[name]["pid"]
                row = next(r for r in sampler.sample().processes if r.local and r.pid == pid)
                kernels[name]["row"] = {
                    "attribution": row.basis,
                    "server_url": row.jupyter.server_url if row.jupyter else None,
                    "actions": list(row.jupyter.actions) if row.jupyter else [],
                }
                outcome = end_process(sampler, row, choice, restart_watch_seconds=RESTART_WATCH_SECONDS)
                kernels[name]["outcome"] = {
                    "result": outcome.result.value, "message": outcome.message,
                    "freed_mib": outcome.freed_mib, "kernel_after": outcome.kernel_after,
                    "new_pid": outcome.new_pid, "signals_sent": list(outcome.signals_sent),
                }  # fmt: skip
                after = sampler.sample()
                kernels[name]["listed_pids_after"] = [r.pid for r in after.processes]
            finally:
                sampler.close()
            kernels[name]["listed_by_server"] = kernels[name]["kernel_id"] in server.listed_kernels()
            kernels[name]["kernel_pids_after"] = server.kernel_pids(kernels[name]["kernel_id"])
            save()
        results["gpu_used_after"] = gpu_used_mib()
    except Exception:  # noqa: BLE001 - recorded for the test on the host to show
        results["errors"].append(traceback.format_exc())
    finally:
        server.stop()
        results["server_log_tail"] = (base / "jupyter" / "server.log").read_text()[-3000:]
        save()
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
