"""Builders shared by the alert-rule tests: a GPU sample, a process row, and (kind, subject) pairs."""

from __future__ import annotations

from tfgpu_tui.alerts import Alert
from tfgpu_tui.gpu.model import DeviceSample, HostState, ProcessRow


def device(
    index: int = 0, util: float | None = 0.0, used: float = 1000.0, total: float = 80000.0
) -> DeviceSample:
    return DeviceSample(index, "GPU", util, used, total, 40.0, 100.0, 400.0, None, 1410.0, 0)


def proc(
    pid: int, gpu: int | None = 0, mib: float | None = 1000.0, sm: float | None = 0.0, **kw
) -> ProcessRow:
    return ProcessRow(pid, gpu, mib, sm, HostState.OK, command=f"python job{pid}.py", create_time=1.0, **kw)


def kinds(alerts: list[Alert]) -> list[tuple[str, str]]:
    return [(a.kind, a.subject) for a in alerts]
