"""Which Python's TensorFlow to inspect when the user gave no ``--python``: one rule (`choose`) for the
Environment tab, the Batch probe, the header, `check` and `probe`.

Candidates, in order: the interpreter of each of this user's running TensorFlow jobs (the environment its
TensorFlow was loaded from: ``/proc/PID/maps`` names the site-packages, ``/proc/PID/exe`` the binary), the
activated environment (``$VIRTUAL_ENV``, ``$CONDA_PREFIX``), ``python3`` on PATH, and the dashboard's own.
Each is asked for its TensorFlow version in a child process (no TensorFlow import: package metadata only).
The target is this user's own live TensorFlow job, else the activated environment as it is (TensorFlow or
not: that is what the user runs), else the first of the rest that has TensorFlow. A job's candidate keeps its
PID and start time, so that a job that has ended is told (`job_running`) and forgotten.

The `p` picker lists more (`picker_candidates`): conda environments (``~/.conda/environments.txt``,
``~/miniconda3``, ``~/anaconda3``... and their ``envs/*``), ``~/.venv*``, ``~/venvs/*``, pyenv's versions and
the interpreters of this user's running Python processes, and checks a typed path (`typed_interpreter`).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from tfgpu_tui.proc.marks import marked
from tfgpu_tui.proc.python_processes import (
    Job,
    prefix_python,
    process_interpreter,
    running_pythons,
    tensorflow_processes,
)

ASK_TIMEOUT_SECONDS = 10.0
# Candidate kinds, in the order `choose` prefers them (the rest are listed by the picker only).
JOB, VENV, CONDA, CONDA_BASE = "job", "venv", "conda", "conda-base"
ON_PATH, OWN, FOUND = "path", "own", "found"
ACTIVATED = (VENV, CONDA)  # what an activated environment gives; conda's auto-activated base is not one
FALLBACK = (CONDA_BASE, ON_PATH, OWN)
TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly", "tensorflow-intel")
# The oldest Python a target may be, for the checks, the probe and the Batch probe tab alike: the oldest any
# TensorFlow release with the `[and-cuda]` extra (2.14 onwards, the releases the fixes install) has wheels for
# (tfgpu_tui/data/tf_build_matrix.csv: 2.14-2.20 support 3.9, 2.21 3.10; 2.13, the last for 3.8, predates the
# extra). Below it no fix installs a GPU TensorFlow, and the probe's trial worker uses 3.9 syntax. The
# dashboard's own interpreter is another matter: it needs 3.10 (pyproject's requires-python).
OLDEST_PYTHON = (3, 9)
OLDEST_PYTHON_TEXT = ".".join(map(str, OLDEST_PYTHON))


def too_old(python_version: str | None) -> bool:
    """Whether a "3.6.15" version is older than OLDEST_PYTHON (an unknown one is not)."""
    numbers = _version_numbers(python_version or "")
    return numbers is not None and numbers < OLDEST_PYTHON


def too_old_text(python_version: str) -> str:
    """Why a target of `python_version` is refused, in the words every surface uses."""
    return (
        f"is Python {python_version}, too old: the checks and the probe need Python {OLDEST_PYTHON_TEXT} "
        "or newer (the oldest TensorFlow 2.14+ supports)"
    )


# Prints the interpreter's version, then its TensorFlow's (or "-"); Python 2.7 syntax too, so that an old
# interpreter is named as too old rather than as not working.
VERSION_SCRIPT = (
    "import sys\n"
    "print('%d.%d.%d' % tuple(sys.version_info[:3]))\n"
    "try:\n"
    "    import importlib.metadata as m\n"
    "except ImportError:\n"
    "    m = None\n"
    f"for name in {TF_DISTRIBUTIONS!r}:\n"
    "    try:\n"
    "        print(m.version(name)); break\n"
    "    except Exception:\n"
    "        pass\n"
    "else:\n"
    "    print('-')\n"
)
CONDA_BASES = ("miniconda3", "anaconda3", "miniforge3", "mambaforge")


@dataclass(frozen=True)
class Candidate:
    """An interpreter that may run the user's TensorFlow, and why it is on the list."""

    python: str
    source: str  # e.g. "your TensorFlow job PID 4242 (python train.py)", "the activated venv ($VIRTUAL_ENV)"
    tf_version: str | None = None  # None: no TensorFlow there (or it could not be asked: see ``error``)
    error: str = ""
    python_version: str | None = None  # e.g. "3.11.7", once asked
    kind: str = FOUND  # JOB, VENV, ... : what `choose` goes by
    reason: str = ""  # `source` in a few words, for the header ("your TF job PID 4242", "activated venv")
    pid: int | None = None  # a job's
    started: float | None = None  # a job's start time (psutil's create_time): a PID used again is not it


@dataclass(frozen=True)
class Target:
    """The interpreter chosen, why (`why` in a line, `reason` in a few words), and every candidate found (for
    the picker); a job's PID and start time, to tell when it has ended."""

    python: str
    why: str
    candidates: tuple[Candidate, ...] = field(default=(), compare=False)
    reason: str = ""
    pid: int | None = None
    started: float | None = None

    @classmethod
    def of(cls, candidate: Candidate, why: str, pool: tuple[Candidate, ...]) -> Target:
        """The target `candidate` makes, said as `why`."""
        reason = candidate.reason or candidate.source
        return cls(candidate.python, why, pool, reason, candidate.pid, candidate.started)


