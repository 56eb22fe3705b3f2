"""The default budget: a GPU's free memory from the NVML reading, the host's available memory on the CPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tfgpu_tui.probe import budget


def test_gpu_budget_is_total_minus_used(monkeypatch: pytest.MonkeyPatch) -> None:
    samples = [SimpleNamespace(index=0, memory_total_mib=81920.0, memory_used_mib=1920.0, mig_mode=False)]
    monkeypatch.setattr(budget, "read_gpus", lambda: (samples, ""))
    assert budget.default_budget("GPU:0") == budget.Budget(80000.0, "free memory on GPU:0")
    assert budget.gpu_devices() == ["GPU:0"]
    missing = budget.default_budget("GPU:3")
    assert missing.mb is None and "there is no GPU:3" in missing.source and "--device CPU" in missing.source


def test_no_driver_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "read_gpus", lambda: ([], "no NVIDIA driver is installed here"))
    result = budget.default_budget("GPU:0")
    assert result.mb is None and "no NVIDIA driver is installed here" in result.source


def test_cpu_budget_is_available_host_memory() -> None:
    result = budget.default_budget("CPU")
    assert result.mb is not None and result.mb > 0 and result.source == "available host memory (CPU)"
