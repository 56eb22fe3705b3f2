"""What notify tells the user: the kinds of event, and one event as a short message in plain sentences."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class EventKind(str, Enum):
    """Each kind of event notify can send (its value is the name used by --events and the settings file)."""

    FINISHED = "finished"
    CRASHED = "crashed"
    NAN_LOSS = "nan"
    STALLED = "stalled"
    WRITER_DIED = "writer_died"
    NO_CHECKPOINT = "no_checkpoint"
    CPU_FALLBACK = "cpu_fallback"
    STALE_KERNEL = "stale_kernel"
    GPU_IDLE = "gpu_idle"
    GPU_LOST = "gpu_lost"
    MEMORY_FULL = "memory_full"

    def __str__(self) -> str:
        return self.value


TITLES: dict[EventKind, str] = {
    EventKind.FINISHED: "Training finished",
    EventKind.CRASHED: "Training crashed",
    EventKind.NAN_LOSS: "Loss is NaN or infinite",
    EventKind.STALLED: "Training stalled",
    EventKind.WRITER_DIED: "Training process died",
    EventKind.NO_CHECKPOINT: "No recent checkpoint",
    EventKind.CPU_FALLBACK: "TensorFlow runs on the CPU",
    EventKind.STALE_KERNEL: "Stale process holds GPU memory",
    EventKind.GPU_IDLE: "GPU idle",
    EventKind.GPU_LOST: "GPU lost",
    EventKind.MEMORY_FULL: "GPU memory full",
}
DEFAULT_EVENTS: tuple[EventKind, ...] = (
    EventKind.FINISHED,
    EventKind.CRASHED,
    EventKind.NAN_LOSS,
    EventKind.STALLED,
    EventKind.GPU_IDLE,
)
ALL_EVENTS: tuple[EventKind, ...] = tuple(EventKind)


def parse_events(names: list[str] | tuple[str, ...]) -> tuple[EventKind, ...]:
    """Event kinds from names (``all`` for every kind); raises ValueError naming an unknown one."""
    kinds: list[EventKind] = []
    for name in names:
        name = name.strip().lower()
        if name == "all":
            return ALL_EVENTS
        try:
            kind = EventKind(name)
        except ValueError:
            known = ", ".join(kind.value for kind in EventKind)
            raise ValueError(f"unknown event {name!r} (known: {known}, or all)") from None
        if kind not in kinds:
            kinds.append(kind)
    return tuple(kinds)


@dataclass(frozen=True)
class Event:
    """One condition worth a message.

    Attributes:
        kind: which event.
        key: what identifies this occurrence (kind, log or GPU, run): sent once while it holds.
        host: the machine's name.
        subject: what it is about: a log path with its writer's PID, a GPU, a process or notebook.
        message: what happened, in plain sentences.
        fix: what to do ("" when nothing).
        problem: for a training event, the id of the log's problem it reports (training/log_state.py's
            one problem list); "" for a GPU event.
    """

    kind: EventKind
    key: str
    host: str
    subject: str
    message: str
    fix: str = ""
    problem: str = ""

    @property
    def title(self) -> str:
        return f"{TITLES[self.kind]} on {self.host}"

    def body(self) -> str:
        """The message text: what, where, and the fix."""
        lines = [self.message, f"Host: {self.host}. {self.subject}."]
        if self.fix:
            lines.append(f"Fix: {self.fix}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, str]:
        """JSON-ready (one line of `notify --json`)."""
        return {
            "event": self.kind.value,
            "key": self.key,
            "host": self.host,
            "subject": self.subject,
            "title": self.title,
            "message": self.message,
            "fix": self.fix,
        }