def find_candidates(
    own_python: str = sys.executable,
    environ: Mapping[str, str] | None = None,
    tf_processes: Callable[[], list[Job]] | None = None,
) -> list[Candidate]:
    """Every candidate in the order of preference, each interpreter once (TensorFlow versions not asked);
    `tf_processes` lists this user's running TensorFlow jobs (default `tensorflow_processes`)."""
    env = os.environ if environ is None else environ
    listed: list[Candidate] = []
    for job in (tensorflow_processes if tf_processes is None else tf_processes)():
        python = process_interpreter(job.pid)
        if python:
            why, reason = f"your TensorFlow job PID {job.pid} ({job.command})", f"your TF job PID {job.pid}"
            listed.append(Candidate(python, why, kind=JOB, reason=reason, pid=job.pid, started=job.started))
    for kind, python, source, reason in _activated(env):
        listed.append(Candidate(python, source, kind=kind, reason=reason))
    path_python = shutil.which("python3", path=env.get("PATH"))
    if path_python:
        listed.append(Candidate(path_python, "python3 on PATH", kind=ON_PATH))
    listed.append(Candidate(own_python, "tfgpu-tui's own interpreter", kind=OWN, reason="tfgpu-tui's own"))
    return unique_environments(listed)


def _activated(environ: Mapping[str, str]) -> list[tuple[str, str, str, str]]:
    """(kind, interpreter, source, reason) of the environments the shell activated: ``$VIRTUAL_ENV``, then
    ``$CONDA_PREFIX`` (its base environment, which conda activates in every shell by default, is no choice
    of the user's: CONDA_BASE)."""
    found = []
    venv = prefix_python(environ["VIRTUAL_ENV"]) if environ.get("VIRTUAL_ENV") else None
    if venv:
        found.append((VENV, venv, "the activated venv ($VIRTUAL_ENV)", "activated venv"))
    conda = prefix_python(environ["CONDA_PREFIX"]) if environ.get("CONDA_PREFIX") else None
    if conda and environ.get("CONDA_DEFAULT_ENV") == "base":
        found.append((CONDA_BASE, conda, "conda's base environment ($CONDA_PREFIX)", "conda base"))
    elif conda:
        found.append((CONDA, conda, "the activated conda environment ($CONDA_PREFIX)", "activated conda env"))
    return found


def unique_environments(candidates: list[Candidate]) -> list[Candidate]:
    """Each interpreter once, the first listing kept: deduplicated by real path, that of the binary and that
    of its bin/ folder (python and python3 of one venv are one; a venv and the Python it links to are not)."""
    unique: dict[tuple[str, str], Candidate] = {}
    for candidate in candidates:
        path = os.path.abspath(candidate.python)
        unique.setdefault((os.path.realpath(os.path.dirname(path)), os.path.realpath(path)), candidate)
    return list(unique.values())


def picker_candidates(
    own_python: str = sys.executable,
    environ: Mapping[str, str] | None = None,
    home: str | None = None,
    running: Callable[[], list[Candidate]] | None = None,
    tf_processes: Callable[[], list[Job]] | None = None,
) -> list[Candidate]:
    """What the `p` picker lists: `find_candidates`, then every environment found under the home directory
    and the interpreters of this user's running Python processes (``running``, default `python_processes`),
    each once. `tf_processes` goes to `find_candidates`: a test passes empty listers for both, so that no
    process on the machine changes what it sees."""
    env = os.environ if environ is None else environ
    home = os.path.expanduser("~") if home is None else home
    found = [
        Candidate(python, source)
        for prefix, source in environment_prefixes(home, env)
        if (python := prefix_python(prefix)) is not None
    ]
    return unique_environments(
        find_candidates(own_python, env, tf_processes)
        + found
        + (python_processes if running is None else running)()
    )


