"""The settings file (`~/.config/tfgpu-tui/config.toml`): read it, check every key, apply it to Settings.

Nothing here raises on bad input: unknown keys, wrong types and a malformed file become warnings
(one line each, naming the key or the line), and the affected values keep their defaults.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfgpu_tui.paths import config_dir
from tfgpu_tui.settings import (
    BUDGET_MB,
    CPU_PERCENT,
    EPOCHS,
    GRACE_SECONDS,
    INTERVAL,
    MINUTES,
    PERCENT,
    RENAMED_KEYS,
    TIMEOUT_SECONDS,
    Range,
    Settings,
)

CONFIG_ENV_VAR = "TFGPU_TUI_CONFIG"
CONFIG_FILE_NAME = "config.toml"


def config_path() -> Path:
    """Where the settings file is: `$TFGPU_TUI_CONFIG`, else `config.toml` in the user's config directory
    (paths.py: `$XDG_CONFIG_HOME/tfgpu-tui`, else `~/.config/tfgpu-tui`)."""
    explicit = os.environ.get(CONFIG_ENV_VAR, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return config_dir() / CONFIG_FILE_NAME


class InvalidValue(ValueError):
    """A config value of the right TOML type but outside what the setting accepts."""


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError("a number")
    return float(value)


def _in(bounds: Range) -> Callable[[Any], float]:
    """A parser for a number within `bounds`."""

    def parse(value: Any) -> float:
        number = _number(value)
        if not bounds.contains(number):
            raise InvalidValue(f"must be {bounds.describe()}")
        return number

    return parse


def _whole_in(bounds: Range) -> Callable[[Any], int]:
    """A parser for a whole number within `bounds`."""

    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("a whole number")
        if not bounds.contains(value):
            raise InvalidValue(f"must be {bounds.describe()}")
        return value

    return parse


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("true or false")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError("a non-empty string")
    return value


def _texts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise TypeError("a list of non-empty strings")
    return tuple(value)


def _event_names(value: Any) -> tuple[str, ...]:
    from tfgpu_tui.notify.events import parse_events

    try:
        return tuple(kind.value for kind in parse_events(_texts(value)))
    except ValueError as error:
        raise InvalidValue(str(error)) from None


def _path(value: Any) -> Path:
    return Path(_text(value)).expanduser()


def _interpreter(value: Any) -> str:
    return str(_path(value))


@dataclass(frozen=True)
class ConfigKey:
    """One key the file may hold (named like the Settings field it sets), its parser and its meaning."""

    name: str
    parse: Callable[[Any], Any]
    help: str


CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("interval", _in(INTERVAL), f"refresh interval in seconds ({INTERVAL.describe()})"),
    ConfigKey("readonly", _boolean, "never send signals to processes"),
    ConfigKey("python", _interpreter, "Python interpreter whose TensorFlow is inspected and used"),
    ConfigKey(
        "least_privilege", _boolean, "what a web session gets: no signals, logs under log_root only, ..."
    ),
    ConfigKey("allow_kill", _boolean, "with least privilege: signals allowed after all"),
    ConfigKey("allow_code", _boolean, "with least privilege: module:function models and other model files"),
    ConfigKey("log_root", _path, "logs are opened only under this directory"),
    ConfigKey("log_path", _path, "training log the Training tab follows"),
    ConfigKey("checkpoints_dir", _path, "where training writes checkpoints"),
    ConfigKey("kill_grace_seconds", _in(GRACE_SECONDS), "wait between SIGTERM and SIGKILL"),
    ConfigKey("fallback_seconds", _in(TIMEOUT_SECONDS), "GPU idle this long while training = CPU fallback"),
    ConfigKey("stale_minutes", _in(MINUTES), "an idle process holding GPU memory this long is stale"),
    ConfigKey("memory_full_percent", _in(PERCENT), "GPU memory use that raises an alert"),
    ConfigKey("starvation_minutes", _in(MINUTES), "low GPU use with a busy CPU this long = input starvation"),
    ConfigKey("starvation_util_percent", _in(PERCENT), "mean GPU utilisation below this can mean starvation"),
    ConfigKey("starvation_cpu_percent", _in(CPU_PERCENT), "mean CPU % (of one core) above this = starvation"),
    ConfigKey(
        "memory_growth_percent", _in(PERCENT), "a TensorFlow process holding this much of a shared GPU"
    ),
    ConfigKey("efficiency_minutes", _in(MINUTES), "window of the efficiency diagnoses (docs/efficiency.md)"),
    ConfigKey("busy_util_percent", _in(PERCENT), "utilisation at which a GPU counts as busy"),
    ConfigKey("sm_active_low_percent", _in(PERCENT), "GPM SM activity below this while busy"),
    ConfigKey("tensor_idle_percent", _in(PERCENT), "tensor-core activity below this: tensor cores idle"),
    ConfigKey("throttled_percent", _in(PERCENT), "share of the busy time throttled that is reported"),
    ConfigKey("over_provisioned_minutes", _in(MINUTES), "how long a job is watched before over-provisioned"),
    ConfigKey("over_provisioned_percent", _in(PERCENT), "peak memory and SM share below this"),
    ConfigKey(
        "env_check_timeout_seconds", _in(TIMEOUT_SECONDS), "time limit of the TensorFlow environment check"
    ),
    ConfigKey("checkpoint_max_epochs", _whole_in(EPOCHS), "epochs without a new checkpoint before a warning"),
    ConfigKey("checkpoint_max_minutes", _in(MINUTES), "minutes without a new checkpoint before a warning"),
    ConfigKey("batch_budget_mb", _whole_in(BUDGET_MB), "default memory budget of the batch probe"),
    ConfigKey("notify_urls", _texts, "notify: Apprise URLs to send events to (they hold secrets)"),
    ConfigKey("notify_events", _event_names, "notify: the events to send (names, or all)"),
    ConfigKey("notify_stall_minutes", _in(MINUTES), "notify: a log silent this long while its writer lives"),
    ConfigKey("notify_idle_minutes", _in(MINUTES), "notify: a GPU at 0 % this long while nothing trains"),
)
KEYS_BY_NAME = {key.name: key for key in CONFIG_KEYS}
SECRET_KEYS = frozenset({"notify_urls"})  # values never repeated in a warning


def _default_of(name: str) -> str:
    """The default a rejected key falls back to, as the user would write it."""
    value = getattr(Settings(), name, None)
    return "none" if value is None else repr(value) if isinstance(value, str) else str(value)


@dataclass
class ConfigFile:
    """What a settings file yielded: the accepted values (by key) and one warning per problem."""

    path: Path
    values: dict[str, Any]
    warnings: list[str]
    refused: dict[str, str] = field(default_factory=dict)  # key -> what was wrong with its value


def _syntax_error_message(path: Path, error: ValueError) -> str:
    """tomllib's message already ends with "(at line N, column M)"; say so plainly and name the file."""
    return f"{path}: not valid TOML, {error}; using the defaults for every setting"


