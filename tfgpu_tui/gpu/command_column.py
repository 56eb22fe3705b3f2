"""The process table's command column in words, shared by the Monitor's table and `tfgpu-tui gpus`, so the
two always say the same: markers, then the notebook of a Jupyter kernel, else the command line. Each piece
carries its role (how the table draws it); `gpus` prints the words alone."""

from __future__ import annotations

from functools import lru_cache

from tfgpu_tui.durations import idle_text
from tfgpu_tui.gpu.attribution import attribution_tag, memory_tag
from tfgpu_tui.gpu.model import HostState, JupyterKernel, ProcessRow

NA = "N/A"
# Roles: "marker" (a bracketed mark), "dim", "notebook", "kernel", "tf" and "" (the command line itself).
Piece = tuple[str, str]

HOST_STATE_MARKS = {
    HostState.NO_SUCH_PROCESS: "gone",
    HostState.NO_PERMISSION: "no permission",
    HostState.ZOMBIE: "zombie",
    HostState.OTHER_NAMESPACE: "another container's or the host's",
}


def idle_minutes(process: ProcessRow) -> int:
    """Whole minutes a process has held GPU memory at 0 % SM; 0 under a minute or when unknown."""
    idle = process.idle_seconds
    return int(idle // 60) if idle is not None and idle >= 60 else 0


def row_pieces(process: ProcessRow, tensorflow_mark: bool = False) -> tuple[Piece, ...]:
    """The command column of `process`; `tensorflow_mark` adds ``[TF]`` where no column of its own says it."""
    tags = tuple(tag for tag in (attribution_tag(process), memory_tag(process)) if tag)
    return command_pieces(
        process.host_state,
        process.jupyter,
        process.command,
        idle_minutes(process),
        process.own_child,
        tags,
        bool(tensorflow_mark and process.tensorflow_loaded),
    )


# Cached: a process's command rarely changes, and hundreds of rows are drawn at each refresh.
@lru_cache(maxsize=4096)
def command_pieces(
    host_state: HostState,
    kernel: JupyterKernel | None,
    command: str | None,
    idle_minutes: int = 0,
    own_child: bool = False,
    tags: tuple[str, ...] = (),
    tensorflow: bool = False,
) -> tuple[Piece, ...]:
    """`idle_minutes`: how long it has held GPU memory at 0 % SM (shown from 1 min); `own_child`: a
    tfgpu-tui child; `tags`: inside a container, how the row was joined to its process and why its memory is
    not a reported figure; `tensorflow`: mark it ``[TF]``."""
    pieces: list[Piece] = [(f"[{tag}] ", "marker") for tag in tags]
    mark = HOST_STATE_MARKS.get(host_state)
    if mark:
        pieces.append((f"[{mark}] ", "marker"))
    if tensorflow:
        pieces.append(("[TF] ", "tf"))
    if idle_minutes:
        pieces.append((f"[idle {idle_text(idle_minutes * 60)}] ", "marker"))
    if own_child:
        pieces.append(("[tfgpu-tui child] ", "dim"))
    if kernel is not None:
        if kernel.notebook_path:
            pieces.append((f"notebook {kernel.notebook_path}", "notebook"))
        else:
            why = f" ({kernel.why_unknown})" if kernel.why_unknown else ""
            pieces.append((f"jupyter kernel {kernel.kernel_id}{why}", "kernel"))
        if kernel.execution_state:
            pieces.append((f" [{kernel.execution_state}]", "dim"))
        return tuple(pieces)
    pieces.append((command or ("" if mark else NA), ""))
    return tuple(pieces)


def command_words(process: ProcessRow, tensorflow_mark: bool = False) -> str:
    """The column as plain text (`tfgpu-tui gpus`)."""
    return "".join(text for text, _ in row_pieces(process, tensorflow_mark)).rstrip()
