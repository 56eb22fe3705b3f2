"""Issue 30 item 7 inside a container: a real Jupyter server and its kernels in a PID namespace of their own
(../shared/fakenvml/container.py, root), GPU memory on the scripted NVML as a 535.104 driver (host PIDs in
NVML's lists) and a 580 one (the container's own PIDs) report it. tests/container_kernel_actions.py plays it
inside and records what happened; these tests read it: Shut down frees the memory and the server no longer
lists the kernel, Restart frees it and the kernel id comes back with a new PID, SIGKILL is followed by the
server's own restart, and `gpus --json` gives each kernel's jupyter fields (no token).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.helpers.container_run import ONE_CONTAINER_AT_A_TIME, run_container, why_not
from tests.helpers.paths import HELPERS

SCRIPT = HELPERS / "container_kernel_actions.py"
KERNEL_MIB = 18432
HANG_GUARD_SECONDS = 500  # the script's own waits are bounded well inside this

WHY_NOT = why_not()
pytestmark = [
    pytest.mark.e2e,
    ONE_CONTAINER_AT_A_TIME,
    pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or ""),
]


@pytest.fixture(scope="module", params=["535.104", "580"])
def world(request: pytest.FixtureRequest, fakenvml_lib_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    era = request.param
    out = tmp_path_factory.mktemp(f"kernels-{era}")
    argv = ["--lib", str(fakenvml_lib_dir), "--gpus", "1", "--driver", era, "--python", sys.executable, "--"]
    return run_container(
        [*argv, sys.executable, str(SCRIPT), "--driver", era, str(out)], out, HANG_GUARD_SECONDS
    )


def why(world: dict) -> str:
    errors = "\n".join(world.get("errors", []))
    return f"era {world.get('driver')}, rc {world.get('rc')}\n{errors}\n--- log ---\n{world['log_tail']}"


def kernel(world: dict, name: str) -> dict:
    assert not world.get("errors") and world["rc"] == 0, why(world)
    return world["kernels"][name]


def test_it_ran_in_a_pid_namespace_of_its_own(world: dict) -> None:
    assert not world.get("errors") and world["rc"] == 0, why(world)
    assert world["namespace"] != os.readlink("/proc/self/ns/pid")
    assert all(k["pid"] != k["host_pid"] for k in world["kernels"].values())
    assert world["gpu_used_before"] >= 3 * KERNEL_MIB


def test_gpus_json_gives_each_kernels_jupyter_fields(world: dict) -> None:
    run = world["gpus_json"]
    assert run["rc"] == 0, run["stderr"]
    assert not world["token_in_gpus_json"]
    for name, facts in world["kernels"].items():
        row = next(r for r in run["rows"] if r["pid"] == facts["pid"])
        jupyter = row["jupyter"]
        assert jupyter["kernel_id"] == facts["kernel_id"] and jupyter["notebook_path"] == f"{name}.ipynb"
        assert jupyter["server_url"] == world["server_url"] and jupyter["actions"] == ["shutdown", "restart"]


def test_shut_down_frees_the_memory_and_the_server_no_longer_lists_the_kernel(world: dict) -> None:
    facts = kernel(world, "shutdown")
    assert facts["row"]["actions"] == ["shutdown", "restart"], facts
    outcome = facts["outcome"]
    assert outcome["result"] == "freed" and outcome["freed_mib"] == KERNEL_MIB, outcome
    assert outcome["kernel_after"] == "shut_down" and outcome["signals_sent"] == []
    assert not facts["listed_by_server"] and facts["kernel_pids_after"] == []
    assert facts["pid"] not in facts["listed_pids_after"]


def test_restart_frees_the_memory_and_the_kernel_id_comes_back(world: dict) -> None:
    facts = kernel(world, "restart")
    outcome = facts["outcome"]
    assert outcome["result"] == "freed" and outcome["freed_mib"] == KERNEL_MIB, outcome
    assert outcome["kernel_after"] == "restarted" and outcome["new_pid"] not in (None, facts["pid"])
    assert facts["listed_by_server"] and facts["kernel_pids_after"] == [outcome["new_pid"]]
    assert facts["pid"] not in facts["listed_pids_after"]


def test_a_signal_reports_the_servers_own_restart(world: dict) -> None:
    facts = kernel(world, "signal")
    outcome = facts["outcome"]
    assert outcome["result"] == "freed" and outcome["signals_sent"] == ["SIGKILL"], outcome
    assert outcome["kernel_after"] == "restarted_by_server", outcome
    assert outcome["new_pid"] in facts["kernel_pids_after"] and facts["listed_by_server"]
    assert "by itself" in outcome["message"]


def test_the_memory_left_is_the_gpus_own(world: dict) -> None:
    assert not world.get("errors") and world["rc"] == 0, why(world)
    assert world["gpu_used_after"] <= world["gpu_used_before"] - 3 * KERNEL_MIB
