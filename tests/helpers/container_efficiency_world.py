"""Runs INSIDE a fakenvml container (../shared/fakenvml/container.py): the efficiency diagnoses as a renter of
four H200s sees them.

    container.py --lib LIB --gpus 4 --driver ERA --util 0=95 --util 1=97 --util 2=96 \
        --hold "gpus=0 mib=30720 sm=85 cmd=train.py tf=1" --hold "gpus=1 mib=8192 sm=90 cmd=serve.py" \
        --hold "gpus=2 mib=40960 sm=95 cmd=mixed.py" \
        -- python tests/helpers/container_efficiency_world.py RESULTS

It scripts GPM and the link onto container.py's device lines (atomically: write, then rename): GPU 0's
TensorFlow job keeps 70 % of the SMs busy with the tensor cores idle; GPU 1 reads 97 % with 8 % of its SMs
active; GPU 2 is a healthy busy GPU; GPU 3 is idle with its link trained down. Then `tfgpu-tui gpus --json`,
whose output and the container's PIDs go to RESULTS/results.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

GPM = {
    0: "gpm_sm=70 gpm_tensor=0.3",
    1: "gpm_sm=8 gpm_tensor=0",
    2: "gpm_sm=80 gpm_tensor=55",
    3: "gpm=1 pcie_gen=1 pcie_width=16 max_pcie_gen=5 max_pcie_width=16",
}


def script_gpm(path: Path) -> None:
    """Append each GPU's GPM keys to its device line, atomically."""
    lines, index = [], 0
    for line in path.read_text().splitlines():
        if line.startswith("device "):
            line += " " + GPM.get(index, "")
            index += 1
        lines.append(line)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text("\n".join(lines) + "\n")
    temporary.replace(path)


def main() -> int:
    out = Path(sys.argv[1])
    results: dict = {"errors": []}
    try:
        script_gpm(Path(os.environ["FAKE_NVML_SCENARIO"]))
        results["pids"] = json.loads(Path(os.environ["TFGPU_SIM_PIDS"]).read_text())
        done = subprocess.run(
            [sys.executable, "-m", "tfgpu_tui", "gpus", "--json", "--window", "2"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        results["gpus_rc"], results["gpus_stderr"] = done.returncode, done.stderr[-2000:]
        results["gpus_json"] = json.loads(done.stdout) if done.returncode == 0 else None
        results["scenario"] = Path(os.environ["FAKE_NVML_SCENARIO"]).read_text()
        results["alive"] = {h["pid"]: os.path.exists(f"/proc/{h['pid']}") for h in results["pids"]["holders"]}
    except Exception as exc:  # the facts so far still go out
        results["errors"].append(repr(exc))
    (out / "results.json").write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
