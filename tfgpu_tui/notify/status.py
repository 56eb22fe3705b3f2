"""The per-user status file: notify says it runs and where it sends (by scheme only), so that the dashboard's
header can show ``notify → ntfy, slack``. Written atomically at start, removed at exit; a file left by a
notify that died is recognised by its PID and start time and ignored."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

from tfgpu_tui.paths import runtime_dir
from tfgpu_tui.safe_files import read_json_object, write_atomically

MAX_STATUS_BYTES = 64 * 1024
MAX_SCHEMES = 8


def status_path() -> Path:
    """`notify.json` in the user's runtime directory (paths.py: `$XDG_RUNTIME_DIR/tfgpu-tui`, per user and
    cleared at logout)."""
    return runtime_dir() / "notify.json"


@dataclass(frozen=True)
class NotifyStatus:
    """A running notify: its process and the schemes it sends to."""

    pid: int
    create_time: float
    schemes: tuple[str, ...]

    def indicator(self) -> str:
        """``notify → ntfy, slack`` (``notify → nowhere`` with --json only)."""
        return "notify → " + (", ".join(self.schemes) if self.schemes else "nowhere")


def write_status(path: Path, schemes: list[str]) -> NotifyStatus:
    """Say that this process runs notify; raises OSError when the file cannot be written."""
    import psutil

    me = psutil.Process()
    status = NotifyStatus(me.pid, me.create_time(), tuple(dict.fromkeys(schemes)))
    document = {"pid": status.pid, "create_time": status.create_time, "schemes": list(status.schemes)}
    write_atomically(path, json.dumps(document) + "\n")
    return status


def clear_status(path: Path, status: NotifyStatus) -> None:
    """Remove the file when it is still this process's."""
    if read_status(path, check_alive=False) == status:
        with contextlib.suppress(OSError):
            path.unlink()


def read_status(path: Path | None = None, check_alive: bool = True) -> NotifyStatus | None:
    """The running notify of this user, or None (no file, a malformed one, or its process is gone)."""
    path = status_path() if path is None else path
    try:
        document = read_json_object(path, MAX_STATUS_BYTES)
        pid, create_time = int(document["pid"]), float(document["create_time"])
        schemes = tuple(
            s for s in document.get("schemes", [])[:MAX_SCHEMES] if isinstance(s, str) and s.isalnum()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    status = NotifyStatus(pid, create_time, schemes)
    if check_alive:
        import psutil  # only with a status file, which is rare: the dashboard's header reads this

        try:
            if abs(psutil.Process(pid).create_time() - create_time) > 0.05:
                return None
        except psutil.Error:
            return None
    return status
