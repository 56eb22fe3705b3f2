"""Keras 2 and Keras 3 progress output -> plain events.

Works on *segments*: the pieces of a log between ``\\r`` and ``\\n`` characters. Keras' live progress bar
(written even into a redirected file) is a run of ``\\b``, a ``\\r`` and the update, with ANSI colours in
Keras 3; one epoch is therefore one ``\\n``-terminated line holding every update. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from tfgpu_tui.text_clean import clean_text

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
EPOCH_HEADER = re.compile(r"^\s*Epoch (\d+)/(\d+)\s*$")
PROGRESS_HEAD = re.compile(r"^\s*(\d+)/(\d+|Unknown)(?=\s|$)")
BAR = re.compile(r"^\s*(?:\[[=>.]*\]|[━=>.]+)")
# Keras 3's ``━`` after a legacy code page (a Windows console: ``Γöü``, ``â”\x81``, ``?``): a run of non-ASCII
# characters (or ``?``) stands for a bar, but only in an update that also carries times or values.
FOREIGN_BAR = re.compile(r"^\s*(?:[^\x00-\x7f\s]|\?){3,}")
# Keras prints 4 decimals (f"{v:.4f}" / f"{v:.4e}"); the cap separates a value from digits glued after it.
NUMBER = r"[-+]?(?:nan|inf|\d+(?:\.\d{1,4})?(?:e[-+]?\d+)?)"
METRIC = re.compile(rf"^([A-Za-z_][\w./-]*): ({NUMBER})", re.IGNORECASE)
DURATION = r"(?:\d+:)?(?:\d+:)?\d+(?:\.\d+)?s?"
TIME_PER = re.compile(r"^(\d+(?:\.\d+)?)(s|ms|us|µs)/(step|sample|epoch)$")
TIME_AND_STEP = re.compile(rf"^({DURATION})\s+(\d+(?:\.\d+)?(?:s|ms|us|µs)/(?:step|sample))$")
ETA_LABEL = re.compile(rf"^ETA: ({DURATION})$")
ELAPSED = re.compile(rf"^({DURATION})$")
METRIC_ANYWHERE = re.compile(rf"([A-Za-z_][\w./-]*): ({NUMBER})", re.IGNORECASE)
# The common Keras 3 verbose=1 / Keras 2 final update after the bar, in one go (the loop handles the rest).
FAST_REST = re.compile(
    rf"^ ?(?:- )?({DURATION}) (\d+(?:\.\d+)?(?:s|ms|us|µs)/step)((?: - [A-Za-z_][\w./-]*: {NUMBER})*)$",
    re.IGNORECASE,
)
# An epoch's values without a step counter: Keras 1 / standalone Keras 2.0 verbose=2 (``40s - loss: 0.30``,
# `` - 131s - loss: 2.39``), or values printed on their own line after a bar (``- loss: 0.3 - acc: 0.9``).
VALUES_LINE = re.compile(
    rf"^\s*(?:-\s+)?(?:(\d+(?:\.\d+)?s)(?:\s+(\d+(?:\.\d+)?(?:s|ms|us|µs)/(?:step|sample)))?\s+-\s+)?"
    rf"([A-Za-z_][\w./-]*: {NUMBER}(?:\s+-\s+[A-Za-z_][\w./-]*: {NUMBER})*)\s*$",
    re.IGNORECASE,
)
UNIT_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}
JSON_EVENTS = frozenset({"train_begin", "epoch_begin", "batch_end", "epoch_end", "train_end"})


def clean_segment(text: str) -> str:
    """A segment as a terminal would show it: every escape sequence (colours, titles, screen clearing) and
    control character removed (text_clean.py), trailing blanks dropped. The one door for log lines.

    Keras' own colour codes and backspaces go first by the cheap way (they are in every Keras 3 update, and
    the general cleaner costs several times more per segment); `clean_text` then sees only the rest."""
    if "\x1b" in text:
        text = ANSI_ESCAPE.sub("", text)
    if "\b" in text:
        text = text.replace("\b", "")
    return clean_text(text).rstrip()


def parse_duration(text: str) -> float | None:
    """Seconds from a Keras duration: ``45s``, ``1:02``, ``1:02:03``, ``0.5s``; None if not one."""
    text = text.strip().removesuffix("s")
    try:
        seconds = 0.0
        for part in text.split(":"):
            seconds = seconds * 60 + float(part)
    except ValueError:
        return None
    return seconds


def parse_time_per(text: str) -> tuple[float, str] | None:
    """(seconds, unit) from ``10ms/step``, ``83us/sample``, ``2s/epoch``; None if not one."""
    match = TIME_PER.match(text.strip())
    if not match:
        return None
    return float(match.group(1)) * UNIT_SECONDS[match.group(2)], match.group(3)


def parse_number(text: str) -> float:
    """A Keras-printed value (``0.1234``, ``1.2345e-04``, ``nan``, ``inf``, ``-inf``) as a float."""
    return float(text)


@dataclass(frozen=True)
class EpochStart:
    """An ``Epoch k/N`` line."""

    epoch: int
    total_epochs: int


@dataclass(frozen=True)
class Progress:
    """One progress update (a bar update or a verbose=2 epoch line).

    Attributes:
        step: batches done; total_steps: None when Keras shows ``Unknown``.
        metrics: name -> value as printed (``nan``/``inf`` kept as floats).
        eta_seconds: time left in the epoch (in-progress updates only).
        elapsed_seconds: the epoch's duration (final updates only).
        step_seconds: time per step (or per sample in old TF, see ``per``).
        final: this update ends the epoch (it carries the ``val_`` metrics when validating).
        trailing: text glued after the update (e.g. a TensorFlow stderr line); "" when none.
    """

    step: int
    total_steps: int | None
    metrics: dict[str, float] = field(default_factory=dict)
    eta_seconds: float | None = None
    elapsed_seconds: float | None = None
    step_seconds: float | None = None
    per: str = "step"
    final: bool = False
    trailing: str = ""


@dataclass(frozen=True)
class ValuesLine:
    """Metrics on a line of their own, with the epoch's duration when printed (``40s - loss: 0.3045``)."""

    metrics: dict[str, float]
    elapsed_seconds: float | None = None
    step_seconds: float | None = None

    @property
    def has_validation(self) -> bool:
        return any(name.startswith("val_") for name in self.metrics)

    @property
    def has_training(self) -> bool:
        return any(not name.startswith("val_") for name in self.metrics)


