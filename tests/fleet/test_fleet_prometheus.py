"""End to end with the real engine: two `tfgpu-tui export` processes on two fakenvml scenarios (one following
a training log that is being written), a real Prometheus scraping both every second, then queries through its
HTTP API, the Grafana dashboard's queries, the fleet view pointed at that Prometheus, a stopped exporter."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.fleet_helpers import (
    prometheus_version,
    query,
    start_exporter,
    start_prometheus,
    stop,
    targets,
    value_of,
    wait_scrapes,
)
from tests.helpers.paths import ROOT
from tests.helpers.waiting import wait_for, wait_until
from tfgpu_tui.fleet.readers import PrometheusReader
from tfgpu_tui.settings import Settings
from tfgpu_tui.training.synthetic import keras3_epoch, keras3_log, loss_at
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.host_detail import HostDetailScreen
from tfgpu_tui.ui.hosts import COLUMNS, HostsTab
from tfgpu_tui.ui.widgets.gpu_card import GpuCard
from tfgpu_tui.ui.widgets.hosts_table import HostsTable
from tfgpu_tui.ui.widgets.process_table import ProcessTable

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        prometheus_version() is None, reason="Prometheus is not installed (Debian: apt install prometheus)"
    ),
]
DASHBOARD = ROOT / "grafana" / "tfgpu-tui-dashboard.json"
H200_TOTAL = 143771


@dataclass
class Fleet:
    url: str
    alpha: subprocess.Popen
    beta: subprocess.Popen
    alpha_target: str
    beta_target: str
    holder: int
    idle: int
    log: Path


def _target(url: str) -> str:
    return url.split("://", 1)[1].split("/", 1)[0]


class LogWriter(threading.Thread):
    """Appends epoch 3's progress updates to the log, one every 0.3 s, like a running model.fit()."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.halt = threading.Event()

    def run(self) -> None:
        parts = list(keras3_epoch(3, 5, 100, 200))[:-2]  # never the last update: epoch 3 stays in progress
        for part in parts:
            if self.halt.wait(0.3):
                return
            with self.path.open("a") as handle:
                handle.write(part)


