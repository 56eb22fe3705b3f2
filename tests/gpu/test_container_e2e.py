"""Issue 23 end to end, inside a container, for each driver era (535.104, 550, 565, 580): one world each.

`../shared/fakenvml/container.py` (root, `unshare`) makes a PID and mount namespace with 4 fake H200s and runs
tests/container_world.py inside it:
- GPU 0: `train.py` with the real tensorflow-cpu imported, 30 GiB at 85 % SM;
- GPU 1: an idle kernel of a real Jupyter server inside the container (notebook `analysis.ipynb`, a session
  opened through the REST API, one cell run), 18 GiB at 0 % SM; its process line is added to the scenario
  as container.py writes its holders' lines for that era;
- GPU 2: another container's process (20 GiB) and a PID-number clash (NVML names, for someone else, the PID an
  unrelated local `sleep 86400` has);
- GPU 3: two local holders, `prep.py` then `eval.py`.
Inside, the world runs `tfgpu-tui gpus --json`, then the dashboard in tmux at 80x24: it waits for the stale
alert naming the notebook, `a`, selects that alert, `k`, `s` (Shut down kernel, through the server inside),
and records what happened (results.json).
The tests here read those facts: the world as built, the `gpus --json` rows and alerts, the screen flow.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers.container_run import ONE_CONTAINER_AT_A_TIME, run_container, why_not
from tests.helpers.paths import HELPERS

ERAS = ["535.104", "550", "565", "580"]
WORLD = HELPERS / "container_world.py"
WORLD_TIMEOUT_SECONDS = 240  # the world's own waits are bounded well inside this
NOTEBOOK = "analysis.ipynb"
KERNEL_MIB = 18432
NOT_REPORTED = "not reported by this driver"
ATTRIBUTIONS = {"nvml", "device-file", "start-order", "other-namespace", "unresolved"}
INIT_PID_NAMESPACE = 4026531836
WORLD_ARGS = [
    "--gpus", "4", "--util", "0=85", "--util", "2=70", "--util", "3=30",
    "--hold", "gpus=0 mib=30720 sm=85 cmd=train.py tf=1",
    "--foreign", "gpu=2 mib=20480 sm=30",
    "--collide", "gpu=2 mib=2048",
    "--hold", "gpus=3 mib=4096 sm=10 cmd=prep.py",
    "--hold", "gpus=3 mib=8192 sm=20 cmd=eval.py",
]  # fmt: skip
WHY_NOT = why_not(tools=("tmux",))
pytestmark = [
    pytest.mark.e2e,
    ONE_CONTAINER_AT_A_TIME,
    pytest.mark.tf,
    pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or ""),
]


def _run_world(era: str, lib: Path, out: Path) -> dict:
    """One container for `era`; the world's results.json, plus how the run ended."""
    argv = [
        "--lib", str(lib), "--driver", era, "--python", sys.executable,
        *WORLD_ARGS, "--", sys.executable, str(WORLD), "--driver", era, str(out),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("FAKE_NVML_SCENARIO", "TFGPU_TUI_CONFIG")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    results = run_container(argv, out, WORLD_TIMEOUT_SECONDS, env)
    run_dir = Path(results.get("run_dir", ""))
    ours = run_dir.name.startswith("gpu-container-") and run_dir.parent == Path(tempfile.gettempdir())
    if ours and not any(os.path.ismount(p) for p in run_dir.glob("*")):  # the namespace's mounts are gone
        shutil.rmtree(run_dir, ignore_errors=True)
    return results


@pytest.fixture(scope="module", params=ERAS)
def world(request: pytest.FixtureRequest, fakenvml_lib_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    era = request.param
    return _run_world(era, fakenvml_lib_dir, tmp_path_factory.mktemp(f"world-{era}"))


# --- reading the facts -----------------------------------------------------------------------------------


def why(world: dict) -> str:
    """What to print when an assertion fails: the world's errors and the log's end."""
    errors = "\n".join(world.get("errors", []))
    head = f"era {world.get('driver')}, world rc {world.get('rc')}"
    return f"{head}\n{errors}\n--- log ---\n{world['log_tail']}"


def holder(world: dict, cmd: str) -> dict:
    return next(h for h in world["sim"]["holders"] if h["spec"].get("cmd") == cmd)


def gpus_json(world: dict, key: str = "gpus_json") -> dict:
    run = world.get(key)
    assert run is not None, why(world)
    assert run["rc"] == 0 and run["json"] is not None, f"{run}\n{why(world)}"
    return run["json"]


def rows_on(data: dict, gpu: int) -> list[dict]:
    return [p for p in data["processes"] if p["gpu_index"] == gpu]


def device(data: dict, gpu: int) -> dict:
    return next(d for d in data["devices"] if d["index"] == gpu)


def files_of(gpu: str) -> list[str]:
    """The device files a holder of GPU `gpu` has open, as sorted paths."""
    return ["/dev/nvidia-uvm", f"/dev/nvidia{gpu}", "/dev/nvidiactl"]


def brief(rows: list[dict]) -> str:
    keys = ("pid", "host_pid", "gpu_index", "attribution", "gpu_memory_mib", "memory_estimated",
            "memory_note", "sm_percent", "command")  # fmt: skip
    return "\n".join(str({k: r.get(k) for k in keys}) for r in rows)


# --- the world as built (independent of the dashboard) ---------------------------------------------------


def test_the_world_is_as_the_issue_describes(world: dict) -> None:
    """A non-init PID namespace; every holder (the Jupyter kernel too) holds its GPU's device file; the
    clash's sleep holds none; the scenario lists each entry as that driver era reports it."""
    assert "sim" in world and "kernel" in world, why(world)
    era = world["driver"]
    assert world["namespace_inode"] != INIT_PID_NAMESPACE
    for item in world["sim"]["holders"]:
        assert world["holders_files"][str(item["pid"])] == files_of(item["spec"]["gpus"])
    (clash,) = world["sim"]["collide"]
    assert world["collide_files"][str(clash["pid"])] == []
    kernel = world["kernel"]
    assert kernel["device_files"] == files_of("1")
    assert kernel["cmdline"][1:4] == ["-m", "ipykernel_launcher", "-f"]
    assert kernel["kernel_id"] in kernel["cmdline"][4]
    assert world["session"]["path"] == NOTEBOOK and world["cell"] == "ok"  # a cell ran, then it idled
    assert world["kernel_api_before"]["execution_state"] == "idle"
    lines = world["scenario"].splitlines()
    assert lines[0].startswith({"535.104": "driver 535.104.", "550": "driver 550.", "565": "driver 565.",
                                "580": "driver 580."}[era])  # fmt: skip
    old = era == "535.104"
    for inner, outer, gpu, mib in [
        *((h["pid"], h["host_pid"], h["spec"]["gpus"], h["spec"]["mib"]) for h in world["sim"]["holders"]),
        (kernel["pid"], kernel["host_pid"], "1", str(KERNEL_MIB)),
    ]:
        listed = outer if old else inner
        util = inner if era == "580" else outer
        shown = " shown_mib=0" if era == "550" else ""
        assert any(
            line.startswith(f"process gpu={gpu} pid={listed} host_pid={outer} used_mib={mib}{shown} ")
            and line.endswith(f" util_pid={util}")
            for line in lines
        ), (inner, world["scenario"])
    assert kernel["line"] in lines and inner != outer
    (foreign,) = world["sim"]["foreign"]
    assert f"process gpu=2 pid={foreign['host_pid']} used_mib=20480 sm=30 listed={int(old)}" in lines
    assert f"process gpu=2 pid={clash['pid']} used_mib=2048 sm=40 ghost=1 listed={int(old)}" in lines
    assert world["gpu1_used_before"] == 500 + KERNEL_MIB  # the fake counts the kernel's memory on GPU 1


# --- gpus --json -----------------------------------------------------------------------------------------


def test_every_row_carries_the_attribution_keys(world: dict) -> None:
    data = gpus_json(world)
    for row in data["processes"]:
        for key in ("pid", "host_pid", "attribution", "gpu_memory_mib", "memory_note", "memory_estimated"):
            assert key in row, f"{key} missing\n{brief([row])}"
        if row["gpu_index"] is None:
            assert row["attribution"] is None, brief([row])  # TensorFlow on the CPU
        else:
            assert row["attribution"] in ATTRIBUTIONS, brief([row])
        if row["gpu_memory_mib"] is None:
            assert NOT_REPORTED in (row["memory_note"] or ""), brief([row])
        if row["host_pid"] is not None:
            assert row["host_pid"] != row["pid"], brief([row])


def test_gpus_json_rows_are_attributed_as_the_driver_reports(world: dict) -> None:
    data = gpus_json(world)
    era = world["driver"]
    train, prep, evaluate = (holder(world, cmd) for cmd in ("train.py", "prep.py", "eval.py"))
    kernel = world["kernel"]
    processes = brief(data["processes"])
    gpu0, gpu1, gpu2, gpu3 = (rows_on(data, gpu) for gpu in range(4))
    assert len(gpu0) == 1 and len(gpu1) == 1, processes
    assert gpu0[0]["pid"] == train["pid"] and gpu1[0]["pid"] == kernel["pid"], processes
    kernel_row = gpu1[0]["jupyter"] or {}
    assert kernel_row.get("notebook_path", "").endswith(NOTEBOOK), processes
    assert kernel_row.get("execution_state") == "idle", kernel_row
    assert sorted(r["pid"] for r in gpu3) == sorted([prep["pid"], evaluate["pid"]]), processes
    if era == "535.104":
        assert (gpu0[0]["host_pid"], gpu0[0]["attribution"], gpu0[0]["gpu_memory_mib"]) == (
            train["host_pid"], "device-file", 30720
        ), processes  # fmt: skip
        assert (gpu1[0]["host_pid"], gpu1[0]["attribution"], gpu1[0]["gpu_memory_mib"]) == (
            kernel["host_pid"], "device-file", KERNEL_MIB
        ), processes  # fmt: skip
        (foreign,), (clash,) = world["sim"]["foreign"], world["sim"]["collide"]
        others = sorted((r["attribution"], r["pid"], r["host_pid"], r["gpu_memory_mib"]) for r in gpu2)
        assert others == sorted([
            ("other-namespace", None, foreign["host_pid"], 20480),
            ("other-namespace", None, clash["pid"], 2048),
        ]), processes  # fmt: skip
        # paired by host-PID order against start time: prep.py started first and has the lower host PID
        pairs = sorted((r["pid"], r["host_pid"], r["attribution"], r["gpu_memory_mib"]) for r in gpu3)
        assert pairs == sorted([
            (prep["pid"], prep["host_pid"], "start-order", 4096),
            (evaluate["pid"], evaluate["host_pid"], "start-order", 8192),
        ]), processes  # fmt: skip
        return
    assert gpu2 == [], processes  # the driver leaves other namespaces' processes out
    for row in gpu0 + gpu1 + gpu3:
        assert (row["attribution"], row["host_pid"]) == ("nvml", None), processes
    if era == "550":
        for row, gpu in ((gpu0[0], 0), (gpu1[0], 1)):  # the sole holder: the device's use, as an estimate
            used = device(data, gpu)["memory_used_mib"]
            held = 30720 if gpu == 0 else KERNEL_MIB
            assert row["memory_estimated"] is True, processes
            assert row["gpu_memory_mib"] is not None and held <= row["gpu_memory_mib"] <= used, processes
        for row in gpu3:
            assert row["gpu_memory_mib"] is None and not row["memory_estimated"], processes
            assert NOT_REPORTED in (row["memory_note"] or ""), processes
        return
    memory = {train["pid"]: 30720, kernel["pid"]: KERNEL_MIB, prep["pid"]: 4096, evaluate["pid"]: 8192}
    for row in gpu0 + gpu1 + gpu3:
        assert row["gpu_memory_mib"] == memory[row["pid"]] and not row["memory_estimated"], processes
    # per-process SM % only from samples whose PID is an attributed process: 565's carry host PIDs
    assert gpu0[0]["sm_percent"] == (85 if era == "580" else None), processes


def test_the_clash_is_never_attributed_to_the_local_sleep(world: dict) -> None:
    """NVML names, for someone else, the PID number an unrelated local `sleep` has: that sleep gets no row, no
    memory, no alert (and so no kill)."""
    data = gpus_json(world)
    (clash,) = world["sim"]["collide"]
    assert not [r for r in data["processes"] if r["pid"] == clash["pid"]], brief(data["processes"])
    assert not [r for r in data["processes"] if (r.get("command") or "").startswith("sleep")]
    assert not [a for a in data["alerts"] if a["subject"] == f"PID {clash['pid']}"], data["alerts"]


def test_alerts_name_the_notebook_and_not_a_cpu_fallback_of_the_training_job(world: dict) -> None:
    data = gpus_json(world)
    train = holder(world, "train.py")
    alerts = data["alerts"]
    fallback = [a for a in alerts if a["kind"] == "cpu_fallback"]
    ours = [a for a in fallback if a["subject"] == f"PID {train['pid']}" or "train.py" in a["message"]]
    assert not ours, alerts
    stale = [a for a in alerts if a["kind"] == "stale_vram" and NOTEBOOK in a["message"]]
    assert stale, alerts
    if world["driver"] == "550":
        # memory of ours that the driver reports as 0 is no reason to call it unattributed (GPU 2's, of
        # another container that this driver leaves out of the list, really is held by no listed process)
        ours = {"GPU 0", "GPU 1", "GPU 3"}
        assert not [a for a in alerts if a["kind"] == "unattributed_vram" and a["subject"] in ours], alerts
    cpu_rows = [r for r in data["processes"] if r["gpu_index"] is None and r["pid"] == train["pid"]]
    assert not cpu_rows, brief(cpu_rows)  # it holds GPU 0's device file: not "on the CPU"


# --- the dashboard at 80x24 ------------------------------------------------------------------------------


def test_in_tmux_k_on_the_stale_alert_ends_the_kernel_frees_gpu1_and_spares_training(world: dict) -> None:
    screens = world.get("screens", {})
    stale = [line for line in screens.get("stale_alert", "").splitlines() if "Stale" in line]
    assert any(NOTEBOOK in line for line in stale), why(world)
    assert "kill_dialog" in screens, f"{why(world)}\n{screens.get('at_error', '')}"
    if world["driver"] == "535.104":  # the dialog says why this local process is NVML's entry
        assert "device file" in screens["kill_dialog"], screens["kill_dialog"]
    assert world.get("kernel_gone") is True, why(world)
    after = world["gpu1_used_after"]
    assert after <= world["gpu1_used_before"] - KERNEL_MIB, (after, why(world))
    outcome = screens.get("after_kill", "")
    assert "freed" in outcome and "not freed" not in outcome, outcome
    # `s` in the dialog: shut down through the Jupyter server inside the container, which no longer lists it
    assert "shut down" in outcome and world["kernel_pids_after"] == [], outcome
    assert "404" in str(world["kernel_api_after"]), world["kernel_api_after"]
    assert world.get("train_alive_after") is True, why(world)
    # nothing else was signalled: the other holders, the clash's local sleep, the other container's process
    assert world["alive_after"] and all(world["alive_after"].values()), world["alive_after"]
    assert world["train_files_after"] == files_of("0")
    later = gpus_json(world, "gpus_json_after")
    rows = brief(later["processes"])
    assert not [r for r in later["processes"] if r["pid"] == world["kernel"]["pid"]], rows
    assert [r["pid"] for r in rows_on(later, 0)] == [holder(world, "train.py")["pid"]], rows
    assert not world.get("errors"), why(world)
    assert world.get("cleaned_up") is True


def test_the_monitor_at_80x24_labels_guesses_and_estimates(world: dict) -> None:
    """The process table says what is a guess: NVML's PID and "probably" for a start-order pairing (535.104),
    "≈" for the sole holder's estimate (550)."""
    screen = world.get("screens", {}).get("stale_alert", "")
    assert screen, why(world)

    def row(pid: int) -> str:
        return next((line for line in screen.splitlines() if line.split()[:1] == [str(pid)]), "")

    if world["driver"] == "535.104":
        train = holder(world, "train.py")
        assert str(train["host_pid"]) in row(train["pid"]), screen
        for cmd in ("prep.py", "eval.py"):
            assert "probably" in row(holder(world, cmd)["pid"]), screen
    if world["driver"] == "550":
        for pid in (holder(world, "train.py")["pid"], world["kernel"]["pid"]):
            assert "≈" in row(pid), screen
