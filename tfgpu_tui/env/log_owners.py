"""Which check already names the cause behind a line of TensorFlow's log, so the two never disagree.

A log line such as "Could not load dynamic library 'libcuda.so.1'" is a symptom; the ``libcuda`` check names
its cause and its fix. Where that check found the problem, the line is folded into it (its detail quotes
the line, and the worse of the two statuses stands); where it did not, the line stays a finding of its own,
with a fix that never installs what is installed.
"""

from __future__ import annotations

import dataclasses

from tfgpu_tui.env import fixes
from tfgpu_tui.env.check_base import tensorflow_version
from tfgpu_tui.env.checks_system import libcuda_fix
from tfgpu_tui.env.diagnoses import Diagnosis
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Finding, Status
from tfgpu_tui.env.inspection_data import InspectionResult

# Log lines about a CUDA library TensorFlow loads (or one it loaded and refused): the cuda_libraries check's.
LIBRARY_SIGNATURES = frozenset(
    {
        "DSO_LOAD_FAIL",
        "CUDART_STUB_NO_DRIVER",
        "CUDART_STUB_IGNORE",
        "CUDA_RUNTIME_LOAD_ERR",
        "CUDNN_VERSION_UNKNOWN",
        "CUDNN_VERSION_MISMATCH",
        "DNN_NOT_FOUND",
        "DNN_IMPL_NOT_FOUND",
    }
)
DRIVER_LIBRARIES = ("libcuda.", "nvcuda")  # the driver's own CUDA library (Linux, Windows)
PROBLEMS = (Status.WARNING, Status.FAILURE)
SEVERITY_ORDER = (Status.OK, Status.SKIPPED, Status.WARNING, Status.FAILURE)
SAYS_THE_SAME = "TensorFlow's log says the same:"
CHECK_TITLES = {"libcuda": "Driver's CUDA library", "cuda_libraries": "CUDA libraries TensorFlow loads"}


# The library a signature without a `lib` detail is about.
SIGNATURE_LIBRARIES = {
    "CUDART_STUB_NO_DRIVER": "libcudart",
    "CUDART_STUB_IGNORE": "libcudart",
    "CUDA_RUNTIME_LOAD_ERR": "libcudart",
    "CUDNN_VERSION_UNKNOWN": "libcudnn",
    "CUDNN_VERSION_MISMATCH": "libcudnn",
    "DNN_NOT_FOUND": "libcudnn",
    "DNN_IMPL_NOT_FOUND": "libcudnn",
}


def library_of(diagnosis: Diagnosis) -> str:
    """The library a log line is about, by its stem (``libcudnn``), "" where it names none."""
    lib = diagnosis.details.get("lib", "")
    return lib.split(".so")[0].split(".dll")[0] if lib else SIGNATURE_LIBRARIES.get(diagnosis.id, "")


def names_the_same(finding: Finding, diagnosis: Diagnosis) -> bool:
    """Whether the check's finding already names the line's library as a problem (its problem sentences
    come before the list of what is needed)."""
    if owner(diagnosis) == "libcuda":
        return True
    stem = library_of(diagnosis)
    return bool(stem) and f"{stem} " in finding.detail.split(" Needed (")[0] + " "


def owner(diagnosis: Diagnosis) -> str | None:
    """The id of the check that judges this line's cause, or None where no check does."""
    if diagnosis.details.get("lib", "").startswith(DRIVER_LIBRARIES):
        return "libcuda"
    return "cuda_libraries" if diagnosis.id in LIBRARY_SIGNATURES else None


def owned_fix(diagnosis: Diagnosis, facts: EnvFacts, inspection: InspectionResult | None) -> str:
    """The fix of a log finding whose owning check saw no problem: the driver's library comes from the
    driver, never from pip; an install line that installs nothing becomes a pointer to the check."""
    check_id = owner(diagnosis)
    if check_id == "libcuda":
        return libcuda_fix(facts)
    if check_id == "cuda_libraries" and "tensorflow[and-cuda]" in diagnosis.fix:
        command = fixes.gpu_install(facts, tensorflow_version(facts, inspection))
        if command.startswith("Nothing to install"):
            return (
                f"{command} See “{CHECK_TITLES[check_id]}”: it names the copy of each library the loader "
                "finds first."
            )
    return diagnosis.fix


def fold(findings: list[Finding], diagnosis: Diagnosis, status: Status) -> bool:
    """Fold a log line into the finding of the check that already named its cause; False where that check
    found no problem, or another one (the line then stays a finding of its own)."""
    check_id = owner(diagnosis)
    for position, finding in enumerate(findings):
        if finding.id == check_id and finding.status in PROBLEMS and names_the_same(finding, diagnosis):
            worse = max(finding.status, status, key=SEVERITY_ORDER.index)
            line = diagnosis.line.strip()[:300]
            joiner = "; " if SAYS_THE_SAME in finding.detail else f" {SAYS_THE_SAME} "
            quoted = f"{finding.detail}{joiner}{line}"
            findings[position] = dataclasses.replace(finding, status=worse, detail=quoted)
            return True
    return False