@pytest.fixture(scope="module")
def fleet(fakenvml_lib_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("fleet")
    children: list[subprocess.Popen] = []
    holder, idle = (subprocess.Popen(["sleep", "120"]) for _ in range(2))
    children += [holder, idle]
    alpha = tmp / "alpha.txt"
    alpha.write_text(
        'device name="NVIDIA H200" total_mib=143771 base_used_mib=500 util=37 mem_util=20 temp=45 '
        "power_mw=250000 mem_clock=3201 pcie_tx_kbs=1200 pcie_rx_kbs=3400\n"
        'device name="NVIDIA H200" util=5 temp=38 power_mw=90000 pci_bus=0x41\n'
        f"process gpu=0 pid={holder.pid} used_mib=20480 sm=55\n"
    )
    beta = tmp / "beta.txt"
    beta.write_text(
        'device name="NVIDIA A100-SXM4-80GB" total_mib=81920 util=88 mem_util=40 temp=63 power_mw=NA '
        "sm_clock=1410 mem_clock=1593\n"
        f"process gpu=0 pid={idle.pid} used_mib=4096 sm=0\n"
    )
    log = tmp / "train.log"
    log.write_text(keras3_log(5, 100, 10, done_epochs=2))
    config = tmp / "config.toml"
    config.write_text("stale_minutes = 0.02\n")  # beta's idle process is stale after 1.2 s
    env = {"TFGPU_TUI_CONFIG": str(config)}
    # the exporters look for TensorFlow on the CPU only among this test's processes: another TensorFlow job on
    # the machine would otherwise be a CPU-fallback alert of theirs
    ours = ["--pids", str(holder.pid), str(idle.pid)]
    writer = LogWriter(log)
    writer.start()
    try:
        alpha_url = start_exporter(
            fakenvml_lib_dir,
            alpha,
            ["--hostname", "alpha", "--interval", "0.5", "--log", str(log), *ours],
            children,
            env,
        )
        beta_url = start_exporter(
            fakenvml_lib_dir, beta, ["--hostname", "beta", "--interval", "0.5", *ours], children, env
        )
        url = start_prometheus(tmp, [_target(alpha_url), _target(beta_url)], children)
        wait_scrapes(url, 3)
        yield Fleet(
            url, children[2], children[3], _target(alpha_url), _target(beta_url), holder.pid, idle.pid, log
        )
    finally:
        writer.halt.set()
        for child in reversed(children):
            stop(child)


DCGM_ALPHA_GPU0 = {
    "DCGM_FI_DEV_GPU_UTIL": 37,
    "DCGM_FI_DEV_MEM_COPY_UTIL": 20,
    "DCGM_FI_DEV_FB_USED": 500 + 20480,
    "DCGM_FI_DEV_FB_FREE": H200_TOTAL - 500 - 20480,
    "DCGM_FI_DEV_GPU_TEMP": 45,
    "DCGM_FI_DEV_POWER_USAGE": 250,
    "DCGM_FI_DEV_SM_CLOCK": 1980,
    "DCGM_FI_DEV_MEM_CLOCK": 3201,
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": 1200,
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": 3400,
}


def test_dcgm_series_have_dcgm_labels_and_values(fleet: Fleet) -> None:
    labels = {
        "gpu": "0",
        "UUID": "GPU-fa4e0000-0000-4000-8000-000000000000",
        "pci_bus_id": "00000000:01:00.0",
        "device": "nvidia0",
        "modelName": "NVIDIA H200",
        "Hostname": "alpha",
    }
    for name, expected in DCGM_ALPHA_GPU0.items():
        results = query(fleet.url, name)
        assert value_of(results, **labels) == expected, name
        gpus = {(r["metric"]["Hostname"], r["metric"]["gpu"]) for r in results}
        if name != "DCGM_FI_DEV_POWER_USAGE":
            assert gpus == {("alpha", "0"), ("alpha", "1"), ("beta", "0")}, name
    second = query(fleet.url, 'DCGM_FI_DEV_GPU_TEMP{Hostname="alpha", gpu="1"}')[0]["metric"]
    assert second["pci_bus_id"] == "00000000:41:00.0" and second["device"] == "nvidia1"
    # beta cannot report power: the series is omitted (no sentinel), and the reason is a series of its own
    assert {r["metric"]["Hostname"] for r in query(fleet.url, "DCGM_FI_DEV_POWER_USAGE")} == {"alpha"}
    unsupported = query(fleet.url, 'tfgpu_nvml_unsupported{field="power"}')
    assert [r["metric"]["instance"] for r in unsupported] == [fleet.beta_target]
    # the energy counter's rate over the exporter's own sample times (each scrape's time less its sample's
    # age), not irate over the last two scrapes: that assumed each scrape found a sample just taken, and a
    # loaded exporter's samples lag the scrapes unevenly (half the rate was seen)
    energy_series = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{Hostname="alpha", gpu="0"}[1m]'
    age_series = f'tfgpu_sample_age_seconds{{instance="{fleet.alpha_target}"}}[1m]'

    def taken() -> list[tuple[float, float]]:  # (when the exporter sampled, the counter then)
        ages = dict(query(fleet.url, age_series)[0]["values"])
        values = query(fleet.url, energy_series)[0]["values"]
        return [(at - float(ages[at]), float(value)) for at, value in values if at in ages]

    wait_for(lambda: len(points := taken()) > 1 and points[-1][0] - points[0][0] >= 5, timeout=60)
    (first_at, first), (last_at, last) = (points := taken())[0], points[-1]
    assert (last - first) / (last_at - first_at) == pytest.approx(250_000, rel=0.05)  # mJ/s at 250 W
    beta_util = query(fleet.url, 'DCGM_FI_DEV_GPU_UTIL{Hostname="beta"}')
    assert beta_util[0]["metric"]["modelName"] == "NVIDIA A100-SXM4-80GB" and beta_util[0]["value"][1] == "88"
    metadata = json.load(__import__("urllib.request").request.urlopen(f"{fleet.url}/api/v1/metadata"))["data"]
    assert metadata["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"][0]["type"] == "counter"
    assert metadata["DCGM_FI_DEV_FB_USED"][0]["type"] == "gauge"


def test_tfgpu_series_processes_alerts_training(fleet: Fleet) -> None:
    memory = query(fleet.url, "tfgpu_process_gpu_memory_mib")
    assert value_of(memory, pid=str(fleet.holder), gpu="0", command="sleep 120") == 20480
    assert value_of(memory, pid=str(fleet.idle), instance=fleet.beta_target) == 4096
    stale = query(fleet.url, "tfgpu_process_stale_vram_mib")
    assert [(r["metric"]["pid"], r["value"][1]) for r in stale] == [(str(fleet.idle), "4096")]
    alerts = query(fleet.url, 'tfgpu_alert_active{kind="stale_vram"}')
    assert [r["metric"]["subject"] for r in alerts] == [f"PID {fleet.idle}"]
    assert alerts[0]["metric"]["severity"] == "warning"
    log = str(fleet.log)
    assert value_of(query(fleet.url, "tfgpu_training_epoch"), log=log) == 3
    assert value_of(query(fleet.url, "tfgpu_training_epochs"), log=log) == 5
    assert value_of(query(fleet.url, "tfgpu_training_finished"), log=log) == 0
    assert value_of(query(fleet.url, "tfgpu_training_steps"), log=log) == 100
    val_loss = value_of(query(fleet.url, 'tfgpu_training_metric{metric="val_loss"}'), log=log)
    assert val_loss == pytest.approx(loss_at(2, 100, 100) * 1.08, abs=1e-4)  # epoch 2's, as printed
    first_step = value_of(query(fleet.url, "tfgpu_training_step"), log=log)
    assert first_step is not None and first_step > 0
    # the log is being written: the exported step moves (polled for, not assumed to within a fixed sleep)
    step = "tfgpu_training_step"
    wait_for(lambda: (value_of(query(fleet.url, step), log=log) or 0) > first_step, timeout=60)
    assert value_of(query(fleet.url, "tfgpu_training_eta_seconds"), log=log) > 0
    assert value_of(query(fleet.url, "tfgpu_up"), instance=fleet.alpha_target) == 1
    info = query(fleet.url, "tfgpu_exporter_info")
    assert {r["metric"]["Hostname"] for r in info} == {"alpha", "beta"}


def _grafana_queries() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]


