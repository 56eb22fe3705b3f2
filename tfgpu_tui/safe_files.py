"""Files opened safely. To read: which paths are safe to open as a file, never a FIFO (an open would block),
a device, a socket, a directory or a symlink loop; used wherever a path from outside is opened (training
logs, notify's --to-file, the command lines that take a log). To write: `write_atomically`, so that a
reader never sees half a file (notify's state and status, the probe's record, the report cards), and
`read_json_object` reads such a file back, bounded. Imports nothing of the package."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from pathlib import Path

KINDS = (
    (stat.S_ISDIR, "a directory, not a log file"),
    (stat.S_ISFIFO, "a FIFO (named pipe), not a regular file"),
    (stat.S_ISCHR, "a character device, not a regular file"),
    (stat.S_ISBLK, "a block device, not a regular file"),
    (stat.S_ISSOCK, "a socket, not a regular file"),
)


def special_file_refusal(path: Path | str) -> str | None:
    """Why `path` cannot be followed as a log: a FIFO, device, socket, directory or symlink loop. None for a
    regular file and for a path that does not exist (yet)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return f"{path} is a symlink loop (its links point back at each other)"
        return None
    for test, what in KINDS:
        if test(mode):
            return f"{path} is {what}"
    return None


def write_atomically(path: Path, text: str, mode: int = 0o600) -> None:
    """Write `text` to `path` through a temporary file in its directory renamed over it; raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fchmod(file.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_json_object(path: Path, max_bytes: int) -> dict:
    """The JSON object that the regular file `path` holds, refused over `max_bytes`. Raises OSError (no such
    file, unreadable, not a regular file, too large) or ValueError (not JSON, or not an object). One open
    (non-blocking, so a FIFO put there cannot hang it), checked and read through the same descriptor."""
    refusal = special_file_refusal(path)
    if refusal:
        raise OSError(errno.EINVAL, refusal)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"{path} is larger than {max_bytes} bytes")
    document = json.loads(data.decode("utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return document
