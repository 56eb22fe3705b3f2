"""Shared test setup: no test reads the developer's own settings file."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config-home")))
    monkeypatch.delenv("TFGPU_TUI_CONFIG", raising=False)