def test_every_grafana_query_returns_data(fleet: Fleet) -> None:
    queries = _grafana_queries()
    assert len(queries) >= 15
    for title, expr in queries:
        promql = re.sub(r"\$(Hostname|gpu)\b", ".*", expr).replace("$__rate_interval", "30s")
        assert "$" not in promql, (title, promql)
        results = query(fleet.url, promql)
        assert results, f"panel {title!r} gets no data from {promql}"
    fallback = next(e for t, e in queries if t.startswith("CPU fallback"))
    values = query(fleet.url, fallback.replace('"$Hostname"', '".*"'))
    assert {r["metric"]["Hostname"]: r["value"][1] for r in values} == {"alpha": "0", "beta": "0"}


async def test_fleet_view_on_prometheus_shows_both_hosts(fleet: Fleet) -> None:
    from tfgpu_tui.fleet.readers import parse_time

    settings = Settings(demo=True, prometheus_url=fleet.url, fleet_refresh_seconds=0.5)
    alpha_target = next(t for t in targets(fleet.url) if t["labels"]["instance"] == fleet.alpha_target)
    scraped_before = parse_time(alpha_target["lastScrape"])  # before the app's first read
    assert scraped_before is not None
    app = TfgpuApp(settings)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("5")
        tab = app.query_one(HostsTab)
        await wait_until(pilot, lambda: tab.view is not None and len(tab.view.hosts) == 2, timeout=60)
        table = app.query_one(HostsTable)
        alpha = dict(zip(COLUMNS, map(str, table.cells(fleet.alpha_target) or ()), strict=True))
        beta = dict(zip(COLUMNS, map(str, table.cells(fleet.beta_target) or ()), strict=True))
        assert (alpha["Host"], alpha["State"], alpha["GPUs"], alpha["Util"]) == (
            "alpha",
            "up",
            "2× H200",
            "21 % (max 37)",
        )
        assert alpha["Memory"] == f"{20980 / 1024:.1f}/{(143771 + 81559) / 1024:.1f} GiB"
        assert re.fullmatch(
            r"ep 3/5 \d+/100 loss [\d.]+ ETA (\d+[smhd]( \d\d[smh])?|\d+ms)", alpha["Training"]
        ), alpha["Training"]
        assert alpha["Worst alert"] == "-" and alpha["Address"] == fleet.alpha_target
        assert (beta["Host"], beta["State"], beta["GPUs"]) == ("beta", "up", "1× A100-SXM4-80GB")
        assert (beta["Util"], beta["Memory"]) == ("88 % (max 88)", "4.0/80.0 GiB")
        assert beta["Worst alert"] == f"warning: stale vram: PID {fleet.idle}" and beta["Training"] == "-"
        # the age shown counts from a scrape no older than the last one Prometheus had reported when the view
        # was read (a bound by order, not a number of seconds; the cell rounds to whole seconds)
        assert int(alpha["Scraped"].removesuffix(" s")) <= time.time() - scraped_before + 0.5
        table.move_to(fleet.alpha_target)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HostDetailScreen))
        screen = app.screen
        assert sorted(card.index for card in screen.query(GpuCard)) == [0, 1]
        processes = screen.query_one(ProcessTable).rows_shown
        assert [(r.process.pid, r.process.gpu_memory_mib) for r in processes] == [(fleet.holder, 20480)]
        await pilot.press("k")  # the Monitor's kill key does nothing here: no signals across machines
        assert isinstance(app.screen, HostDetailScreen) and fleet.alpha.poll() is None
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HostDetailScreen))