@dataclass(frozen=True)
class JsonRecord:
    """One line written by ``tfgpu_tui.keras.JsonLinesLogger`` (exact values)."""

    event: str
    data: dict


def parse_epoch_header(segment: str) -> EpochStart | None:
    """``Epoch 3/10`` -> EpochStart(3, 10)."""
    match = EPOCH_HEADER.match(segment)
    return EpochStart(int(match.group(1)), int(match.group(2))) if match else None


def _parse_metric_part(part: str, metrics: dict[str, float]) -> str | None:
    """Add ``name: value`` to metrics; return text glued after the value (None if not a metric)."""
    match = METRIC.match(part)
    if not match:
        return None
    metrics[match.group(1)] = parse_number(match.group(2))
    return part[match.end() :]


@dataclass
class _Timing:
    """The time fields of one update, filled part by part."""

    eta: float | None = None
    elapsed: float | None = None
    step_seconds: float | None = None
    per: str = "step"
    labelled_eta: bool = False

    def read(self, part: str, index: int) -> bool:
        """Take ``ETA: 1:02``, ``5s 10ms/step``, ``10ms/step``, ``2s/epoch`` or a bare ``5s``; else False."""
        if match := ETA_LABEL.match(part):
            self.eta, self.labelled_eta = parse_duration(match.group(1)), True
        elif match := TIME_AND_STEP.match(part):
            self.elapsed = parse_duration(match.group(1))
            self.step_seconds, self.per = parse_time_per(match.group(2)) or (None, "step")
        elif (time_per := parse_time_per(part)) is not None:
            if time_per[1] != "epoch":
                self.step_seconds, self.per = time_per
            elif self.elapsed is None:
                self.elapsed = time_per[0]
        elif index <= 1 and ELAPSED.match(part):
            self.elapsed = parse_duration(part)
        else:
            return False
        return True


