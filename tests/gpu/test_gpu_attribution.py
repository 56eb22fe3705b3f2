"""Joining NVML's entries to local processes inside a PID namespace (issue 23): the pure attribution step,
and the device-file scan over a /proc laid out in a temporary directory (neither reads the real /proc)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tfgpu_tui.gpu.attribution import ESTIMATED, NOT_REPORTED, attribute, driver_at_least
from tfgpu_tui.gpu.model import Attribution
from tfgpu_tui.gpu.source import GpuProcess
from tfgpu_tui.proc.device_files import INIT_PID_NAMESPACE_INODE, DeviceFileScanner, Holding, scan_process

MINORS = {0: 0, 1: 1, 2: 2, 3: 3}
USED = {0: 31220.0, 1: 18932.0, 2: 23028.0, 3: 12788.0}


def holder(pid: int, *minors: int, start: int = 100) -> Holding:
    return Holding(pid, start, frozenset(minors), True)


def by_pid(results):
    return {(r.process.gpu_index, r.process.pid): r for r in results}


def test_old_driver_host_pids_are_joined_by_device_files_never_by_pid_number() -> None:
    """535.104: NVML lists host PIDs. GPU 0's only entry and only holder pair for certain; GPU 2's entries
    have no local holder (another container, and a host PID equal to a local PID that holds no GPU file);
    GPU 3's two and two are paired by host-PID order against start order, a guess."""
    entries = [
        GpuProcess(28848, 0, 30720.0, 85.0),
        GpuProcess(28849, 1, 18432.0, 0.0),
        GpuProcess(30001, 2, 20480.0, 30.0),
        GpuProcess(19, 2, 2048.0, 40.0),  # the clash: local PID 19 is an unrelated `sleep`
        GpuProcess(28900, 3, 4096.0, 10.0),
        GpuProcess(28901, 3, 8192.0, 20.0),
    ]
    holders = {
        15: holder(15, 0, start=50),
        16: holder(16, 1, start=60),
        19: Holding(19, 70, frozenset(), False),
        21: holder(21, 3, start=80),
        22: holder(22, 3, start=90),
    }
    results = by_pid(attribute(entries, MINORS, USED, holders, complete=True, driver_version="535.104.05"))
    assert (results[0, 28848].basis, results[0, 28848].local_pid) == (Attribution.DEVICE_FILE, 15)
    assert results[0, 28848].memory_mib == 30720.0 and results[0, 28848].sm_percent == 85.0
    assert (results[1, 28849].basis, results[1, 28849].local_pid) == (Attribution.DEVICE_FILE, 16)
    for key in ((2, 30001), (2, 19)):
        assert results[key].basis is Attribution.OTHER_NAMESPACE and results[key].local_pid is None
    assert results[2, 19].memory_mib == 2048.0  # shown with its memory, as another namespace's
    assert (results[3, 28900].basis, results[3, 28900].local_pid) == (Attribution.START_ORDER, 21)
    assert (results[3, 28901].basis, results[3, 28901].local_pid) == (Attribution.START_ORDER, 22)
    assert Attribution.START_ORDER.guess and not Attribution.DEVICE_FILE.guess


def test_a_lone_pairing_is_a_guess_when_some_local_process_could_not_be_read() -> None:
    entries = [GpuProcess(28848, 0, 30720.0, 85.0)]
    result = attribute(entries, MINORS, USED, {15: holder(15, 0)}, complete=False, driver_version=None)[0]
    assert (result.basis, result.local_pid) == (Attribution.START_ORDER, 15)


def test_more_entries_than_local_holders_leaves_them_unresolved() -> None:
    entries = [GpuProcess(28848, 0, 30720.0, 85.0), GpuProcess(30001, 0, 4096.0, 10.0)]
    results = attribute(entries, MINORS, USED, {15: holder(15, 0)}, True, "535.104.05")
    assert [(r.basis, r.local_pid) for r in results] == [(Attribution.UNRESOLVED, None)] * 2


def test_550_our_own_pids_but_no_memory_the_sole_holder_estimates_the_device_use() -> None:
    """535.113-560: the list has our PIDs and usedGpuMemory 0; samples carry host PIDs, so no SM % is ours."""
    entries = [
        GpuProcess(15, 0, 0.0, 0.0),
        GpuProcess(16, 1, 0.0, 0.0),
        GpuProcess(21, 3, 0.0, 0.0),
        GpuProcess(22, 3, None, 0.0),
    ]
    holders = {15: holder(15, 0), 16: holder(16, 1), 21: holder(21, 3), 22: holder(22, 3)}
    results = by_pid(attribute(entries, MINORS, USED, holders, complete=True, driver_version="550.54.15"))
    assert all(r.basis is Attribution.NVML and r.sm_percent is None for r in results.values())
    assert results[0, 15].memory_mib == USED[0] and results[0, 15].memory_estimated
    assert results[0, 15].memory_note == ESTIMATED
    for key in ((3, 21), (3, 22)):
        assert results[key].memory_mib is None and results[key].memory_note == NOT_REPORTED
        assert not results[key].memory_estimated


def test_an_unlisted_second_holder_stops_the_estimate() -> None:
    """A forked child holding the same GPU's file: the one entry is not the GPU's only holder."""
    holders = {15: holder(15, 0), 40: holder(40, 0, start=200)}
    result = attribute([GpuProcess(15, 0, 0.0, 0.0)], MINORS, USED, holders, True, "550.54.15")[0]
    assert result.basis is Attribution.NVML and result.memory_mib is None and not result.memory_estimated


