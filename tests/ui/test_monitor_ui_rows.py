"""The Monitor tab's pure rendering helpers: process rows, GPU cards, alerts, host line (no Textual app)."""

from __future__ import annotations

from dataclasses import replace

from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.gpu.model import (
    Attribution,
    DeviceSample,
    HostState,
    HostStats,
    JupyterKernel,
    ProcessRow,
    Snapshot,
)
from tfgpu_tui.sizes import mib_text
from tfgpu_tui.ui.widgets.alerts_panel import render_alerts
from tfgpu_tui.ui.widgets.gpu_card import render_card, unavailable_tooltip
from tfgpu_tui.ui.widgets.gpu_format import duration_text
from tfgpu_tui.ui.widgets.host_line import render_host_line
from tfgpu_tui.ui.widgets.process_table import COLUMNS, build_process_rows, row_key

COLUMN = {key: position for position, (key, _label) in enumerate(COLUMNS)}


def _process(pid: int, **fields: object) -> ProcessRow:
    values: dict = {"gpu_index": 0, "gpu_memory_mib": None, "sm_percent": None, "host_state": HostState.OK}
    values.update(fields)
    return ProcessRow(pid=pid, **values)


def _snapshot(processes: list[ProcessRow], devices: list[DeviceSample] | None = None) -> Snapshot:
    host = HostStats(cpu_percent=12.0, cpu_count=16, memory_used_mib=8192.0, memory_total_mib=65536.0)
    return Snapshot(0.0, False, None, None, devices or [], processes, host, [], sample_ms=2.5)


def _cell(rows, index: int, column: str) -> str:
    return str(rows[index].cells[COLUMN[column]])


PROCESSES = [
    _process(10, gpu_memory_mib=2048.0, sm_percent=90.0, running_seconds=50.0, create_time=1.0),
    _process(30, gpu_memory_mib=40960.0, sm_percent=0.0, running_seconds=7200.0, create_time=2.0),
    _process(20, gpu_memory_mib=512.0, sm_percent=None, running_seconds=None, create_time=3.0),
    _process(40, gpu_index=None, tensorflow_loaded=True, running_seconds=10.0, create_time=4.0),
]


def _pids(rows) -> list[int]:
    return [row.process.pid for row in rows]


def test_rows_sort_by_each_key_and_reverse() -> None:
    snapshot = _snapshot(PROCESSES)
    assert _pids(build_process_rows(snapshot, "memory")) == [30, 10, 20, 40]
    assert _pids(build_process_rows(snapshot, "sm")) == [10, 30, 20, 40]
    assert _pids(build_process_rows(snapshot, "pid")) == [10, 20, 30, 40]
    assert _pids(build_process_rows(snapshot, "time")) == [30, 10, 40, 20]
    assert _pids(build_process_rows(snapshot, "memory", reverse=True)) == [40, 20, 10, 30]
    assert _pids(build_process_rows(snapshot, "pid", reverse=True)) == [40, 30, 20, 10]


def test_row_cells_show_na_cpu_and_units() -> None:
    rows = build_process_rows(_snapshot(PROCESSES), "pid")
    assert _cell(rows, 0, "memory") == "2048 MiB"
    assert _cell(rows, 2, "memory") == "40.0 GiB"
    assert _cell(rows, 1, "sm") == "N/A"
    assert _cell(rows, 1, "time") == "N/A"
    assert _cell(rows, 2, "time") == "2h 00m"
    assert _cell(rows, 3, "gpu") == "CPU"
    assert _cell(rows, 3, "tf") == "TF"
    assert rows[0].key == row_key(PROCESSES[0]) and rows[0].key != row_key(PROCESSES[1])


def test_unresolved_rows_are_kept_with_their_marker() -> None:
    hidden = _process(
        77, gpu_memory_mib=1000.0, host_state=HostState.OTHER_NAMESPACE,
        attribution=Attribution.OTHER_NAMESPACE, host_pid=77,
    )  # fmt: skip
    gone = _process(78, gpu_memory_mib=900.0, host_state=HostState.NO_SUCH_PROCESS)
    rows = build_process_rows(_snapshot([hidden, gone]))
    assert _pids(rows) == [77, 78]
    assert _cell(rows, 0, "pid") == "N/A"  # no local PID is claimed for another namespace's entry
    assert "[other namespace: NVML PID 77]" in _cell(rows, 0, "command")
    assert "another container's or the host's" in _cell(rows, 0, "command")
    assert "gone" in _cell(rows, 1, "command")
    assert _cell(rows, 0, "memory") == "1000 MiB"


