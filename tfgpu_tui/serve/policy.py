"""Least privilege: what a session may do on the machine it runs on (docs/security.md says it for users).

A local dashboard may do everything its user may (unless `--readonly`). A web session, or a dashboard started
with `--least-privilege`, may by default send no signals, open only regular files under the log root
(symlinks resolved), probe only the built-in models and model files under the log root, and write nothing on
the server; `--allow-kill` and `--allow-code` loosen that. Every check returns the reason for a refusal (a
sentence for the user) or None. No I/O beyond `stat`. What kind of file may be opened at all is
safe_files.py's, which every opener asks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from tfgpu_tui.safe_files import special_file_refusal
from tfgpu_tui.settings import Settings

MODEL_FILE_SUFFIXES = (".keras", ".h5")
CODE_REFUSED = (
    "models given as package.module:function run code on this machine, which this session may not do "
    "(the server's --allow-code allows it); use a builtin: model or a model file under {root}"
)
PIPELINE_REFUSED = (
    "a pipeline function runs code on this machine, which this session may not do (the server's "
    "--allow-code allows it)"
)
WRITES_REFUSED = "This session writes nothing on the machine it runs on (least privilege)."


@dataclass(frozen=True)
class AccessPolicy:
    """What a session may do. `log_root` (absolute, symlinks resolved) is None when any path may be opened."""

    allow_kill: bool = True
    allow_code: bool = True
    log_root: Path | None = None
    allow_writes: bool = True


def policy_from_settings(settings: Settings) -> AccessPolicy:
    """The policy `settings` asks for (see the module docstring)."""
    root = settings.log_root
    if settings.least_privilege:
        if root is None:
            root = Path(settings.log_path).expanduser().absolute().parent
        return AccessPolicy(
            allow_kill=settings.allow_kill and not settings.readonly,
            allow_code=settings.allow_code,
            log_root=real_path(root),
            allow_writes=False,
        )
    return AccessPolicy(not settings.readonly, True, None if root is None else real_path(root), True)


READONLY_REFUSAL = "Read-only mode (--readonly): no signals are sent"
LEAST_PRIVILEGE_KILL_REFUSAL = (
    "This session has least privilege and sends no signals: the server's `tfgpu-tui serve --allow-kill` "
    "(or `--allow-kill` beside `--least-privilege`) allows it"
)


def signal_refusal(settings: Settings) -> str | None:
    """Why this session may send no signal at all, naming the option that decides (the user's --readonly,
    else least privilege without --allow-kill); None when it may."""
    if settings.readonly:
        return READONLY_REFUSAL
    if settings.least_privilege and not settings.allow_kill:
        return LEAST_PRIVILEGE_KILL_REFUSAL
    return None


def real_path(path: Path | str) -> Path:
    """`path` absolute, `~` expanded and symlinks resolved (never raises; a loop is left as it is)."""
    return Path(os.path.realpath(os.path.expanduser(path)))


def is_under(path: Path | str, root: Path) -> bool:
    """Whether `path`, symlinks resolved, is `root` or inside it (`root` already resolved)."""
    real = str(real_path(path))
    return os.path.commonpath([real, str(root)]) == str(root)


def log_refusal(policy: AccessPolicy, path: Path | str) -> str | None:
    """Why this session may not follow `path` as a training log, or None."""
    special = special_file_refusal(path)
    if special is not None:
        return special
    if policy.log_root is not None and not is_under(path, policy.log_root):
        return f"{path} is outside the log root {policy.log_root}; this session opens logs only under it"
    return None


def model_refusal(policy: AccessPolicy, spec: str) -> str | None:
    """Why this session may not probe the model `spec` (as `check_model_spec` returns it), or None."""
    if policy.allow_code or spec.startswith("builtin:"):
        return None
    root = policy.log_root
    if os.path.isabs(spec):
        if root is None or not is_under(spec, root):
            return f"model files are allowed only under {root}" if root else CODE_REFUSED.format(root="-")
        if not spec.endswith(MODEL_FILE_SUFFIXES) or not os.path.isfile(spec):
            return f"{spec} is not a saved model file ({', '.join(MODEL_FILE_SUFFIXES)})"
        return None
    return CODE_REFUSED.format(root=root or "the log root")


def pipeline_refusal(policy: AccessPolicy) -> str | None:
    """Why this session may not time a ``package.module:function`` pipeline (it imports the user's code),
    or None."""
    return None if policy.allow_code else PIPELINE_REFUSED


class HasPath(Protocol):
    @property
    def path(self) -> Path: ...


T = TypeVar("T", bound=HasPath)


def visible_logs(policy: AccessPolicy, candidates: Iterable[T]) -> list[T]:
    """The candidates (anything with a `path`) this session may open; others' logs stay unlisted."""
    return [candidate for candidate in candidates if log_refusal(policy, candidate.path) is None]