@pytest.mark.parametrize(("driver", "sm"), [("565.57.01", None), ("570.86.15", 85.0), ("580.95.05", 85.0)])
def test_sm_of_our_own_entries_only_where_samples_are_translated(driver: str, sm: float | None) -> None:
    entries = [GpuProcess(15, 0, 30720.0, 85.0)]
    result = attribute(entries, MINORS, USED, {15: holder(15, 0)}, True, driver)[0]
    assert result.basis is Attribution.NVML and result.memory_mib == 30720.0 and result.sm_percent == sm


def test_a_local_pid_without_the_gpus_file_is_not_that_entry() -> None:
    """PID 15 holds GPU 1's file, not GPU 0's: NVML's PID 15 on GPU 0 is not it."""
    result = attribute([GpuProcess(15, 0, 1024.0, 0.0)], MINORS, USED, {15: holder(15, 1)}, True, None)[0]
    assert result.basis is Attribution.OTHER_NAMESPACE and result.local_pid is None


def test_an_unknown_minor_joins_nothing() -> None:
    result = attribute([GpuProcess(15, 0, 1024.0, 0.0)], {0: None}, USED, {15: holder(15, 0)}, True, None)[0]
    assert result.basis is Attribution.OTHER_NAMESPACE


def test_driver_versions_compare_by_number() -> None:
    assert driver_at_least("570.86.15", (570, 86)) and driver_at_least("580.95.05", (570, 86))
    assert not driver_at_least("570.9.1", (570, 86)) and not driver_at_least("565.57.01", (570, 86))
    assert not driver_at_least(None, (570, 86)) and not driver_at_least("garbage", (570, 86))


# -- the device-file scan over a /proc of our own making ---------------------------------------------------


def fake_process(proc: Path, pid: int, start: int, links: dict[str, str], maps: str = "") -> None:
    """A /proc/PID with a stat (start time field 22), fd links and maps."""
    (proc / str(pid) / "fd").mkdir(parents=True)
    fields = ["S"] + ["0"] * 18 + [str(start)] + ["0"] * 10
    (proc / str(pid) / "stat").write_text(f"{pid} (python) {' '.join(fields)}\n")
    (proc / str(pid) / "maps").write_text(maps)
    for fd, target in links.items():
        os.symlink(target, proc / str(pid) / "fd" / fd)


def test_holders_are_found_by_descriptor_and_by_mapping(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    fake_process(proc, 15, 500, {"3": "/dev/nvidia0", "4": "/dev/nvidiactl", "5": "socket:[1]"})
    fake_process(proc, 16, 600, {"3": "/dev/nvidiactl", "4": "/dev/nvidia-uvm"})  # the driver, GPU unknown
    fake_process(proc, 17, 700, {}, maps="7f00-7f01 rw-s 00000000 00:05 12 /dev/nvidia3\n")  # forked child
    fake_process(proc, 18, 800, {"0": "/dev/null", "1": "/tmp/nvidia0"})  # not NVIDIA's
    scan = DeviceFileScanner(str(proc), self_pid=1).scan()
    assert scan.holders[15] == Holding(15, 500, frozenset({0}), True)
    assert scan.holders[16].minors == frozenset() and scan.holders[16].driver
    assert scan.holders[17].minors == frozenset({3})
    assert 18 not in scan.holders and scan.unreadable == 0
    assert [h.pid for h in scan.of_minor(0)] == [15]


def test_the_scan_rereads_only_new_processes_until_invalidated(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    fake_process(proc, 15, 500, {"3": "/dev/nvidia0"})
    scanner = DeviceFileScanner(str(proc), self_pid=1)
    assert scanner.scan().holders[15].minors == {0}
    os.symlink("/dev/nvidia1", proc / "15" / "fd" / "4")
    fake_process(proc, 20, 900, {"3": "/dev/nvidia2"})
    scan = scanner.scan()
    assert scan.holders[15].minors == {0} and scan.holders[20].minors == {2}  # 15 cached, 20 new
    scanner.invalidate()
    assert scanner.scan().holders[15].minors == {0, 1}


def test_a_cached_holding_is_dropped_when_the_pid_is_reused(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    fake_process(proc, 15, 500, {"3": "/dev/nvidia0"})
    scanner = DeviceFileScanner(str(proc), self_pid=1)
    assert scanner.holding(15).minors == {0}
    for path in sorted((proc / "15").rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() or path.is_symlink() else path.rmdir()
    (proc / "15").rmdir()
    fake_process(proc, 15, 999, {})  # another process under the same number
    held = scanner.holding(15)
    assert held is not None and held.start_ticks == 999 and not held.holds_gpu


def test_unreadable_descriptors_count_as_unreadable(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    fake_process(proc, 15, 500, {"3": "/dev/nvidia0"})
    (proc / "30").mkdir()  # no fd directory: gone or not ours to read
    scan = DeviceFileScanner(str(proc), self_pid=1).scan()
    assert scan.unreadable == 1 and scan_process(30, str(proc)) is None


def test_the_initial_pid_namespace_inode_is_the_kernels_constant() -> None:
    assert INIT_PID_NAMESPACE_INODE == 4026531836


def test_gpus_are_joined_to_device_files_by_minor_never_by_index() -> None:
    """Inside a container NVML's indices restart at 0 while the files keep the host's minors: GPU 0 is
    /dev/nvidia3 here, and a holder of /dev/nvidia0 (another GPU's file) is not its process."""
    entries = [GpuProcess(15, 0, 1024.0, 0.0), GpuProcess(16, 1, 2048.0, 0.0)]
    holders = {15: holder(15, 3), 16: holder(16, 0)}
    results = attribute(entries, {0: 3, 1: 5}, USED, holders, True, "580.95.05")
    assert [(r.basis, r.local_pid) for r in results] == [
        (Attribution.NVML, 15),
        (Attribution.OTHER_NAMESPACE, None),
    ]