def test_a_guessed_pairing_says_probably_first_even_where_the_command_is_cut() -> None:
    """At 80 columns the command column keeps about 20 cells: a pairing by start order must still read as a
    guess there (it read "[NVML PID 24823, …" with "probably" cut off)."""
    from tfgpu_tui.ui.text_fit import whole_words

    guess = Attribution.START_ORDER
    paired = _process(16, gpu_memory_mib=4096.0, attribution=guess, host_pid=24823, command="python eval.py")
    command = str(_cell(build_process_rows(_snapshot([paired])), 0, "command"))
    assert command.startswith("[probably NVML PID 24823, by start order]") and command.endswith("eval.py")
    assert whole_words(command, 20) == "[probably NVML PID …"


def test_jupyter_kernels_show_notebook_or_kernel_id() -> None:
    named = _process(
        1, jupyter=JupyterKernel("abc", "work/train.ipynb", execution_state="idle"), command="python -m x"
    )
    unnamed = _process(2, jupyter=JupyterKernel("def-123", None, why_unknown="server owned by alice"))
    rows = build_process_rows(_snapshot([named, unnamed]), "pid")
    assert "notebook work/train.ipynb" in _cell(rows, 0, "command") and "idle" in _cell(rows, 0, "command")
    assert _cell(rows, 1, "command") == "jupyter kernel def-123 (server owned by alice)"


def test_gpus_says_the_command_in_the_words_of_the_table() -> None:
    from tfgpu_tui.commands.gpus import process_command

    rows = [
        _process(
            1, jupyter=JupyterKernel("abc", "work/train.ipynb", execution_state="idle"), idle_seconds=600
        ),
        _process(2, jupyter=JupyterKernel("def-123", None, why_unknown="server owned by alice")),
        _process(3, host_state=HostState.ZOMBIE, own_child=True),
        _process(4, command="python train.py --epochs 3"),
    ]
    table = build_process_rows(_snapshot(rows), "pid")
    assert [process_command(row) for row in rows] == [_cell(table, i, "command").rstrip() for i in range(4)]
    assert process_command(rows[0]) == "[idle 10m] notebook work/train.ipynb [idle]"
    tf_job = _process(5, command="python train.py", tensorflow_loaded=True)
    assert process_command(tf_job) == "[TF] python train.py"  # gpus has no TF column: the mark says it


def _device(**fields: object) -> DeviceSample:
    values: dict = {
        "index": 0,
        "name": "Tesla T4",
        "utilization_percent": 87.0,
        "memory_used_mib": 4096.0,
        "memory_total_mib": 16384.0,
        "temperature_c": 65.0,
        "power_w": 50.0,
        "power_limit_w": 70.0,
        "fan_percent": None,
        "sm_clock_mhz": 1590.0,
        "performance_state": 0,
    }
    values.update(fields)
    return DeviceSample(**values)


def test_card_shows_readings_and_na() -> None:
    text = render_card(_device(unavailable={"fan": "not supported"})).plain
    assert "GPU 0 Tesla T4  P0" in text
    assert "87 %" in text and "4.0/16.0 GiB" in text and "65 °C" in text and "50/70 W" in text
    assert "Fan N/A" in text and "SM 1590 MHz" in text
    assert unavailable_tooltip(_device(unavailable={"fan": "not supported"})) == "fan: not supported"
    missing = render_card(_device(utilization_percent=None, memory_used_mib=None, power_w=None)).plain
    assert "N/A" in missing and "N/A/16.0 GiB" in missing and "N/A/70 W" in missing


def test_lost_card_says_so() -> None:
    text = render_card(_device(lost=True)).plain
    assert "LOST" in text and "dmesg" in text and "87 %" not in text


def test_alerts_render_most_urgent_first_with_fix() -> None:
    alerts = [
        Alert("stale_vram", Severity.WARNING, "idle kernel holds 18 GiB", "shut down the kernel", "PID 1"),
        Alert("memory_full", Severity.CRITICAL, "GPU 0 memory is 97 % full", "", "GPU 0"),
    ]
    lines = render_alerts(alerts).plain.splitlines()
    assert lines[0].startswith(" CRIT ") and "GPU 0 memory is 97 % full" in lines[0]
    assert "PID 1: idle kernel holds 18 GiB" in lines[1] and "fix: shut down the kernel" in lines[2]


