"""Where tfgpu-tui keeps its files for this user. The config, state and cache directories are platformdirs'
(on Linux the XDG base directories: `$XDG_CONFIG_HOME`, `$XDG_STATE_HOME`, `$XDG_CACHE_HOME`, a relative
value ignored as the spec says, else `~/.config`, `~/.local/state`, `~/.cache`)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "tfgpu-tui"


def config_dir() -> Path:
    """The settings file's directory (``~/.config/tfgpu-tui``)."""
    return Path(platformdirs.user_config_dir(APP))


def state_dir() -> Path:
    """What must survive a restart (``~/.local/state/tfgpu-tui``): notify's sent events."""
    return Path(platformdirs.user_state_dir(APP))


def runtime_dir() -> Path:
    """What lives as long as the login: ``$XDG_RUNTIME_DIR/tfgpu-tui`` where it is set (absolute), else the
    cache directory. Not platformdirs' runtime directory: where `$XDG_RUNTIME_DIR` is not mode 0700 it warns
    on stderr (inside the dashboard's screen) and moves to ``/tmp/runtime-UID``; notify's status file holds
    a PID and the schemes it sends to, nothing secret, and the dashboard checks the PID is alive."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / APP
    return Path(platformdirs.user_cache_dir(APP))
