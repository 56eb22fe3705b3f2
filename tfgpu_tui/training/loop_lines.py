"""Lines that custom training loops print themselves (outside Keras' progress bar): a NaN or infinite
loss, a loss column of a table, ``tf.debugging.check_numerics`` failures, and epoch markers. Pure, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A loss named on the line, then nan/inf after ``=``, ``:``, a space or ``is``; the value may be a tensor's
# repr (``loss tf.Tensor(nan, shape=(), dtype=float32)``) or follow a quoted dict key (``'Loss/total_loss':
# nan``). The word boundaries keep ``info``, ``infer``, ``financial`` and ``nano`` out.
BAD_LOSS = re.compile(
    r"(?<![A-Za-z])(?P<name>(?:[A-Za-z]+[_/ ])?loss)['\"]?\s*(?:[=:]\s*|\s+(?:is\s+)?)"
    r"(?:tf\.Tensor\(|tensor\(|array\()?(?P<value>[-+]?(?:nan|inf(?:inity)?))(?![\w.])",
    re.IGNORECASE,
)
# tf.debugging.check_numerics: ``<message> : Tensor had NaN values`` (also Inf), usually inside an error.
CHECK_NUMERICS = re.compile(r"(?P<message>[^:\]]*?)\s*:\s*Tensor had (?P<what>NaN|Inf) values")
LOSS_COLUMN = re.compile(r"^(?:[A-Za-z]+_)?loss$", re.IGNORECASE)
BAD_VALUE = re.compile(r"^[-+]?(?:nan|inf(?:inity)?)$", re.IGNORECASE)
DIGIT = re.compile(r"\d")
# Custom loops' epoch markers: ``epoch 3, step 100``, ``Epoch 0/100, Batch 17/29316``, ``EPOCH 15 COMPLETED``,
# ``epoch: 3451 loss: 0.21`` (one line an epoch).
EPOCH_STEP = re.compile(
    r"^\s*epoch[\s:=]+(?P<epoch>\d+)(?:\s*/\s*(?P<total>\d+))?\s*[,;|:-]?\s*"
    r"(?:step|batch|iter(?:ation)?)[\s:=]+(?P<step>\d+)(?:\s*/\s*(?P<steps>\d+))?",
    re.IGNORECASE,
)
EPOCH_DONE = re.compile(
    r"^\s*epoch[\s:=]+(?P<epoch>\d+)(?:\s*/\s*(?P<total>\d+))?\s*[,:]?\s*(?:completed|complete|finished|done|ended)\b",
    re.IGNORECASE,
)
EPOCH_LOSS = re.compile(
    r"^\s*epoch[\s:=]+(?P<epoch>\d+)(?:\s*/\s*(?P<total>\d+))?\s*[,;|:-]?\s*(?:[A-Za-z]+[_ ])?loss"
    r"[\s:=]+[-+]?(?:\d|nan|inf)",
    re.IGNORECASE,
)
MAX_TABLE_COLUMNS = 20


@dataclass(frozen=True)
class BadLoss:
    """A loss that is NaN or infinite, as a loop printed it."""

    name: str
    value: float
    where: str  # "printed", "table" or "check_numerics"
    detail: str = ""  # check_numerics' message


@dataclass(frozen=True)
class LoopEpoch:
    """An epoch marker of a custom loop."""

    epoch: int
    total: int | None
    step: int | None
    total_steps: int | None
    done: bool


def bad_loss(text: str) -> BadLoss | None:
    """A NaN/inf loss printed on the line, or a check_numerics failure; None otherwise."""
    lowered = text.lower()
    if "nan" not in lowered and "inf" not in lowered:
        return None
    if "Tensor had" in text:
        match = CHECK_NUMERICS.search(text)
        if match:
            value = float("nan") if match.group("what") == "NaN" else float("inf")
            return BadLoss("tensor", value, "check_numerics", match.group("message").strip(" .:"))
    if "loss" not in lowered:
        return None
    match = BAD_LOSS.search(text)
    if match is None:
        return None
    return BadLoss(match.group("name"), float(match.group("value")), "printed")


def loop_epoch(text: str) -> LoopEpoch | None:
    """A custom loop's epoch marker, or None (Keras' own ``Epoch k/N`` header is parsed elsewhere)."""
    head = text.lstrip()[:5].lower()
    if head != "epoch":
        return None
    match = EPOCH_STEP.match(text)
    if match:
        return LoopEpoch(
            int(match.group("epoch")),
            _int(match.group("total")),
            int(match.group("step")),
            _int(match.group("steps")),
            False,
        )
    match = EPOCH_DONE.match(text) or EPOCH_LOSS.match(text)  # an epoch's end, or its loss
    if match:
        return LoopEpoch(int(match.group("epoch")), _int(match.group("total")), None, None, True)
    return None


class LoopEpochs:
    """Whether a custom loop's epoch markers number its epochs unambiguously: they never go back (two
    unprefixed ranks, or two loops, printing their own numbers make the count ambiguous: then none)."""

    def __init__(self) -> None:
        self.last: int | None = None
        self.ambiguous = False

    def accept(self, marker: LoopEpoch) -> bool:
        """Record the marker; False once the numbering is ambiguous."""
        if self.last is not None and marker.epoch < self.last:
            self.ambiguous = True
        self.last = marker.epoch
        return not self.ambiguous


class LossTable:
    """A table printed one row a line with a loss column (``step  loss  lr`` or ``| step | loss |``): finds
    the rows whose loss cell is NaN or infinite."""

    def __init__(self) -> None:
        self.column: int | None = None
        self.width = 0
        self.piped = False

    def feed(self, text: str) -> BadLoss | None:
        """One line; a `BadLoss` when it is a row of the current table with a bad loss."""
        lowered = text.lower()
        if "loss" in lowered and self._header(text):
            return None
        if self.column is None or ("nan" not in lowered and "inf" not in lowered):
            return None
        cells = _cells(text, self.piped)
        if len(cells) != self.width or ("|" in text) != self.piped:
            return None
        cell = cells[self.column]
        if BAD_VALUE.match(cell):
            return BadLoss("loss", float(cell), "table")
        return None

    def _header(self, text: str) -> bool:
        """Take the line as the table's header when it is one (column names, a loss among them)."""
        if DIGIT.search(text):  # a row, not a header (the cheap test first: most lines have a digit)
            return False
        piped = "|" in text
        cells = _cells(text, piped)
        if not 2 <= len(cells) <= MAX_TABLE_COLUMNS:
            return False
        column = next((i for i, cell in enumerate(cells) if LOSS_COLUMN.match(cell)), None)
        if column is None:
            return False
        self.column, self.width, self.piped = column, len(cells), piped
        return True


def _cells(text: str, piped: bool) -> list[str]:
    if piped:
        return [cell.strip() for cell in text.strip().strip("|").split("|")]
    return text.split()


def _int(text: str | None) -> int | None:
    return None if text is None else int(text)
