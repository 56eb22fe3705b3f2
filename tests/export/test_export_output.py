"""The exporter's output on fakenvml (loaded into this process): prometheus-client's own parser reads it,
dcgm-exporter's names, types and labels, no sentinels, the no-driver case, and the per-process bound."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tfgpu_tui.export import names
from tfgpu_tui.export.collector import Exporter, exposition, registry_for
from tfgpu_tui.export.server import MetricsServer
from tfgpu_tui.gpu.nvml import NvmlSource
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.synthetic import keras3_log

pytestmark = pytest.mark.e2e  # real child processes

TWO_GPUS = (
    'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util=37 mem_util=20 temp=45 '
    "power_mw=250000 mem_clock=3201 pcie_tx_kbs=1200 pcie_rx_kbs=3400\n"
    'device name="NVIDIA L4" total_mib=23034 util=3 temp=41 power_mw=NA pcie_tx_kbs=NA sm_clock=2040\n'
)


def exporter(logs: list[Path] | None = None, top: int = 10) -> Exporter:
    settings = Settings()
    sampler = Sampler(settings, NvmlSource(extended=True))
    return Exporter(settings, sampler, logs=logs, hostname="node-a", top_processes=top)


def families(text: str) -> dict:
    return {family.name: family for family in text_string_to_metric_families(text)}


def scrape(ex: Exporter) -> str:
    ex.sample_once()
    return exposition(registry_for(ex)).decode()


def test_dcgm_families_parse_with_their_types_labels_and_no_sentinels(scenario, sleepers) -> None:
    (holder,) = sleepers(1)
    scenario(TWO_GPUS + f"process gpu=0 pid={holder.pid} used_mib=1024 sm=10\n")
    ex = exporter()
    try:
        found = families(scrape(ex))
    finally:
        ex.close()
    for spec in names.DCGM_FIELDS:
        family = found[spec.name]
        assert family.type == spec.type, spec.name
        for sample in family.samples:
            assert tuple(sorted(sample.labels)) == tuple(sorted(names.DCGM_LABELS))
            assert 0 <= sample.value < 2**40, (
                spec.name,
                sample,
            )  # never DCGM's 0x7ffffffffffffff2-style sentinels
    by_gpu = {s.labels["gpu"]: s for s in found["DCGM_FI_DEV_POWER_USAGE"].samples}
    assert set(by_gpu) == {"0"} and by_gpu["0"].value == 250.0  # the L4's power is NA: omitted
    assert {s.labels["gpu"] for s in found["DCGM_FI_DEV_PCIE_TX_THROUGHPUT"].samples} == {"0"}
    l4 = next(s for s in found["DCGM_FI_DEV_SM_CLOCK"].samples if s.labels["gpu"] == "1")
    assert l4.value == 2040 and l4.labels["modelName"] == "NVIDIA L4" and l4.labels["Hostname"] == "node-a"
    assert l4.labels["pci_bus_id"] == "00000000:02:00.0" and l4.labels["device"] == "nvidia1"
    used = {s.labels["gpu"]: s.value for s in found["DCGM_FI_DEV_FB_USED"].samples}
    free = {s.labels["gpu"]: s.value for s in found["DCGM_FI_DEV_FB_FREE"].samples}
    assert used["0"] == 1524 and free["0"] == 143771 - 1524
    unsupported = {(s.labels["gpu"], s.labels["field"]) for s in found[names.NVML_UNSUPPORTED].samples}
    assert {("1", "power"), ("1", "pcie_tx")} <= unsupported
    approximation = found[names.GR_ENGINE_ACTIVE].samples[0]
    assert approximation.labels["approximation"] == "nvml_gpu_util" and approximation.value == pytest.approx(
        0.37
    )
    assert found[names.UP].samples[0].value == 1


def test_dcgm_counters_are_declared_under_their_own_names(scenario) -> None:
    scenario(TWO_GPUS)
    ex = exporter()
    try:
        text = scrape(ex)
    finally:
        ex.close()
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n" in text
    assert "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" in text and "CONSUMPTION_total" not in text
    assert "# TYPE tfgpu_nvml_errors_total counter" in text  # our own counter keeps the convention


def test_no_driver_still_serves_the_reason_and_no_gpu_series(scenario) -> None:
    scenario("error init=LIBRARY_NOT_FOUND\n")
    ex = exporter()
    ex.sample_once()
    try:
        with (
            MetricsServer(("127.0.0.1", 0), ex) as server,
            urllib.request.urlopen(server.url, timeout=5) as reply,
        ):
            assert reply.status == 200
            text = reply.read().decode()
    finally:
        ex.close()
    found = families(text)
    assert not [name for name in found if name.startswith("DCGM_")]
    assert found[names.UP].samples[0].value == 0
    (why,) = found[names.NVML_UNAVAILABLE].samples
    assert why.labels["kind"] == "library_not_found" and "libnvidia-ml.so.1" in why.labels["reason"]
    assert why.labels["fix"]
    errors = {s.labels["kind"]: s.value for s in found[names.NVML_ERRORS].samples}
    assert errors == {"library_not_found": 1}
    assert names.HOST_CPU in found  # the host is still described


def test_processes_are_bounded_to_top_n_per_gpu_plus_other(scenario, sleepers) -> None:
    children = sleepers(7)
    lines = [
        f"process gpu=0 pid={c.pid} used_mib={100 * (i + 1)} sm={i}\n" for i, c in enumerate(children[:6])
    ]
    lines.append(f"process gpu=1 pid={children[6].pid} used_mib=50\n")
    scenario(TWO_GPUS + "".join(lines))
    ex = exporter(top=3)
    try:
        found = families(scrape(ex))
    finally:
        ex.close()
    memory = found[names.PROCESS_GPU_MEMORY].samples
    gpu0 = {s.labels["pid"]: s.value for s in memory if s.labels["gpu"] == "0"}
    top = {str(c.pid): 100.0 * (i + 1) for i, c in enumerate(children[:6])}
    kept = sorted(top, key=top.get, reverse=True)[:3]
    assert gpu0 == {**{pid: top[pid] for pid in kept}, "other": 100.0 + 200 + 300}
    other = next(s for s in memory if s.labels["pid"] == "other")
    empty = dict.fromkeys(("user", "notebook", "command", "host_pid", "attribution"), "")
    assert other.labels == {"gpu": "0", "pid": "other", **empty}
    sm_other = next(s for s in found[names.PROCESS_SM].samples if s.labels["pid"] == "other")
    assert sm_other.value == 0 + 1 + 2
    assert [s.labels["pid"] for s in memory if s.labels["gpu"] == "1"] == [str(children[6].pid)]
    kept_row = next(s for s in memory if s.labels["pid"] == kept[0])
    assert kept_row.labels["command"] == "sleep 60" and kept_row.labels["user"]


def test_training_log_series(scenario, tmp_path: Path) -> None:
    scenario(TWO_GPUS)
    log = tmp_path / "train.log"
    log.write_text(keras3_log(4, 50, 5, done_epochs=4))
    ex = exporter(logs=[log])
    try:
        found = families(scrape(ex))
    finally:
        ex.close()

    def value(name: str, **labels: str) -> float:
        return next(
            s.value for s in found[name].samples if all(s.labels.get(k) == v for k, v in labels.items())
        )

    assert value("tfgpu_training_epoch", log=str(log)) == 4
    assert value("tfgpu_training_epochs", log=str(log)) == 4
    assert value("tfgpu_training_finished", log=str(log)) == 1
    assert value("tfgpu_training_epochs_done", log=str(log)) == 4
    metrics = {s.labels["metric"] for s in found[names.TRAINING_METRIC].samples}
    assert metrics == {"accuracy", "loss", "val_accuracy", "val_loss"}
    assert "tfgpu_training_eta_seconds" not in found  # finished: no ETA (omitted, not 0)


def test_exporter_refuses_a_public_address_without_public(capsys) -> None:
    from tfgpu_tui.cli import main

    assert main(["export", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "--public" in capsys.readouterr().err


def test_unreadable_web_config_is_a_usage_error(tmp_path: Path, capsys) -> None:
    from tfgpu_tui.cli import main

    bad = tmp_path / "web.yml"
    bad.write_text("basic_auth_users:\n  alice: plaintext\n")
    assert main(["export", "--port", "0", "--web-config", str(bad)]) == 2
    assert "not a bcrypt hash" in capsys.readouterr().err