def test_host_line_has_cpu_memory_and_refresh_cost() -> None:
    text = render_host_line(_snapshot([])).plain
    assert "12 % of 16 cores" in text and "8.0/64.0 GiB" in text and "refresh 2.5 ms" in text
    assert "refresh 2.5 ms + UI 0.4 ms" in render_host_line(_snapshot([]), ui_ms=0.42).plain


def test_formatting_edges() -> None:
    assert mib_text(None) == "N/A" and mib_text(10239.0) == "10239 MiB" and mib_text(10240.0) == "10.0 GiB"
    assert duration_text(59) == "59s" and duration_text(3 * 86400 + 4 * 3600) == "3d 04h"
    # to the second in the first minute, to the minute from then on
    assert duration_text(3599.9) == "59m" and duration_text(3600) == "1h 00m"
    assert duration_text(3 * 3600 + 2 * 60 + 59) == "3h 02m" == duration_text(3 * 3600 + 2 * 60)


def test_rows_show_idle_time_and_our_own_children() -> None:
    idle = _process(1, gpu_memory_mib=18432.0, sm_percent=0.0, idle_seconds=754.0, command="python -m x")
    fresh = _process(2, gpu_memory_mib=1024.0, sm_percent=0.0, idle_seconds=30.0, command="python y.py")
    child = _process(3, own_child=True, command="python tf_inspect_script.py")
    rows = build_process_rows(_snapshot([idle, fresh, child]), "pid")
    assert _cell(rows, 0, "command") == "[idle 12m] python -m x"
    assert _cell(rows, 1, "command") == "python y.py"
    assert _cell(rows, 2, "command") == "[tfgpu-tui child] python tf_inspect_script.py"


def test_card_and_compact_line_say_how_long_the_gpu_has_read_zero() -> None:
    from tfgpu_tui.ui.widgets.gpu_compact import render_compact_line

    device = _device(utilization_percent=0.0, zero_util_seconds=42.0)
    assert "0 % for 42 s" in render_card(device).plain
    assert "0% for 42 s" in render_compact_line(device, 80).plain
    assert len(render_compact_line(device, 80).plain) <= 80
    assert "for " not in render_compact_line(_device(), 80).plain


def test_short_alert_titles_name_the_notebook_or_the_program() -> None:
    from tfgpu_tui.ui.widgets.alerts_panel import with_short_titles

    kernel = _process(7, jupyter=JupyterKernel("0123456789abcdef", "work/eda.ipynb"), command="python -m x")
    unnamed = _process(8, jupyter=JupyterKernel("fedcba9876543210", None), command="python -m x")
    script = _process(9, command="python train.py --epochs 5")
    alerts = [Alert("stale_vram", Severity.WARNING, "m", subject=f"PID {pid}") for pid in (7, 8, 9)]
    shorts = [alert.short for alert in with_short_titles(alerts, [kernel, unnamed, script])]
    assert shorts == [
        "Stale VRAM: PID 7 eda.ipynb",
        "Stale VRAM: PID 8 jupyter kernel fedcba98",
        "Stale VRAM: PID 9 train.py",
    ]


def test_idle_time_reads_in_minutes_hours_and_days() -> None:
    from tfgpu_tui.durations import idle_text

    assert [idle_text(s) for s in (61, 3599, 3600 + 22 * 60, 3 * 86400 + 4 * 3600)] == [
        "1m",
        "59m",
        "1h 22m",
        "3d 04h",
    ]


def test_the_host_line_keeps_its_figures_within_the_width() -> None:
    snapshot = _snapshot([])
    snapshot = replace(snapshot, host=replace(snapshot.host, load_average=(3.7, 6.22, 4.97)))
    whole = render_host_line(snapshot, ui_ms=0.42).plain
    assert "load" in whole and "refresh" in whole
    for width in (78, 60):
        text = render_host_line(snapshot, ui_ms=0.42, width=width).plain
        assert len(text) <= width, text
        assert "CPU" in text and " %" in text and "Mem" in text and "GiB" in text, text
    assert "load" not in render_host_line(snapshot, width=78).plain  # the load average goes first
