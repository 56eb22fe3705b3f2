"""Reading series back into host snapshots: an exporter's own output round-trips through the parser and the
decoder to the numbers the Sampler saw; Prometheus's times; the fleet options' address checks."""

from __future__ import annotations

import argparse

import pytest

from tfgpu_tui.export.collector import Exporter, exposition, registry_for
from tfgpu_tui.fleet.addresses import prometheus_url, remote_list
from tfgpu_tui.fleet.decode import OTHER_COMMAND, group_by_instance
from tfgpu_tui.fleet.fast_parse import plain_samples
from tfgpu_tui.fleet.readers import exporter_samples, metrics_url, parse_time, parsed_samples, target_key
from tfgpu_tui.gpu.sampler import Sampler
from tfgpu_tui.gpu.simulated import SimulatedSource
from tfgpu_tui.settings import Settings


def test_exporter_output_decodes_to_the_sampled_numbers() -> None:
    settings = Settings(demo=True)
    exporter = Exporter(
        settings, Sampler(settings, SimulatedSource(gpus=3, processes_per_gpu=5)), top_processes=2
    )
    try:
        state = exporter.sample_once()
        text = exposition(registry_for(exporter)).decode()
    finally:
        exporter.close()
    series = group_by_instance(exporter_samples(text, "h:9400"))["h:9400"]
    snapshot = series.snapshot(0.0)
    original = state.snapshot
    assert original is not None and series.simulated
    assert [d.utilization_percent for d in snapshot.devices] == [
        d.utilization_percent for d in original.devices
    ]
    assert [d.memory_used_mib for d in snapshot.devices] == [d.memory_used_mib for d in original.devices]
    assert [d.memory_total_mib for d in snapshot.devices] == [d.memory_total_mib for d in original.devices]
    for gpu in range(3):
        rows = [r for r in snapshot.processes if r.gpu_index == gpu]
        held = sorted(
            (r for r in original.processes if r.gpu_index == gpu), key=lambda r: -(r.gpu_memory_mib or 0)
        )
        assert [r.pid for r in rows[:2]] == [r.pid for r in held[:2]]
        assert rows[2].command == OTHER_COMMAND and rows[2].pid == 0
        assert rows[2].gpu_memory_mib == pytest.approx(sum(r.gpu_memory_mib or 0 for r in held[2:]))
    assert {(a.kind, a.subject) for a in snapshot.alerts} == {(a.kind, a.subject) for a in original.alerts}
    assert snapshot.host is not None and snapshot.host.cpu_count == original.host.cpu_count


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-02T17:45:01.123456789Z", 1796233501.123456),
        ("2026-12-02T17:45:01Z", 1796233501.0),
        ("2026-12-02T18:45:01.5+01:00", 1796233501.5),
        ("0001-01-01T00:00:00Z", None),
        ("yesterday", None),
        ("", None),
    ],
)
def test_prometheus_times(text: str, expected: float | None) -> None:
    value = parse_time(text)
    assert value == (pytest.approx(expected) if expected is not None else None)


def test_addresses() -> None:
    assert prometheus_url("http://prom:9090/") == "http://prom:9090"
    assert prometheus_url("https://example.org/prometheus") == "https://example.org/prometheus"
    for bad in ("prom:9090", "ftp://prom", "http://", "http://prom:99999", "http://prom/?q=1"):
        with pytest.raises(argparse.ArgumentTypeError):
            prometheus_url(bad)
    assert remote_list("a:9400, b:9400,a:9400,[::1]:9400") == ["a:9400", "b:9400", "[::1]:9400"]
    assert remote_list("https://u:p@c:443/m") == ["https://u:p@c:443/m"]
    for bad in ("a", "a:x", ",", "ftp://a:1"):
        with pytest.raises(argparse.ArgumentTypeError):
            remote_list(bad)
    assert metrics_url("a:9400") == "http://a:9400/metrics"
    assert metrics_url("https://u:p@c:443/custom") == "https://u:p@c:443/custom"
    assert target_key("https://u:p@c:443/m") == "c:443" and target_key("[::1]:9400") == "::1:9400"


def test_cli_fleet_options() -> None:
    from tfgpu_tui.cli import build_parser
    from tfgpu_tui.options import settings_from_args

    args = build_parser().parse_args(["--remote", "a:9400,b:9400"])
    settings = settings_from_args(args)
    assert settings.remote_hosts == ("a:9400", "b:9400") and settings.prometheus_url is None
    args = build_parser().parse_args(["--prometheus", "http://prom:9090"])
    assert settings_from_args(args).prometheus_url == "http://prom:9090"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--prometheus", "http://p:9090", "--remote", "a:1"])


def test_fast_path_reads_what_the_full_parser_reads() -> None:
    text = (
        "# HELP tfgpu_alert_active x\n# TYPE tfgpu_alert_active gauge\n"
        'tfgpu_alert_active{kind="stale_vram",subject="PID 1 \\"a\\\\b\\"\\nc"} 1.0\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="h"} 4.5e+01\n'
        'tfgpu_training_loss{log="/x"} NaN\n'
        "other_metric 3\n"
        "tfgpu_up 1 1700000000000\n"
    )
    fast = exporter_samples(text, "i")
    slow = parsed_samples(text, "i")
    key = lambda s: (s[0], sorted(s[1].items()), str(float(s[2])))  # noqa: E731
    assert sorted(map(key, fast)) == sorted(map(key, slow))
    assert next(s for s in fast if s[0] == "tfgpu_alert_active")[1]["subject"] == 'PID 1 "a\\b"\nc'
    assert [s[0] for s in fast] == [
        "tfgpu_alert_active",
        "DCGM_FI_DEV_GPU_TEMP",
        "tfgpu_training_loss",
        "tfgpu_up",
    ]
    # a line the fast path does not know (OpenMetrics exemplar) goes to the full parser
    odd = 'tfgpu_up{a="b"} 1 # {trace_id="x"} 1\n'
    with pytest.raises(ValueError):
        plain_samples(odd, "i", ("tfgpu_up",))
