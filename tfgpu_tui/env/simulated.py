"""The Environment tab's demo (``--demo``): the shipped recording's problems on the simulated machine.

The recording (data/demo_environment.json, read by `recorded`) brings the problems worth showing: a stale
cuDNN on LD_LIBRARY_PATH that breaks the placement test, an old nvcc. Everything that names the machine is
taken from the simulated machine instead (gpu/simulated.py's `DEMO_MACHINE`): the driver, the GPUs and the
processes holding their memory (one reading of the GPU simulation, as the Monitor shows it), and the Python
that trains there. So the Environment tab, the Monitor and the Batch probe describe one machine.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.recorded import demo_recording_dict, facts_from_dict, inspection_from_dict
from tfgpu_tui.env.tf_inspection import InspectionRun
from tfgpu_tui.gpu.simulated import DEMO_MACHINE, SimulatedMachine, SimulatedSource


def simulated_environment(
    gpus: int = 2, machine: SimulatedMachine = DEMO_MACHINE, source: SimulatedSource | None = None
) -> tuple[EnvFacts, InspectionRun]:
    """Facts and TensorFlow inspection of the simulated machine with `gpus` GPUs (`source`: the simulation to
    read its processes from, e.g. the Monitor's, so that a process ended there is gone here too)."""
    source = source or SimulatedSource(gpus=gpus, machine=machine)
    data = _on_machine(demo_recording_dict(), machine)
    reading = source.read()
    count = len(reading.devices)
    driver = reading.driver
    data["nvml"] = {
        "error": None,
        "driver": {
            "driver_version": machine.driver_version,
            "cuda_driver_version": driver.cuda_driver_version if driver else machine.cuda_driver_version,
            "nvml_version": machine.nvml_version,
        },
        "devices": [asdict(device) for device in machine.devices(count)],
        "processes": [
            {"gpu_index": p.gpu_index, "pid": p.pid, "memory_mib": p.memory_mib} for p in reading.processes
        ],
    }
    inspection = data["inspection"]
    inspection["physical_gpus"] = [
        {
            "name": f"/physical_device:GPU:{index}",
            "device_type": "GPU",
            "compute_capability": list(machine.compute_capability),
            "device_name": machine.gpu_name,
        }
        for index in range(count)
    ]
    inspection["logical_gpus"] = [f"/device:GPU:{index}" for index in range(count)]
    return facts_from_dict(data), inspection_from_dict(data)


def _on_machine(data: dict[str, Any], machine: SimulatedMachine) -> dict[str, Any]:
    """The recording with its machine's names (interpreter prefix, GPU name and compute capability,
    driver version) replaced by the simulated machine's, wherever they appear (paths, stderr lines)."""
    recorded_gpu = data["nvml"]["devices"][0]
    recorded_cc = ".".join(str(part) for part in recorded_gpu["compute_capability"])
    replacements = {
        data["interpreter"]["prefix"]: machine.python.removesuffix("/bin/python"),
        recorded_gpu["name"]: machine.gpu_name,
        f"compute capability: {recorded_cc}": "compute capability: "
        + ".".join(str(part) for part in machine.compute_capability),
        data["nvml"]["driver"]["driver_version"]: machine.driver_version,
    }
    text = json.dumps(data)
    for old, new in replacements.items():
        text = text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])
    data = json.loads(text)
    data["interpreter"]["version"] = data["inspection"]["python"]["version"] = machine.python_version
    return data
