"""The inspection's JSON parsed into frozen dataclasses, hostile output included; the check registry."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.paths import FIXTURES
from tfgpu_tui.env import check_base
from tfgpu_tui.env.check_base import REGISTRY, Verdict, check, report_order
from tfgpu_tui.env.checks import CHECKS, REPORT_ORDER, evaluate
from tfgpu_tui.env.findings import Status
from tfgpu_tui.env.inspection_data import (
    InspectionData,
    InspectionResult,
    PlacementStatus,
    TfGpu,
    parse_inspection_data,
)
from tfgpu_tui.env.recorded import load_recording
from tfgpu_tui.env.tf_inspection import InspectionOutcome, InspectionRun

FIXTURES = FIXTURES / "env"
PROBE_KEYS = (
    "inspection_version",
    "python",
    "env",
    "tensorflow",
    "build_info",
    "built_with_cuda",
    "physical_gpus",
    "logical_gpus",
    "gpu_init_error",
    "placement",
    "loaded_libraries",
    "inspection_errors",
)


def raw_probe(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())["inspection"]


def test_a_real_shape_parses_into_every_field() -> None:
    data = parse_inspection_data(raw_probe("all_good"))
    assert data.inspection_version == 1 and data.python.version == "3.11.9"
    assert data.tensorflow is not None and data.tensorflow.installed and data.tensorflow.version == "2.18.0"
    assert data.tensorflow.import_seconds == pytest.approx(3.912) and data.tensorflow.error is None
    assert data.build.is_cuda_build is True and data.cuda_build is True
    assert data.build.cuda_version == "12.5.1" and data.build.cudnn_version == "9"
    assert data.build.cuda_compute_capabilities == ("sm_60", "sm_70", "sm_80", "sm_89", "compute_90")
    assert data.physical_gpus == (TfGpu("/physical_device:GPU:0", "GPU", (8, 9), "NVIDIA GeForce RTX 4090"),)
    assert data.physical_gpus[0].label == "NVIDIA GeForce RTX 4090 (cc 8.9)"
    assert data.logical_gpus == ("/device:GPU:0",)
    assert data.placement.status is PlacementStatus.OK and data.placement.seconds == pytest.approx(0.000412)
    assert data.loaded_libraries[0].endswith("libcudnn.so.9") and data.inspection_errors == ()


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda path: path.stem)
def test_every_fixture_parses_without_losing_what_the_checks_read(path: Path) -> None:
    raw = json.loads(path.read_text())["inspection"]
    data = parse_inspection_data(raw)
    if raw is None:
        assert data == InspectionData()
        return
    assert (data.tensorflow is not None) == ("tensorflow" in raw)
    assert len(data.physical_gpus or ()) == len(raw.get("physical_gpus") or [])
    assert data.build.cuda_compute_capabilities == tuple(
        (raw.get("build_info") or {}).get("cuda_compute_capabilities") or ()
    )
    assert data.placement.status.value == (raw.get("placement") or {}).get("status", "skipped")


def test_older_build_info_keys_and_a_cpu_build() -> None:
    data = parse_inspection_data(
        {"inspection_version": 1, "build_info": {"cuda_version_number": "11.2", "cudnn_version_number": "8"}}
    )
    assert data.build.cuda_version == "11.2" and data.build.cudnn_version == "8"
    assert data.cuda_build is None and data.physical_gpus is None and data.tensorflow is None
    cpu = parse_inspection_data({"build_info": {"is_cuda_build": False}, "built_with_cuda": True})
    assert cpu.cuda_build is False  # the build info wins over tf.test.is_built_with_cuda()
    assert parse_inspection_data({"built_with_cuda": True}).cuda_build is True


def test_wrong_types_read_as_unknown_not_as_a_crash() -> None:
    data = parse_inspection_data(
        {
            "inspection_version": "1",
            "python": ["3.11"],
            "env": {"A": 1},
            "tensorflow": {"installed": "yes", "version": 2.16, "import_seconds": "slow"},
            "build_info": {"is_cuda_build": 1, "cuda_compute_capabilities": "sm_80"},
            "physical_gpus": [5, {"compute_capability": ["8", 9]}, {"name": "G", "compute_capability": [7]}],
            "placement": {"status": "exploded", "seconds": "fast", "device": 0},
            "loaded_libraries": "libcuda.so",
            "inspection_errors": [1],
        }
    )
    assert data.inspection_version is None and data.python.version is None and dict(data.env) == {"A": "1"}
    assert data.tensorflow is not None and data.tensorflow.installed is False
    assert data.tensorflow.version == "2.16" and data.tensorflow.import_seconds is None
    assert data.build.is_cuda_build is True and data.build.cuda_compute_capabilities == ()
    assert data.physical_gpus == (TfGpu("GPU"), TfGpu("G"))
    assert data.placement.status is PlacementStatus.SKIPPED and data.placement.seconds is None
    assert data.loaded_libraries == () and data.inspection_errors == ("1",)


def test_parsed_data_is_frozen() -> None:
    data = parse_inspection_data(raw_probe("all_good"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.build.cuda_version = "13.0"  # type: ignore[misc]
    with pytest.raises(TypeError):
        data.env["X"] = "1"  # type: ignore[index]


def test_result_holds_the_log_diagnoses_of_both_runs_once() -> None:
    _, run = load_recording(FIXTURES / "cannot_dlopen.json")
    assert run.retry is not None
    result = InspectionResult.from_run(run)
    ids = [found.id for found in result.log_matches]
    assert len(result.diagnoses) == len(set(ids)) and [d.id for d in result.diagnoses] == list(
        dict.fromkeys(ids)
    )
    assert result.ok and result.data.tensorflow is not None and result.data.tensorflow.version == "2.16.1"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every key path in a JSON object (list items by index)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    found = []
    for key, item in items:
        found += [(*prefix, key), *_paths(item, (*prefix, key))]
    return found


GOOD = raw_probe("all_good")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_paths(GOOD)), json_values, max_size=4))
def test_any_json_the_probe_might_print_gives_findings(changes: dict) -> None:
    raw = copy.deepcopy(GOOD)
    for path, value in sorted(changes.items(), key=lambda item: len(item[0])):
        parent = raw
        for key in path[:-1]:
            parent = parent[key] if _has(parent, key) else None
        if parent is not None and _has(parent, path[-1]):
            parent[path[-1]] = value
    facts, _ = load_recording(FIXTURES / "all_good.json")
    findings = evaluate(facts, InspectionRun(InspectionOutcome(None, "", raw, "", 1.0, 0)))
    assert [finding.id for finding in findings][: len(CHECKS)] == list(REPORT_ORDER)
    assert all(finding.status is not Status.PENDING for finding in findings)


def _has(parent: object, key: object) -> bool:
    if isinstance(parent, dict):
        return key in parent
    return isinstance(parent, list) and isinstance(key, int) and key < len(parent)


def test_checks_are_in_the_order_they_registered_with() -> None:
    orders = [item.order for item in CHECKS]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    assert REPORT_ORDER[:3] == ("driver", "libcuda", "python_env") and REPORT_ORDER[-1] == "persistence_mode"
    assert {item.id for item in CHECKS} == set(REGISTRY)


def test_a_new_check_is_one_decorated_function() -> None:
    def always_ok(facts, inspection) -> Verdict:
        return Verdict(Status.OK, "fine")

    try:
        check("extra", "An extra check", order=17)(always_ok)
        ids = [item.id for item in report_order()]
        assert ids.index("driver") < ids.index("extra") < ids.index("python_env")
    finally:
        REGISTRY.pop("extra", None)


@pytest.mark.parametrize("clash", [{"check_id": "driver", "order": 999}, {"check_id": "fresh", "order": 10}])
def test_a_taken_id_or_order_is_refused(clash: dict) -> None:
    before = dict(check_base.REGISTRY)
    with pytest.raises(ValueError, match="clashes"):
        check(clash["check_id"], "Clash", order=clash["order"])(
            lambda facts, inspection: Verdict(Status.OK, "")
        )
    assert before == check_base.REGISTRY
