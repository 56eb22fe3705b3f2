"""The exporter's efficiency series scraped by a real Prometheus (as the fleet test does): GPM under
dcgm-exporter's profiling names as 0-1 ratios, absent where the GPU cannot measure them; the clock event
reasons; the diagnoses as tfgpu_ series; and the alert rules' expressions evaluated by Prometheus on them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers.fleet_helpers import (
    prometheus_version,
    query,
    start_exporter,
    start_prometheus,
    stop,
    value_of,
)
from tests.helpers.paths import ROOT
from tests.helpers.waiting import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        prometheus_version() is None, reason="Prometheus is not installed (Debian: apt install prometheus)"
    ),
]
RULES = ROOT / "prometheus" / "tfgpu-alerts.yml"
H100 = 'name="NVIDIA H100 80GB HBM3" total_mib=81559'


def rule_expression(name: str) -> str:
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    return next(rule["expr"] for rule in rules if rule.get("alert") == name)


@pytest.fixture(scope="module")
def prometheus(fakenvml_lib_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("efficiency")
    children: list[subprocess.Popen] = []
    holder = subprocess.Popen(["sleep", "120"])
    children.append(holder)
    scenario = tmp / "scenario.txt"
    scenario.write_text(
        f"device {H100} util=97 gpm_sm=8 gpm_occupancy=6 gpm_tensor=0 gpm_dram=12 gpm_fp32=5 gpm_fp16=0 "
        "gpm_pcie_tx_mib=300 gpm_pcie_rx_mib=900 throttle=0x4 pcie_gen=3 pcie_width=8 max_pcie_gen=5 "
        "max_pcie_width=16\n"
        'device name="NVIDIA A100-SXM4-80GB" total_mib=81920 arch=ampere cc=8.0 util=97\n'
        f"device {H100} util=96 gpm_sm=78 gpm_tensor=61 gpm_dram=45 gpm_fp32=20 gpm_fp16=10 "
        "gpm_occupancy=40\n"
        f"device {H100} mig_mode=1 gpm=1\n"
        'mig gpu=3 gi=1 profile="3g.40gb" total_mib=40192 gpm_sm=70 gpm_tensor=NA\n'
        f"process gpu=0 pid={holder.pid} used_mib=20480 sm=90\n"
    )
    config = tmp / "config.toml"
    config.write_text("efficiency_minutes = 0.02\n")  # the diagnoses' window: 1.2 s
    try:
        url = start_exporter(
            fakenvml_lib_dir,
            scenario,
            ["--hostname", "alpha", "--interval", "0.5", "--pids", str(holder.pid)],
            children,
            {"TFGPU_TUI_CONFIG": str(config)},
        )
        yield start_prometheus(tmp, [url.split("://", 1)[1].split("/", 1)[0]], children)
    finally:
        for child in reversed(children):
            stop(child)


def scraped(url: str, promql: str) -> list[dict]:
    """The query's result once Prometheus has it (scrapes come every second)."""
    found: list[list[dict]] = []

    def ready() -> bool:
        found.append(query(url, promql))
        return bool(found[-1])

    wait_for(ready, timeout=60)
    return found[-1]


def test_gpm_is_exported_as_dcgm_profiling_ratios_and_absent_where_not_measurable(prometheus: str) -> None:
    sm = scraped(prometheus, "DCGM_FI_PROF_SM_ACTIVE")
    assert value_of(sm, gpu="0") == pytest.approx(0.08) and value_of(sm, gpu="2") == pytest.approx(0.78)
    assert value_of(sm, gpu="1") is None  # the A100 has no GPM: no series, never 0
    assert value_of(sm, gpu="3", GPU_I_ID="1", GPU_I_PROFILE="3g.40gb") == pytest.approx(0.70)
    assert {r["metric"].get("GPU_I_ID") for r in sm if r["metric"]["gpu"] == "3"} == {"1"}  # not the parent
    tensor = query(prometheus, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
    assert value_of(tensor, gpu="2") == pytest.approx(0.61) and value_of(tensor, gpu="0") == 0
    assert value_of(tensor, gpu="3") is None  # that GPU instance refuses the metric
    expected = {
        "DCGM_FI_PROF_DRAM_ACTIVE": 0.45,
        "DCGM_FI_PROF_SM_OCCUPANCY": 0.40,
        "DCGM_FI_PROF_PIPE_FP32_ACTIVE": 0.20,
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE": 0.10,
    }
    for name, gpu2 in expected.items():
        assert value_of(query(prometheus, name), gpu="2") == pytest.approx(gpu2), name
    tx = query(prometheus, "DCGM_FI_PROF_PCIE_TX_BYTES")
    assert value_of(tx, gpu="0") == 300 * 2**20
    assert value_of(query(prometheus, "DCGM_FI_PROF_PCIE_RX_BYTES"), gpu="0") == 900 * 2**20
    reasons = query(prometheus, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")
    assert value_of(reasons, gpu="0") == 4 and value_of(reasons, gpu="1") == 0
    link = query(prometheus, "tfgpu_gpu_pcie_link_generation")
    assert (value_of(link, gpu="0", link="current"), value_of(link, gpu="0", link="max")) == (3, 5)


def test_the_diagnoses_are_series_and_the_alert_expressions_pick_the_right_gpu(prometheus: str) -> None:
    active = scraped(prometheus, 'tfgpu_diagnosis_active{kind="busy_not_working"}')
    assert [r["metric"]["gpu"] for r in active] == ["0"]
    assert value_of(query(prometheus, 'tfgpu_diagnosis_value{kind="busy_not_working"}'), gpu="0") == 8
    kinds = {(r["metric"]["kind"], r["metric"]["gpu"]) for r in query(prometheus, "tfgpu_diagnosis_active")}
    assert kinds == {("busy_not_working", "0"), ("throttled", "0"), ("pcie_link_degraded", "0")}
    busy_idle = query(prometheus, rule_expression("TfgpuGpuBusyButSmsIdle"))
    assert [(r["metric"]["gpu"], float(r["value"][1])) for r in busy_idle] == [("0", pytest.approx(0.08))]
    throttled = query(prometheus, rule_expression("TfgpuGpuThrottled"))
    assert [r["metric"]["gpu"] for r in throttled] == ["0"]
