"""The prefixes parallel launchers put before each line of a rank's output, and who printed a line.

``mpirun --tag-output`` (Open MPI, Horovod): ``[1,0]<stderr>:`` (job id, rank, stream); ``horovodrun``'s own
launcher: ``[0]<stdout>:``; ``srun --label``: ``0: `` (right-aligned when there are ten tasks or more);
``torchrun --tee`` / its log redirection: ``[default0]:`` (role and local rank). Open MPI tags each chunk
it reads from a rank's pipe, so an unbuffered program's line can carry its tag again in the middle
(``[1,1]<stderr>:ValueError[1,1]<stderr>:: ...``): those repeats go too. Pure functions, no I/O.
"""

from __future__ import annotations

import re

LAUNCHER_PREFIX = re.compile(
    r"(?:\[(?:\d{1,9},)?(?P<mpi>\d{1,7})\]<(?:stdout|stderr)>:"  # Open MPI --tag-output, horovodrun
    r"|\[[A-Za-z_]\w{0,30}?(?P<torch>\d{1,7})\]:"  # torchrun: [default0]:
    r"|[ ]{0,4}(?P<srun>\d{1,5}): )"  # srun --label
    r" ?"
)
#: The characters a prefixed line can start with: lines starting otherwise skip the regex.
PREFIX_STARTS = frozenset("[ 0123456789")


def split_launcher_prefix(text: str) -> tuple[int | None, str]:
    """(rank, the line without its prefix); (None, text) when the line has no launcher prefix."""
    if not text or text[0] not in PREFIX_STARTS:
        return None, text
    if text[0] != "[" and ": " not in text[:12]:  # a progress bar (``469/469 ...``): no regex needed
        return None, text
    match = LAUNCHER_PREFIX.match(text)
    if match is None:
        return None, text
    rank = match.group("mpi") or match.group("torch") or match.group("srun")
    rest = text[match.end() :]
    if match.group("mpi") is not None:
        tag = match.group(0).rstrip(" ")
        if (
            tag in rest
        ):  # Open MPI tags every chunk it reads: an unbuffered write in mid-line carries a tag too
            rest = rest.replace(tag, "")
    return int(rank), rest
