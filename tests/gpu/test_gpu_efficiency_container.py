"""The efficiency diagnoses inside a container (fakenvml's container.py: a PID namespace of its own, NVML's
PIDs as each driver era reports them): GPU 0's real TensorFlow job is named by its PID here for idle tensor
cores, GPU 1 is busy but not working, and the healthy busy GPU and the idle GPU with a downshifted link stay
silent. tests/helpers/container_efficiency_world.py runs inside."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers.container_run import ONE_CONTAINER_AT_A_TIME, run_container, why_not
from tests.helpers.paths import HELPERS

WORLD = HELPERS / "container_efficiency_world.py"
WORLD_TIMEOUT_SECONDS = 240
WORLD_ARGS = [
    "--gpus", "4", "--util", "0=95", "--util", "1=97", "--util", "2=96",
    "--hold", "gpus=0 mib=30720 sm=85 cmd=train.py tf=1",
    "--hold", "gpus=1 mib=8192 sm=90 cmd=serve.py",
    "--hold", "gpus=2 mib=40960 sm=95 cmd=mixed.py",
]  # fmt: skip
ROW_FACTS = ("pid", "gpu_index", "state", "tensorflow_loaded", "gpu_memory_mib", "attribution")
WHY_NOT = why_not(modules=())
pytestmark = [
    pytest.mark.e2e,
    ONE_CONTAINER_AT_A_TIME,
    pytest.mark.tf,
    pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or ""),
]


@pytest.fixture(scope="module", params=["535.104", "580"])
def world(request: pytest.FixtureRequest, fakenvml_lib_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    era = request.param
    out = tmp_path_factory.mktemp(f"efficiency-{era}")
    argv = ["--lib", str(fakenvml_lib_dir), "--driver", era, "--python", sys.executable, *WORLD_ARGS,
            "--", sys.executable, str(WORLD), str(out)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("FAKE_NVML_SCENARIO", "TFGPU_TUI_CONFIG")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    results = run_container(argv, out, WORLD_TIMEOUT_SECONDS, env)
    run_dir = Path(results.get("run_dir", ""))
    if run_dir.name.startswith("gpu-container-") and run_dir.parent == Path(tempfile.gettempdir()):
        shutil.rmtree(run_dir, ignore_errors=True)
    return results


def test_inside_a_container_the_tensorflow_job_is_named_and_the_near_misses_stay_silent(world: dict) -> None:
    data = world.get("gpus_json")
    assert data is not None, (world.get("errors"), world.get("gpus_stderr"), world.get("log_tail"))
    train = next(h for h in world["pids"]["holders"] if h["spec"].get("cmd") == "train.py")
    found = {(d["kind"], d["gpu_index"], d["pid"]) for d in data["diagnoses"]}
    seen = {  # what the diagnoses rest on, should they differ
        "diagnoses": data["diagnoses"],
        "processes": [{k: r.get(k) for k in ROW_FACTS} for r in data["processes"]],
        "activity": [d["activity"] for d in data["devices"]],
        "sampled_seconds": data.get("sampled_seconds"),
        "scenario": world.get("scenario"),
        "holders_alive": world.get("alive"),
    }
    wanted = {("tensor_cores_idle", 0, train["pid"]), ("busy_not_working", 1, None)}
    assert found == wanted, json.dumps(seen, indent=1)
    activity = [d["activity"] for d in data["devices"]]
    assert [a["sm_active"] for a in activity] == [70.0, 8.0, 80.0, 0.0]
    assert data["devices"][3]["pcie"] == {"gen": 1, "width": 16, "max_gen": 5, "max_width": 16}
    rows = {r["pid"]: r for r in data["processes"] if r["gpu_index"] == 0}
    assert rows[train["pid"]]["tensorflow_loaded"] is True