def parse_progress(segment: str, line_ends: bool = False) -> Progress | None:
    """Parse one cleaned segment as a Keras progress update; None if it is something else.

    Args:
        segment: the text, already passed through `clean_segment`.
        line_ends: the segment is followed by ``\\n`` (Keras writes it only when an epoch finalizes).
    """
    head = PROGRESS_HEAD.match(segment)
    if not head:
        return None
    step = int(head.group(1))
    total = None if head.group(2) == "Unknown" else int(head.group(2))
    rest = segment[head.end() :]
    bar = BAR.match(rest)
    foreign = bar is None and (bar := FOREIGN_BAR.match(rest)) is not None
    has_bar = bar is not None
    if bar:
        rest = rest[bar.end() :]
    fast = FAST_REST.match(rest) if bar else None
    if fast is not None:
        timing = _Timing()
        timing.read(f"{fast.group(1)} {fast.group(2)}", 0)
        metrics = {name: parse_number(value) for name, value in METRIC_ANYWHERE.findall(fast.group(3))}
        return _finish(step, total, True, metrics, timing, "", line_ends)
    parts = [p.strip() for p in rest.split(" - ")]
    metrics = {}
    timing = _Timing()
    trailing = ""
    for index, part in enumerate(parts):
        if not part:
            continue
        if (not part[0].isalpha() or part.startswith("ETA: ")) and timing.read(part, index):
            continue
        glued = _parse_metric_part(part, metrics)
        if glued is None:
            if metrics or index > 0:
                trailing = " - ".join(parts[index:])
                break
            if not has_bar:
                return None
            continue
        if glued.strip():
            trailing = glued + "".join(" - " + p for p in parts[index + 1 :])
            break
    if foreign and not metrics and timing == _Timing():
        return None  # non-ASCII text after `k/N` without a Keras time or value: not a bar
    return _finish(step, total, has_bar, metrics, timing, trailing, line_ends)


def _finish(
    step: int,
    total: int | None,
    has_bar: bool,
    metrics: dict[str, float],
    timing: _Timing,
    trailing: str,
    line_ends: bool,
) -> Progress:
    """Decide whether the update ends its epoch, and whether its bare time is an ETA or the elapsed time."""
    eta, elapsed, labelled_eta = timing.eta, timing.elapsed, timing.labelled_eta
    verbose2 = not has_bar and total is not None
    # A line end with stderr glued on is the stderr's, not the epoch's end.
    final = verbose2 or (line_ends and not trailing) or any(name.startswith("val_") for name in metrics)
    if total is not None and step < total:
        final = False  # Keras finalizes only at the last step
    if has_bar and not labelled_eta and not final:
        eta, elapsed = elapsed, None  # Keras 3 in-progress: the bare time is the ETA
    if labelled_eta:
        final = False
    if final and eta is not None and not labelled_eta:
        eta = None
    return Progress(step, total, metrics, eta, elapsed, timing.step_seconds, timing.per, final, trailing)


def parse_values_line(segment: str) -> ValuesLine | None:
    """``40s - loss: 0.3045 - acc: 0.9006``, `` - 131s - loss: 2.3976``, ``- loss: 0.3 - acc: 0.9``,
    ``loss: 1.55`` -> ValuesLine; None for anything else (a cleaned segment)."""
    if ": " not in segment:
        return None
    match = VALUES_LINE.match(segment)
    if match is None:
        return None
    metrics = {name: parse_number(value) for name, value in METRIC_ANYWHERE.findall(match.group(3))}
    elapsed = parse_duration(match.group(1)) if match.group(1) else None
    per = parse_time_per(match.group(2)) if match.group(2) else None
    return ValuesLine(metrics, elapsed, per[0] if per else None)


def parse_json_record(segment: str) -> JsonRecord | None:
    """A JsonLinesLogger line (``{"event": "epoch_end", ...}``) -> JsonRecord; None otherwise."""
    if not segment.startswith("{") or '"event"' not in segment:
        return None
    try:
        data = json.loads(segment)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("event") not in JSON_EVENTS:
        return None
    return JsonRecord(data["event"], data)


def is_bad_number(value: float) -> bool:
    """True for nan and +-inf."""
    return math.isnan(value) or math.isinf(value)
