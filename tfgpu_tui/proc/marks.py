"""How tfgpu-tui marks the child processes it starts (environment probe, batch and pipeline probes), so that
no instance of the dashboard ever raises an alert about another instance's children.

Two marks: an environment variable (readable in ``/proc/PID/environ`` by the same user) and the child's
script path on its command line (readable by everyone).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

CHILD_ENV_VAR = "TFGPU_TUI_CHILD"
CHILD_ENV_VALUE = "1"
CHILD_SCRIPTS = (
    "tfgpu_tui/env/tf_inspect_script.py",
    "tfgpu_tui/probe/worker.py",
    "tfgpu_tui/probe/pipeline_worker.py",
)


def marked(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` with the child marker set."""
    return {**env, CHILD_ENV_VAR: CHILD_ENV_VALUE}


def argv_is_child(cmdline: Sequence[str]) -> bool:
    """Whether a command line runs one of tfgpu-tui's child scripts (the interpreter's script argument)."""
    for part in list(cmdline)[1:]:
        if part.startswith("-"):  # interpreter options such as -u or -X; -c and -m run no script file
            if part in ("-c", "-m"):
                return False
            continue
        return part.replace(os.sep, "/").endswith(CHILD_SCRIPTS)
    return False


def environ_is_child(environ: bytes) -> bool:
    """Whether the raw text of ``/proc/PID/environ`` carries the marker."""
    return f"{CHILD_ENV_VAR}={CHILD_ENV_VALUE}".encode() in environ.split(b"\0")
