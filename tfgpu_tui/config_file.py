"""The settings file (`~/.config/tfgpu-tui/config.toml`): read it, check every key, apply it to Settings.

Nothing here raises on bad input: unknown keys, wrong types and a malformed file become warnings
(one line each, naming the key or the line), and the affected values keep their defaults.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfgpu_tui.settings import MIN_INTERVAL_SECONDS, Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

CONFIG_ENV_VAR = "TFGPU_TUI_CONFIG"
CONFIG_DIR_NAME = "tfgpu-tui"
CONFIG_FILE_NAME = "config.toml"


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the settings file is: `$TFGPU_TUI_CONFIG`, else `$XDG_CONFIG_HOME/tfgpu-tui/config.toml`,
    else `~/.config/tfgpu-tui/config.toml`."""
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_ENV_VAR, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    # The XDG spec says relative paths in XDG_CONFIG_HOME are invalid and must be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / CONFIG_DIR_NAME / CONFIG_FILE_NAME


class InvalidValue(ValueError):
    """A config value of the right TOML type but outside what the setting accepts."""


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError("a number")
    return float(value)


def _positive(value: Any) -> float:
    number = _number(value)
    if number <= 0:
        raise InvalidValue("must be greater than 0")
    return number


def _non_negative(value: Any) -> float:
    number = _number(value)
    if number < 0:
        raise InvalidValue("must not be negative")
    return number


def _interval(value: Any) -> float:
    number = _number(value)
    if number < MIN_INTERVAL_SECONDS:
        raise InvalidValue(f"must be at least {MIN_INTERVAL_SECONDS}")
    return number


def _percent(value: Any) -> float:
    number = _number(value)
    if not 0 < number <= 100:
        raise InvalidValue("must be between 0 (exclusive) and 100")
    return number


def _positive_whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("a whole number")
    if value <= 0:
        raise InvalidValue("must be greater than 0")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("true or false")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError("a non-empty string")
    return value


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
    ConfigKey("interval", _interval, f"refresh interval in seconds (minimum {MIN_INTERVAL_SECONDS})"),
    ConfigKey("readonly", _boolean, "never send signals to processes"),
    ConfigKey("python", _interpreter, "Python interpreter whose TensorFlow is inspected and used"),
    ConfigKey("log_path", _path, "training log the Training tab follows"),
    ConfigKey("checkpoints_dir", _path, "where training writes checkpoints"),
    ConfigKey("kill_grace_seconds", _non_negative, "wait between SIGTERM and SIGKILL"),
    ConfigKey("fallback_seconds", _positive, "GPU idle this long while training = CPU fallback"),
    ConfigKey("stale_minutes", _positive, "an idle process holding GPU memory this long is stale"),
    ConfigKey("memory_full_percent", _percent, "GPU memory use that raises an alert"),
    ConfigKey("starvation_minutes", _positive, "low GPU use with a busy CPU this long = input starvation"),
    ConfigKey("starvation_util_percent", _percent, "mean GPU utilisation below this can mean starvation"),
    ConfigKey("starvation_cpu_percent", _positive, "mean CPU % (of one core) above this can mean starvation"),
    ConfigKey("memory_growth_percent", _percent, "a TensorFlow process holding this much of a shared GPU"),
    ConfigKey("probe_timeout_seconds", _positive, "time limit of the TensorFlow probe"),
    ConfigKey("checkpoint_max_epochs", _positive_whole, "epochs without a new checkpoint before a warning"),
    ConfigKey("checkpoint_max_minutes", _positive, "minutes without a new checkpoint before a warning"),
    ConfigKey("probe_budget_mb", _positive_whole, "default memory budget of the batch probe"),
)
KEYS_BY_NAME = {key.name: key for key in CONFIG_KEYS}


@dataclass
class ConfigFile:
    """What a settings file yielded: the accepted values (by key) and one warning per problem."""

    path: Path
    values: dict[str, Any]
    warnings: list[str]


def _syntax_error_message(path: Path, error: tomllib.TOMLDecodeError) -> str:
    """tomllib's message already ends with "(at line N, column M)"; say so plainly and name the file."""
    return f"{path}: not valid TOML, {error}; using the defaults for every setting"


def _suggestion(name: str) -> str:
    """ "did you mean 'interval'?" for a near miss, else the list of known keys."""
    close = difflib.get_close_matches(name, KEYS_BY_NAME, n=1)
    return f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(sorted(KEYS_BY_NAME))


def parse_config_text(text: str, path: Path) -> ConfigFile:
    """Check a settings file's text; never raises."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return ConfigFile(path, {}, [_syntax_error_message(path, error)])
    values: dict[str, Any] = {}
    warnings: list[str] = []
    for name, raw in document.items():
        key = KEYS_BY_NAME.get(name)
        if key is None:
            warnings.append(f"{path}: unknown key {name!r} ignored ({_suggestion(name)})")
            continue
        try:
            values[key.name] = key.parse(raw)
        except TypeError as error:
            warnings.append(f"{path}: {name} must be {error}, got {raw!r}; using the default")
        except InvalidValue as error:
            warnings.append(f"{path}: {name} {error}, got {raw!r}; using the default")
    return ConfigFile(path, values, warnings)


def load_config(path: Path | None = None, environ: Mapping[str, str] | None = None) -> ConfigFile:
    """Read the settings file (default location: `config_path()`); a missing file is no error,
    unless `$TFGPU_TUI_CONFIG` names it explicitly."""
    env = os.environ if environ is None else environ
    target = config_path(env) if path is None else path
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        explicit = path is not None or bool(env.get(CONFIG_ENV_VAR, "").strip())
        warnings = [f"{target}: settings file not found; using the defaults"] if explicit else []
        return ConfigFile(target, {}, warnings)
    except (OSError, UnicodeDecodeError) as error:
        return ConfigFile(target, {}, [f"{target}: cannot read the settings file ({error}); using defaults"])
    return parse_config_text(text, target)


def apply_config(settings: Settings, config: ConfigFile) -> Settings:
    """Copy the file's accepted values onto `settings` and record its warnings there."""
    for field, value in config.values.items():
        setattr(settings, field, value)
    if "log_path" in config.values:
        settings.log_path_given = True
    settings.config_warnings = list(config.warnings)
    return settings
