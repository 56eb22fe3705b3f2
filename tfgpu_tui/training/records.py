"""The immutable pieces of a parsed training log: epochs, evaluations, announced checkpoints, fit() runs and
the current state. Frozen dataclasses with read-only metric mappings, so a snapshot crosses threads as is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import NamedTuple

from tfgpu_tui.durations import span_text
from tfgpu_tui.training.keras_progress import is_bad_number

EMPTY: Mapping[str, float] = MappingProxyType({})


def frozen_metrics(metrics: Mapping[str, float]) -> Mapping[str, float]:
    """A read-only copy of `metrics`."""
    return MappingProxyType(dict(metrics)) if metrics else EMPTY


def json_metrics(metrics: Mapping[str, float]) -> dict[str, float | str]:
    """Metrics with nan/inf as strings (JSON has no such numbers)."""
    return {k: (str(v) if is_bad_number(v) else v) for k, v in metrics.items()}


class FinishReason(str, Enum):
    """Why a fit() run ended."""

    COMPLETED = "completed"  # its last epoch (N of Epoch k/N) finished
    EARLY_STOPPING = "early_stopping"  # EarlyStopping stopped it
    TERMINATED_ON_NAN = "terminated_on_nan"  # TerminateOnNaN stopped it
    EXCEPTION = "exception"  # a traceback ended it
    KILLED = "killed"  # the shell reported it killed (usually the OOM killer)

    def __str__(self) -> str:
        return self.value

    @property
    def normal(self) -> bool:
        """Training ended as planned (all epochs, or a callback decided to stop)."""
        return self in (FinishReason.COMPLETED, FinishReason.EARLY_STOPPING)


class EndTimeSource(str, Enum):
    """Where an epoch's end time comes from."""

    LOG = "log"  # the log says (JsonLinesLogger's ``time``)
    FOLLOWED = "followed"  # its line arrived while the log was being followed
    ESTIMATED = "estimated"  # worked back from the file's modification time and the epochs' durations

    def __str__(self) -> str:
        return self.value


#: End times reported as facts in JSON; an estimate stays internal (checkpoint ages), never shown as a time.
KNOWN_END_TIMES = frozenset({EndTimeSource.LOG, EndTimeSource.FOLLOWED})