def test_stopped_exporter_is_down_with_reason_within_three_scrapes(fleet: Fleet) -> None:
    reader = PrometheusReader(fleet.url)
    before = {h.key: h for h in reader.read().hosts}
    assert before[fleet.beta_target].up and before[fleet.beta_target].hostname == "beta"
    stop(fleet.beta)
    from tfgpu_tui.fleet.readers import parse_time

    def target(instance: str) -> dict:
        return next(t for t in targets(fleet.url) if t["labels"]["instance"] == instance)

    # Prometheus's first failed scrape after the stop is all the reader waits for: once Prometheus reports the
    # target down, the next read says so (an order; no wall-clock window from the stop is asserted)
    wait_for(lambda: target(fleet.beta_target)["health"] != "up", timeout=60)
    beta = {h.key: h for h in reader.read().hosts}[fleet.beta_target]
    assert not beta.up
    # Prometheus's own words: refused, or reset when the stop cut a scrape short
    assert f"{fleet.beta_target}/metrics" in beta.reason and re.search(
        "connection (refused|reset)", beta.reason
    )
    assert beta.hostname == "beta" and beta.snapshot is not None  # its last known GPUs stay visible
    assert beta.scrape_age is not None and beta.scrape_age >= 0
    seen = parse_time(target(fleet.alpha_target)["lastScrape"])
    alpha = {h.key: h for h in reader.read().hosts}[fleet.alpha_target]
    # fresh: its age counts from a scrape no older than one Prometheus had reported before the read (a bound
    # by order, not a number of seconds a loaded machine can overrun)
    assert seen is not None and alpha.up and 0 <= alpha.scrape_age <= time.time() - seen