def _suggestion(name: str) -> str:
    """ "did you mean 'interval'?" for a near miss, else the list of known keys."""
    import difflib  # only for a misspelt key

    close = difflib.get_close_matches(name, KEYS_BY_NAME, n=1)
    return f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(sorted(KEYS_BY_NAME))


def parse_config_text(text: str, path: Path) -> ConfigFile:
    """Check a settings file's text; never raises."""
    if sys.version_info >= (3, 11):  # loaded here: most runs have no settings file
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return ConfigFile(path, {}, [_syntax_error_message(path, error)])
    values: dict[str, Any] = {}
    warnings: list[str] = []
    refused: dict[str, str] = {}
    for name, raw in document.items():
        if name in RENAMED_KEYS:
            new_name = RENAMED_KEYS[name]
            if new_name in document:
                warnings.append(f"{path}: {name} is the old name of {new_name}, which is also set; ignored")
                continue
            warnings.append(f"{path}: {name} is deprecated, call it {new_name} (its value is used)")
            name = new_name
        key = KEYS_BY_NAME.get(name)
        if key is None:
            warnings.append(f"{path}: unknown key {name!r} ignored ({_suggestion(name)})")
            continue
        got = "a hidden value" if name in SECRET_KEYS else repr(raw)  # never echo a secret
        try:
            values[key.name] = key.parse(raw)
            continue
        except TypeError as error:
            refused[key.name] = f"{path}: {name} must be {error}, got {got}"
        except InvalidValue as error:
            refused[key.name] = f"{path}: {name} {error}, got {got}"
        warnings.append(f"{refused[key.name]}; using the default {_default_of(name)}")
    return ConfigFile(path, values, warnings, refused)


def load_config(path: Path | None = None) -> ConfigFile:
    """Read the settings file (default location: `config_path()`); a missing file is no error,
    unless `$TFGPU_TUI_CONFIG` names it explicitly."""
    target = config_path() if path is None else path
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        explicit = path is not None or bool(os.environ.get(CONFIG_ENV_VAR, "").strip())
        warnings = [f"{target}: settings file not found; using the defaults"] if explicit else []
        return ConfigFile(target, {}, warnings)
    except (OSError, UnicodeDecodeError) as error:
        return ConfigFile(target, {}, [f"{target}: cannot read the settings file ({error}); using defaults"])
    return parse_config_text(text, target)


def apply_config(settings: Settings, config: ConfigFile) -> Settings:
    """Copy the file's accepted values onto `settings` and record its warnings there."""
    for name, value in config.values.items():
        setattr(settings, name, value)
    if "log_path" in config.values:
        settings.log_path_given = True
    settings.config_warnings = list(config.warnings)
    settings.config_refused = dict(config.refused)
    return settings