class EpochRecord(NamedTuple):
    """One finished epoch (a named tuple: immutable, and cheap to make for every epoch of a 1 GB log).

    Attributes:
        epoch: its number as printed (1-based); total_epochs: N of ``Epoch k/N`` (None if not printed).
        metrics: every metric printed at its end (``loss``, ``val_loss``, ...); the parser stores a
            read-only mapping (`frozen_metrics`). Change a record with ``record._replace(...)``.
        seconds: its duration where printed; step_seconds: time per step where printed.
        steps: steps in the epoch; fit_run: which ``fit()`` call in the file (1-based).
        line_number: the line it ended on; source: ``progress`` or ``json`` (exact, from JsonLinesLogger).
        ended_at: wall-clock time it ended: the time JsonLinesLogger wrote, else set by the follower
            (`watch.py`): when its last line arrived while following, estimated back from the file's
            modification time for what was already there; None if unknown. `ended_at_source` says which.
        lr_change: the learning rate a callback set during this epoch (ReduceLROnPlateau,
            LearningRateScheduler); None when it did not change.
    """

    epoch: int
    total_epochs: int | None
    metrics: Mapping[str, float]
    seconds: float | None = None
    step_seconds: float | None = None
    steps: int | None = None
    fit_run: int = 1
    line_number: int | None = None
    source: str = "progress"
    ended_at: float | None = None
    lr_change: float | None = None
    ended_at_source: EndTimeSource | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready; nan/inf become the strings "nan", "inf", "-inf"."""
        return {
            "epoch": self.epoch,
            "total_epochs": self.total_epochs,
            "metrics": json_metrics(self.metrics),
            "seconds": self.seconds,
            "step_seconds": self.step_seconds,
            "steps": self.steps,
            "fit_run": self.fit_run,
            "line_number": self.line_number,
            "source": self.source,
            "ended_at": self.ended_at if self.ended_at_source in KNOWN_END_TIMES else None,
            "ended_at_source": None if self.ended_at_source is None else self.ended_at_source.value,
            "lr_change": self.lr_change,
        }


@dataclass(frozen=True)
class Evaluation:
    """What ``evaluate()`` printed after (or between) fit() runs: its own result, never an epoch."""

    metrics: Mapping[str, float]
    steps: int | None = None
    seconds: float | None = None
    line_number: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.metrics, MappingProxyType):
            object.__setattr__(self, "metrics", frozen_metrics(self.metrics))

    def as_dict(self) -> dict[str, object]:
        return {
            "metrics": json_metrics(self.metrics),
            "steps": self.steps,
            "seconds": self.seconds,
            "line_number": self.line_number,
        }


@dataclass(frozen=True)
class AnnouncedCheckpoint:
    """A checkpoint the log says was written (``Epoch 5: saving model to ...``, ``Saved checkpoint ...``)."""

    path: str
    fit_run: int
    epoch: int | None
    line_number: int | None

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "fit_run": self.fit_run,
            "epoch": self.epoch,
            "line_number": self.line_number,
        }


@dataclass(frozen=True)
class RunInfo:
    """What is known of one fit() run beyond its epochs.

    Attributes:
        index: 1-based, as ``EpochRecord.fit_run``.
        finish_reason: why it ended; None while it runs (or when the log does not say).
        evaluation: the latest evaluate() result printed after its epochs, if any.
        headerless: it printed no ``Epoch k/N`` line (Keras omits it for ``fit(epochs=1)``).
    """

    index: int
    finish_reason: FinishReason | None = None
    evaluation: Evaluation | None = None
    headerless: bool = False


@dataclass(frozen=True)
class RunSummary:
    """One fit() run for reports: its epochs, whether and why it ended, its evaluation."""

    index: int
    epochs: tuple[EpochRecord, ...]
    finish_reason: FinishReason | None
    evaluation: Evaluation | None

    @property
    def finished(self) -> bool:
        """It ended as planned (completed or stopped early by a callback)."""
        return self.finish_reason is not None and self.finish_reason.normal

    def as_dict(self) -> dict[str, object]:
        """The ``runs`` entries of ``tfgpu-tui log --json``."""
        return {
            "run": self.index,
            "epochs": [e.as_dict() for e in self.epochs],
            "finished": self.finished,
            "finish_reason": None if self.finish_reason is None else self.finish_reason.value,
            "evaluation": None if self.evaluation is None else self.evaluation.as_dict(),
            "lr_changes": [
                {"epoch": e.epoch, "learning_rate": e.lr_change}
                for e in self.epochs
                if e.lr_change is not None
            ],
        }


class _Rates:
    """Throughput derived from the step time and batch size (shared by the live and the frozen state)."""

    step_seconds: float | None
    batch_size: int | None

    @property
    def steps_per_second(self) -> float | None:
        return 1.0 / self.step_seconds if self.step_seconds else None

    @property
    def samples_per_second(self) -> float | None:
        """Known only when the batch size is (JsonLinesLogger(batch_size=...))."""
        rate = self.steps_per_second
        return rate * self.batch_size if rate and self.batch_size else None


@dataclass
class LiveState(_Rates):
    """Where training is now, as the parser updates it (owned by the parsing thread)."""

    epoch: int | None = None
    total_epochs: int | None = None
    step: int | None = None
    total_steps: int | None = None
    eta_seconds: float | None = None
    step_seconds: float | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)  # replaced, never changed in place
    batch_size: int | None = None
    finished: bool = False

    def freeze(self) -> CurrentState:
        return CurrentState(
            self.epoch,
            self.total_epochs,
            self.step,
            self.total_steps,
            self.eta_seconds,
            self.step_seconds,
            frozen_metrics(self.metrics),
            self.batch_size,
            self.finished,
        )

    def as_dict(self) -> dict[str, object]:
        return self.freeze().as_dict()


@dataclass(frozen=True)
class CurrentState(_Rates):
    """Where training is now (the latest update, finished or not), frozen for another thread."""

    epoch: int | None = None
    total_epochs: int | None = None
    step: int | None = None
    total_steps: int | None = None
    eta_seconds: float | None = None
    step_seconds: float | None = None
    metrics: Mapping[str, float] = field(default_factory=lambda: EMPTY)
    batch_size: int | None = None
    finished: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "epoch": self.epoch,
            "total_epochs": self.total_epochs,
            "step": self.step,
            "total_steps": self.total_steps,
            "eta_seconds": self.eta_seconds,
            "step_seconds": self.step_seconds,
            "samples_per_second": self.samples_per_second,
            "metrics": json_metrics(self.metrics),
            "finished": self.finished,
        }


def format_seconds(seconds: float | None) -> str:
    """A training time: ``45s``, ``3m 05s``, ``2h 03m``, ``3d 04h``; ``-`` for None; ``12ms`` below 1 s."""
    return span_text(seconds)