def environment_prefixes(home: str, environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(prefix, where it was found) of every conda environment, venv and pyenv version in the usual places
    (what ``conda info --envs`` lists, without running conda)."""
    places: list[tuple[str, str]] = []
    try:
        with open(os.path.join(home, ".conda", "environments.txt"), encoding="utf-8") as handle:
            places += [(line.strip(), "conda environment") for line in handle if line.strip()]
    except OSError:
        pass
    for base in CONDA_BASES:
        root = os.path.join(home, base)
        places.append((root, f"conda base (~/{base})"))
        places += [(prefix, f"conda environment (~/{base}/envs)") for prefix in _subdirs(root, "envs", "*")]
    places += [(prefix, "~/.venv*") for prefix in _subdirs(home, ".venv*")]
    places += [(prefix, "~/venvs") for prefix in _subdirs(home, "venvs", "*")]
    pyenv = environ.get("PYENV_ROOT") or os.path.join(home, ".pyenv")
    places += [(prefix, "pyenv version") for prefix in _subdirs(pyenv, "versions", "*")]
    return places


def _subdirs(*parts: str) -> list[str]:
    """The directories matching a glob pattern, in name order (numbers as numbers), links after real ones (so
    that a link to an environment found already is the duplicate)."""
    found = [path for path in glob.glob(os.path.join(*parts)) if os.path.isdir(path)]
    return sorted(found, key=lambda path: (os.path.islink(path), natural_key(path)))


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key that orders the numbers in `text` as numbers: pyenv's 3.9.18 before 3.10.13."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)


def picker_order(candidates: list[Candidate]) -> list[Candidate]:
    """The picker's order: interpreters with TensorFlow first, then those without, then those that cannot
    be used; within each, the order they were found in (the chosen rule's, then versions as versions)."""
    return sorted(candidates, key=lambda c: (not c.tf_version, bool(c.error)))


def python_processes(
    own_pid: int | None = None, uid: int | None = None, pids: Iterable[int] | None = None
) -> list[Candidate]:
    """The interpreters of this user's running Python processes (proc/python_processes.py), as the
    picker's candidates."""
    return [
        Candidate(python, f"running Python process PID {pid} ({command})")
        for pid, python, command in running_pythons(own_pid, uid, pids)
    ]


def typed_interpreter(text: str) -> str:
    """The absolute path of an interpreter the user typed (``~`` expanded), if it is an existing executable
    regular file; raises ValueError with one line saying what is wrong otherwise."""
    typed = text.strip()
    if not typed:
        raise ValueError("Type the path of a Python interpreter, e.g. ~/venvs/tf/bin/python.")
    path = os.path.abspath(os.path.expanduser(typed))
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror or 'cannot be read'}.") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{path} is a directory; give its interpreter, e.g. {path}/bin/python.")
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path} is not a regular file.")
    if not os.access(path, os.X_OK):
        raise ValueError(f"{path} is not executable.")
    return path


def ask_version(candidate: Candidate, timeout: float = ASK_TIMEOUT_SECONDS) -> Candidate:
    """The candidate with its TensorFlow version (package metadata, in a child process marked as ours)."""
    try:
        done = subprocess.run(
            [candidate.python, "-c", VERSION_SCRIPT],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=marked(os.environ),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return replace(candidate, error=f"did not answer within {timeout:g} s")
    except OSError as error:
        return replace(candidate, error=f"could not be run: {error.strerror or error}")
    lines = [line.strip() for line in done.stdout.strip().splitlines()]
    numbers = _version_numbers(lines[0]) if lines else None
    if numbers is None:
        return replace(candidate, error="is not a working Python interpreter")
    asked = replace(candidate, python_version=lines[0])
    if too_old(lines[0]):
        return replace(asked, error=too_old_text(lines[0]))
    if done.returncode != 0 or len(lines) < 2:
        return replace(asked, error="is not a working Python interpreter")
    return replace(asked, tf_version=None if lines[-1] == "-" else lines[-1][:40])


def _version_numbers(text: str) -> tuple[int, int] | None:
    match = re.fullmatch(r"(\d+)\.(\d+)\.\d+", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def with_versions(candidates: list[Candidate]) -> list[Candidate]:
    """Every candidate asked for its TensorFlow version, in parallel."""
    if not candidates:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(candidates))) as pool:
        return list(pool.map(ask_version, candidates))


def choose(candidates: list[Candidate]) -> Target:
    """This user's own live TensorFlow job; else the activated environment (with TensorFlow or not); else the
    first of the rest that has TensorFlow, the first that works, the last."""
    pool = tuple(candidates)
    for candidate in pool:
        if candidate.kind == JOB and candidate.tf_version and not candidate.error:
            return Target.of(candidate, candidate.source, pool)
    for candidate in pool:
        if candidate.kind in ACTIVATED:
            return Target.of(candidate, candidate.source, pool)
    rest = [c for c in pool if c.kind in FALLBACK] or list(pool)
    for candidate in rest:
        if candidate.tf_version:
            return Target.of(candidate, candidate.source, pool)
    first = next((c for c in rest if not c.error), rest[0])
    return Target.of(first, f"{first.source}; no candidate has TensorFlow", pool)


def resolve_target(
    python: str | None,
    own_python: str = sys.executable,
    environ: Mapping[str, str] | None = None,
    tf_processes: Callable[[], list[Job]] | None = None,
) -> Target:
    """The target: ``python`` when the user chose one (even tfgpu-tui's own), else `choose` among the
    candidates found now."""
    if python:
        return Target(python, "--python", (), "--python")
    return choose(with_needed_versions(find_candidates(own_python, environ, tf_processes)))


def with_needed_versions(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates, those whose TensorFlow version `choose` may look at asked for it: the jobs, and the
    rest only when no environment is activated (the activated one is chosen as it is)."""
    activated = any(c.kind in ACTIVATED for c in candidates)
    needed = [c.kind == JOB or not activated for c in candidates]
    asked = iter(with_versions([c for c, need in zip(candidates, needed, strict=True) if need]))
    return [next(asked) if need else c for c, need in zip(candidates, needed, strict=True)]
