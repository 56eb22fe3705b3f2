"""The TensorFlow inspection's JSON, parsed once into frozen dataclasses: the schema the checks read.

``tf_inspect_script.py`` prints one JSON object from inside the target interpreter, which is outside our
control, so every field is checked for its type here and a wrong or missing one reads as "not known" (None,
empty) rather than raising. Checks get a ``InspectionResult``: how the run ended, the parsed data, and the
diagnoses of TensorFlow's log, each computed once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from tfgpu_tui.env.diagnoses import Diagnosis, diagnose_lines, this_platform

if TYPE_CHECKING:
    from tfgpu_tui.env.tf_inspection import InspectionRun


def _str(value: Any) -> str | None:
    """A non-empty string (numbers become text), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return value if isinstance(value, str) and value else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def _capability(value: Any) -> tuple[int, int] | None:
    """(major, minor) from a list like [8, 9]; None unless it holds two integers."""
    if isinstance(value, list) and len(value) >= 2 and all(isinstance(part, int) for part in value[:2]):
        return (value[0], value[1])
    return None


@dataclass(frozen=True)
class TfPython:
    """The interpreter the inspection ran in."""

    version: str | None = None
    executable: str | None = None
    prefix: str | None = None
    base_prefix: str | None = None
    platform: str | None = None


@dataclass(frozen=True)
class TfImport:
    """``import tensorflow``: whether it is installed and imports, and how long that took."""

    installed: bool = False
    version: str | None = None
    git_version: str | None = None
    import_seconds: float | None = None
    error: str | None = None
    error_type: str | None = None


@dataclass(frozen=True)
class TfBuild:
    """TensorFlow's ``tf.sysconfig.get_build_info()`` (the keys the checks use).

    Attributes:
        is_cuda_build: None when the build info does not say.
        cuda_version: ``cuda_version`` (or the older ``cuda_version_number``) as text.
        cudnn_version: ``cudnn_version`` (or ``cudnn_version_number``); TF gives only the major.
        cuda_compute_capabilities: compiled architectures, e.g. ``("sm_80", "compute_90")``.
        error: why the build info could not be read.
    """

    is_cuda_build: bool | None = None
    cuda_version: str | None = None
    cudnn_version: str | None = None
    cuda_compute_capabilities: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class TfGpu:
    """One GPU in ``tf.config.list_physical_devices("GPU")`` with its device details."""

    name: str
    device_type: str | None = None
    compute_capability: tuple[int, int] | None = None
    device_name: str | None = None
    details_error: str | None = None

    @property
    def label(self) -> str:
        """Its name as the report shows it, e.g. ``NVIDIA A100 (cc 8.0)``."""
        name = self.device_name or self.name
        capability = self.compute_capability
        return f"{name} (cc {capability[0]}.{capability[1]})" if capability else name


class PlacementStatus(str, Enum):
    """How the matmul on GPU:0 went (anything the inspection did not say reads as skipped)."""

    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Placement:
    """The placement test: a matmul asked for GPU:0, and the same on the CPU for comparison."""

    status: PlacementStatus = PlacementStatus.SKIPPED
    device: str | None = None
    seconds: float | None = None
    cpu_seconds: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class InspectionData:
    """Everything the inspection printed.

    Attributes:
        tensorflow: None when the inspection did not get as far as importing TensorFlow.
        physical_gpus: None when the GPUs were never listed (TensorFlow unusable or a stage failed).
        inspection_errors: "stage: error" for a inspection stage that raised (later stages were skipped).
    """

    inspection_version: int | None = None
    python: TfPython = TfPython()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tensorflow: TfImport | None = None
    build: TfBuild = TfBuild()
    built_with_cuda: bool | None = None
    physical_gpus: tuple[TfGpu, ...] | None = None
    logical_gpus: tuple[str, ...] = ()
    gpu_init_error: str | None = None
    placement: Placement = Placement()
    loaded_libraries: tuple[str, ...] = ()
    inspection_errors: tuple[str, ...] = ()

    @property
    def cuda_build(self) -> bool | None:
        """Whether TensorFlow is a CUDA build: build info first, then ``tf.test.is_built_with_cuda()``."""
        return self.build.is_cuda_build if self.build.is_cuda_build is not None else self.built_with_cuda


def _python(raw: dict[str, Any]) -> TfPython:
    return TfPython(
        *(_str(raw.get(name)) for name in ("version", "executable", "prefix", "base_prefix", "platform"))
    )


