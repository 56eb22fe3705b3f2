"""What Keras callbacks (and TensorFlow's checkpoint code) print into a training log: early stopping, learning
rate changes, saved checkpoints, TerminateOnNaN. Pure functions over one cleaned line, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

VALUE = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
EARLY_STOPPING = re.compile(
    r"^\s*Epoch \d+\s*:\s*early stopping\b|Restoring model weights from the end of the best epoch"
)
LR_CHANGE = re.compile(
    r"(?:ReduceLROnPlateau reducing|LearningRateScheduler setting) learning rate to "
    rf"(?:tf\.Tensor\()?({VALUE})",
    re.IGNORECASE,
)
CHECKPOINT_SAVED = re.compile(
    r"saving model to (?P<keras>.+?)\s*$"  # ModelCheckpoint, Keras 1 to 3
    r"|^\s*Saved checkpoint (?:for step \d+: |to )?(?P<manager>\S+)"  # tf.train.CheckpointManager examples
    # Estimator / TPUEstimator (INFO:tensorflow:)
    r"|Saving checkpoints? for \d+ into (?P<estimator>\S+?)\.?\s*$",
    re.IGNORECASE,
)
TERMINATED_ON_NAN = re.compile(r"^\s*Batch \d+: Invalid loss, terminating training")


class MessageKind(Enum):
    """Which callback message a line is."""

    EARLY_STOPPING = "early_stopping"
    LR_CHANGE = "lr_change"
    CHECKPOINT = "checkpoint"
    TERMINATED_ON_NAN = "terminated_on_nan"


@dataclass(frozen=True)
class CallbackMessage:
    """One recognised message: its kind, the new learning rate (LR_CHANGE) or the path (CHECKPOINT)."""

    kind: MessageKind
    learning_rate: float | None = None
    path: str = ""


def parse_callback_message(text: str) -> CallbackMessage | None:
    """The callback message in one cleaned line, or None (cheap for ordinary lines)."""
    if "rning rate to" in text:
        match = LR_CHANGE.search(text)
        if match:
            return CallbackMessage(MessageKind.LR_CHANGE, learning_rate=float(match.group(1)))
    if ("arly stopping" in text or "Restoring model weights" in text) and EARLY_STOPPING.search(text):
        return CallbackMessage(MessageKind.EARLY_STOPPING)
    if "aving" in text or "Saved checkpoint" in text:
        match = CHECKPOINT_SAVED.search(text)
        if match:
            path = next(group for group in match.groups() if group)
            return CallbackMessage(MessageKind.CHECKPOINT, path=path.strip().strip("'\""))
    if "Invalid loss" in text and TERMINATED_ON_NAN.search(text):
        return CallbackMessage(MessageKind.TERMINATED_ON_NAN)
    return None
