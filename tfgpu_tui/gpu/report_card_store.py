"""The report cards of ended runs (gpu/report_card.py), kept by log file where `tfgpu-tui log` reads them:
the dashboard's Training tab and `notify` watched the run's process on its GPU, `log` reads the log once and
watched nothing. One small JSON file in the user's state directory, written atomically, the newest
MAX_CARDS kept; what is read back is checked and bounded, and a file that is not ours counts as none."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tfgpu_tui.paths import state_dir
from tfgpu_tui.safe_files import read_json_object, write_atomically
from tfgpu_tui.text_clean import clean_line

MAX_CARDS = 100
MAX_CARD_CHARS = 400
MAX_STORE_BYTES = 256 * 1024
NOT_WATCHED = (
    "no efficiency line: neither the dashboard's Training tab nor `tfgpu-tui notify` watched this run's "
    "process on a GPU (the line is kept once one of them saw the run end)"
)


def store_path() -> Path:
    return state_dir() / "report-cards.json"


def log_key(log: Path) -> str:
    """The log as the store knows it: absolute, symlinks resolved."""
    return os.path.realpath(os.path.expanduser(log))


def save_card(log: Path, card: str, path: Path | None = None, now: float | None = None) -> None:
    """Keep `card` as the report card of the run that `log` holds; raises OSError when it cannot be
    written."""
    path = store_path() if path is None else path
    cards = load_cards(path)
    cards[log_key(log)] = (clean_line(card)[:MAX_CARD_CHARS], time.time() if now is None else now)
    newest = sorted(cards.items(), key=lambda item: item[1][1], reverse=True)[:MAX_CARDS]
    document = {key: {"card": text, "at": at} for key, (text, at) in newest}
    write_atomically(path, json.dumps(document, indent=1) + "\n")


def card_for(log: Path, path: Path | None = None) -> tuple[str, float] | None:
    """The kept report card of `log`'s run and when it was kept, None when no watcher kept one."""
    return load_cards(store_path() if path is None else path).get(log_key(log))


def efficiency_dict(log: Path, path: Path | None = None) -> dict[str, object]:
    """`log --json`'s ``efficiency``: the kept card, when it was kept (seconds since the epoch), or why
    there is none."""
    kept = card_for(log, path)
    if kept is None:
        return {"card": None, "kept_at": None, "why_none": NOT_WATCHED}
    return {"card": kept[0], "kept_at": round(kept[1], 3), "why_none": None}


def load_cards(path: Path) -> dict[str, tuple[str, float]]:
    """The kept cards by log, each with when it was kept; empty when there is no file or it is not ours."""
    try:
        document = read_json_object(path, MAX_STORE_BYTES)
    except (OSError, ValueError):
        return {}
    cards = {}
    for key, entry in list(document.items())[:MAX_CARDS]:
        if not (isinstance(key, str) and isinstance(entry, dict)):
            continue
        card, at = entry.get("card"), entry.get("at")
        if isinstance(card, str) and isinstance(at, (int, float)) and card == clean_line(card):
            cards[key] = (card[:MAX_CARD_CHARS], float(at))
    return cards
