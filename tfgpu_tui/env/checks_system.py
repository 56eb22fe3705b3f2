"""The machine and the interpreter: driver, Python environment, CUDA_VISIBLE_DEVICES, GPU processes."""

from __future__ import annotations

from tfgpu_tui.env.check_base import (
    Verdict,
    check,
    gpu_count,
    gpu_list,
)
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.inspection_data import InspectionResult
from tfgpu_tui.env.targets import OLDEST_PYTHON_TEXT, too_old

HIDE_ALL_VALUES = frozenset({"", "-1", "none"})
# What an interpreter that is no environment is, by `facts.interpreter_kind`.
NOT_AN_ENVIRONMENT = {
    "system": "the system Python",
    "pyenv": "a pyenv-built Python's own interpreter",
    "installation": "a Python installation's own interpreter",
}
NEW_VENV = (
    "Make a venv from a Python {oldest} or newer and train in it: `python3.12 -m venv ~/venvs/tf && "
    "~/venvs/tf/bin/python -m pip install 'tensorflow[and-cuda]'`, then `tfgpu-tui --python "
    "~/venvs/tf/bin/python`."
)


@check("driver", "NVIDIA driver", order=10)
def check_driver(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    nvml = facts.nvml
    why = "TensorFlow reaches the GPU through the NVIDIA driver; without it everything runs on the CPU."
    if nvml.error is not None:
        # A driver that lists no GPU is a warning (docs/environment-checks.md): the machine may have none.
        status = Status.WARNING if nvml.error.kind == "no_devices" else Status.FAILURE
        return Verdict(status, nvml.error.message, why, nvml.error.fix)
    driver = nvml.driver
    version = driver.driver_version if driver else None
    cuda = driver.cuda_driver_version if driver else None
    text = f"Driver {version or 'version unknown'}" + (f", supports CUDA up to {cuda}" if cuda else "")
    if not nvml.devices:
        return Verdict(
            Status.WARNING,
            f"{text}, but NVML lists no GPU.",
            why,
            "Check `nvidia-smi -L`; in a container, start it with `--gpus all`.",
        )
    return Verdict(Status.OK, f"{text}; {gpu_count(facts)} GPU(s): {gpu_list(facts)}.", why)


@check("libcuda", "Driver's CUDA library (libcuda.so.1)", order=15)
def check_libcuda(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = (
        "CUDA programs reach the GPU through libcuda.so.1, the driver's user-space part; NVML (what "
        "nvidia-smi uses) is a different library, so it can list GPUs that CUDA cannot use."
    )
    interpreter = facts.interpreter
    if interpreter.libcuda_loaded is None:
        return Verdict(Status.SKIPPED, "Not checked (not Linux, or the interpreter could not be asked).", why)
    if interpreter.libcuda_loaded:
        return Verdict(Status.OK, f"libcuda.so.1 loads ({interpreter.libcuda_path or 'path unknown'}).", why)
    if not facts.nvml.devices:
        return Verdict(Status.SKIPPED, "libcuda.so.1 not found, and no GPU listed either.", why)
    return Verdict(Status.FAILURE, libcuda_missing_text(facts), why, libcuda_fix(facts))


def libcuda_missing_text(facts: EnvFacts) -> str:
    """The cause, stated once: NVML sees GPUs but the driver's CUDA library is not here."""
    where = "this container" if facts.interpreter.in_container else "this machine"
    return (
        f"NVML lists {gpu_count(facts)} GPU(s), but libcuda.so.1 cannot be loaded "
        f"({facts.interpreter.libcuda_error or 'not found'}): the driver's CUDA library is not in {where}, "
        "so no CUDA program (TensorFlow included) can use the GPU, whatever pip installs."
    )


def libcuda_fix(facts: EnvFacts) -> str:
    """Mount the driver's CUDA library into the container, or install the driver's user-space part."""
    if facts.interpreter.in_container:
        return (
            "Start the container with the compute capability: `docker run --gpus all ...` or "
            "`-e NVIDIA_DRIVER_CAPABILITIES=compute,utility` (the NVIDIA container runtime mounts "
            "libcuda.so.1 only with `compute`)."
        )
    driver = facts.nvml.driver.driver_version if facts.nvml.driver else None
    major = driver.split(".")[0] if driver else "<driver major>"
    return (
        f"Install the driver's user-space libraries of the running driver{f' ({driver})' if driver else ''}: "
        f"`sudo apt install libnvidia-compute-{major}` (Ubuntu/Debian), or reinstall the NVIDIA driver."
    )


@check("python_env", "Python environment", order=20)
def check_python_env(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    interpreter = facts.interpreter
    why = "A virtual environment keeps TensorFlow's pinned CUDA packages away from the system's Python."
    if interpreter.error:
        return Verdict(
            Status.FAILURE,
            interpreter.error,
            "Every TensorFlow check runs in this interpreter.",
            NEW_VENV.format(oldest=OLDEST_PYTHON_TEXT)
            if too_old(interpreter.version)
            else "Pass the interpreter of your training environment: `tfgpu-tui --python ~/venv/bin/python`.",
        )
    where = f"Python {interpreter.version} at {interpreter.executable}"
    if interpreter.kind in NOT_AN_ENVIRONMENT:
        return Verdict(
            Status.WARNING,
            f"{where} is {NOT_AN_ENVIRONMENT[interpreter.kind]} (no venv or conda env).",
            why,
            "python3 -m venv ~/venvs/tf && . ~/venvs/tf/bin/activate && pip install 'tensorflow[and-cuda]'",
        )
    return Verdict(Status.OK, f"{where} ({interpreter.kind}: {interpreter.prefix}).", why)


@check("cuda_visible_devices", "CUDA_VISIBLE_DEVICES", order=30)
def check_cuda_visible_devices(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = "CUDA_VISIBLE_DEVICES decides which GPUs CUDA (and so TensorFlow) may see at all."
    value = facts.env_vars.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return Verdict(Status.OK, "Not set: every GPU is visible.", why)
    count = gpu_count(facts)
    if value.strip().lower() in HIDE_ALL_VALUES:
        status = Status.FAILURE if count else Status.WARNING
        shown = '""' if value == "" else value
        return Verdict(
            status,
            f"CUDA_VISIBLE_DEVICES={shown} hides every GPU from TensorFlow.",
            why,
            "unset CUDA_VISIBLE_DEVICES   # or export CUDA_VISIBLE_DEVICES=0",
        )
    problem = _invalid_visible_device(value, facts)
    if problem:
        fix = f"export CUDA_VISIBLE_DEVICES={','.join(str(i) for i in range(count)) or 0}"
        return Verdict(Status.FAILURE, problem, why, fix)
    return Verdict(Status.OK, f"CUDA_VISIBLE_DEVICES={value}.", why)


def _invalid_visible_device(value: str, facts: EnvFacts) -> str:
    """Why a CUDA_VISIBLE_DEVICES list hides GPUs (CUDA stops at the first invalid entry), or ""."""
    count = gpu_count(facts)
    uuids = [device.uuid or "" for device in facts.nvml.devices]
    for position, token in enumerate(part.strip() for part in value.split(",")):
        if token.isdigit():
            if facts.nvml.error is None and int(token) >= count:
                later = " and everything after it" if position < len(value.split(",")) - 1 else ""
                return (
                    f"CUDA_VISIBLE_DEVICES={value}: GPU {token} does not exist (this machine has {count}); "
                    f"CUDA ignores it{later}."
                )
        elif token.startswith(("GPU-", "MIG-")):
            if uuids and token.startswith("GPU-") and not any(uuid.startswith(token) for uuid in uuids):
                return f"CUDA_VISIBLE_DEVICES={value}: no GPU has UUID {token}."
        else:
            return f"CUDA_VISIBLE_DEVICES={value}: {token!r} is not a GPU index or UUID; CUDA stops there."
    return ""


@check("gpu_processes", "Other processes on the GPU", order=40)
def check_gpu_processes(facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    why = "Memory held by other processes is memory your training cannot use (CUDA_ERROR_OUT_OF_MEMORY)."
    if facts.nvml.error is not None or not facts.nvml.devices:
        return Verdict(Status.SKIPPED, "No GPU to look at.", why)
    processes = facts.nvml.processes
    if not processes:
        return Verdict(Status.OK, "No process holds GPU memory.", why)
    parts = [
        f"PID {process.pid} on GPU {process.gpu_index}"
        + (f" ({process.memory_mib:.0f} MiB)" if process.memory_mib is not None else "")
        for process in processes
    ]
    return Verdict(
        Status.WARNING,
        f"{len(processes)} process(es) hold GPU memory: {', '.join(parts)}.",
        why,
        "Open the Monitor tab (key 2) to see who they are and stop stale ones, or `nvidia-smi`.",
        link_tab="monitor",
    )
