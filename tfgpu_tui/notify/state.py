"""Which events were sent: each at most once while it holds, again only after it cleared and came back.

Kept in a small JSON file, written atomically (a temporary file renamed over it), so a restarted notify
does not repeat what it already sent. Conditions that take time to show again after a restart (a GPU idle
for 30 minutes) are not taken as cleared until notify has watched for `settle_seconds`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from tfgpu_tui.notify.events import Event
from tfgpu_tui.paths import state_dir
from tfgpu_tui.safe_files import read_json_object, write_atomically

MAX_KEYS = 1000  # events remembered; the oldest are forgotten beyond that
MAX_STATE_BYTES = 1024 * 1024
VERSION = 1


def default_state_path() -> Path:
    """`notify-state.json` in the user's state directory (paths.py: `$XDG_STATE_HOME/tfgpu-tui`, else
    `~/.local/state/tfgpu-tui`)."""
    return state_dir() / "notify-state.json"


class Ledger:
    """The events sent and still holding, by key, with when each was sent.

    Args:
        path: the state file (None: kept in memory only).
        settle_seconds: keys read from the file count as cleared only once absent after this long.
        clock: wall-clock seconds.
    """

    def __init__(
        self, path: Path | None, settle_seconds: float = 0.0, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = path
        self.clock = clock
        self.settle_until = clock() + settle_seconds
        self.sent: dict[str, float] = {}
        self._seen: set[str] = set()  # keys seen holding since this process started
        self.load_problem = ""
        if path is not None:
            self.sent = self._load(path)

    def _load(self, path: Path) -> dict[str, float]:
        try:
            document = read_json_object(path, MAX_STATE_BYTES)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            self.load_problem = f"the state file {path} could not be read ({error}); starting afresh"
            return {}
        sent = document.get("sent")
        if not isinstance(sent, dict):
            return {}
        return {k: float(v) for k, v in sent.items() if isinstance(k, str) and isinstance(v, (int, float))}

    def save(self) -> None:
        """Write the file now; raises OSError when it cannot be written."""
        if self.path is not None:
            write_atomically(self.path, json.dumps({"version": VERSION, "sent": self.sent}, indent=1) + "\n")

    def due(self, holding: Iterable[Event]) -> list[Event]:
        """Given every event that holds now, the ones to send (not sent since they last came); forgets the
        ones that cleared. The caller saves after sending."""
        current = {event.key: event for event in holding}
        self._seen.update(current)
        settled = self.clock() >= self.settle_until
        for key in [k for k in self.sent if k not in current and (settled or k in self._seen)]:
            del self.sent[key]
            self._seen.discard(key)
        return [event for key, event in current.items() if key not in self.sent]

    def mark_sent(self, events: Iterable[Event]) -> None:
        now = self.clock()
        for event in events:
            self.sent[event.key] = now
        while len(self.sent) > MAX_KEYS:
            del self.sent[min(self.sent, key=self.sent.__getitem__)]