def _tensorflow(raw: Any) -> TfImport | None:
    if not isinstance(raw, dict):
        return None
    return TfImport(
        installed=raw.get("installed") is True,
        version=_str(raw.get("version")),
        git_version=_str(raw.get("git_version")),
        import_seconds=_float(raw.get("import_seconds")),
        error=_str(raw.get("error")),
        error_type=_str(raw.get("error_type")),
    )


def _build(raw: dict[str, Any]) -> TfBuild:
    cuda_build = raw.get("is_cuda_build")
    return TfBuild(
        is_cuda_build=bool(cuda_build) if "is_cuda_build" in raw and cuda_build is not None else None,
        cuda_version=_str(raw.get("cuda_version")) or _str(raw.get("cuda_version_number")),
        cudnn_version=_str(raw.get("cudnn_version")) or _str(raw.get("cudnn_version_number")),
        cuda_compute_capabilities=_strings(raw.get("cuda_compute_capabilities")),
        error=_str(raw.get("error")),
    )


def _gpu(raw: Any) -> TfGpu | None:
    if not isinstance(raw, dict):
        return None
    return TfGpu(
        name=_str(raw.get("name")) or "GPU",
        device_type=_str(raw.get("device_type")),
        compute_capability=_capability(raw.get("compute_capability")),
        device_name=_str(raw.get("device_name")),
        details_error=_str(raw.get("details_error")),
    )


def _gpus(raw: Any) -> tuple[TfGpu, ...] | None:
    if not isinstance(raw, list):
        return None
    return tuple(gpu for gpu in map(_gpu, raw) if gpu is not None)


def _placement(raw: dict[str, Any]) -> Placement:
    statuses = {status.value: status for status in PlacementStatus}
    return Placement(
        status=statuses.get(str(raw.get("status")), PlacementStatus.SKIPPED),
        device=_str(raw.get("device")),
        seconds=_float(raw.get("seconds")),
        cpu_seconds=_float(raw.get("cpu_seconds")),
        error=_str(raw.get("error")),
    )


def parse_inspection_data(raw: Mapping[str, Any] | None) -> InspectionData:
    """The inspection's JSON object as a InspectionData; None (no output) gives the empty one."""
    if not raw:
        return InspectionData()
    version = raw.get("inspection_version")
    env = {str(key): str(value) for key, value in _dict(raw.get("env")).items()}
    return InspectionData(
        inspection_version=version if isinstance(version, int) and not isinstance(version, bool) else None,
        python=_python(_dict(raw.get("python"))),
        env=MappingProxyType(env),
        tensorflow=_tensorflow(raw.get("tensorflow")),
        build=_build(_dict(raw.get("build_info"))),
        built_with_cuda=_bool(raw.get("built_with_cuda")),
        physical_gpus=_gpus(raw.get("physical_gpus")),
        logical_gpus=_strings(raw.get("logical_gpus")),
        gpu_init_error=_str(raw.get("gpu_init_error")),
        placement=_placement(_dict(raw.get("placement"))),
        loaded_libraries=_strings(raw.get("loaded_libraries")),
        inspection_errors=_strings(raw.get("inspection_errors")),
    )


@dataclass(frozen=True)
class InspectionResult:
    """What the checks read about one inspection run (and its VLOG re-run, when there was one).

    Attributes:
        error_kind: None when the inspection printed its JSON; else why not (``InspectionOutcome``).
        message: what went wrong, in one sentence (empty on success).
        data: the parsed JSON (empty when the inspection printed none).
        log_matches: every known problem message in TensorFlow's stderr (both runs), in order.
    """

    error_kind: str | None
    message: str
    data: InspectionData
    log_matches: tuple[Diagnosis, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    @property
    def diagnoses(self) -> tuple[Diagnosis, ...]:
        """One diagnosis per signature, the first of each, in order of appearance."""
        first: dict[str, Diagnosis] = {}
        for found in self.log_matches:
            first.setdefault(found.id, found)
        return tuple(first.values())

    @classmethod
    def from_run(cls, run: InspectionRun) -> InspectionResult:
        """Parse a run's JSON and diagnose its log, once."""
        outcome = run.outcome
        matches = tuple(diagnose_lines(run.stderr_lines, platform_name=this_platform()))  # ran here
        return cls(outcome.error_kind, outcome.message, parse_inspection_data(outcome.data), matches)
