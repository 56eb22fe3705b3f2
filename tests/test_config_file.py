"""The settings file: where it is, what it may hold, and how bad input is reported (never raised)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfgpu_tui.cli import build_parser, main, settings_from_args
from tfgpu_tui.config_file import CONFIG_KEYS, apply_config, config_path, load_config, parse_config_text
from tfgpu_tui.settings import Settings


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The settings file the CLI will read (not yet written)."""
    path = tmp_path / "config.toml"
    monkeypatch.setenv("TFGPU_TUI_CONFIG", str(path))
    return path


def settings_for(argv: list[str]) -> Settings:
    return settings_from_args(build_parser().parse_args(argv))


def test_location_follows_xdg_and_override() -> None:
    home = Path.home()
    assert config_path({}) == home / ".config" / "tfgpu-tui" / "config.toml"
    assert config_path({"XDG_CONFIG_HOME": "/xdg"}) == Path("/xdg/tfgpu-tui/config.toml")
    assert config_path({"XDG_CONFIG_HOME": "relative/dir"}) == home / ".config" / "tfgpu-tui" / "config.toml"
    assert config_path({"XDG_CONFIG_HOME": "/xdg", "TFGPU_TUI_CONFIG": "/etc/t.toml"}) == Path("/etc/t.toml")


def test_missing_file_at_the_default_place_is_silent(tmp_path: Path) -> None:
    config = load_config(environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert config.values == {} and config.warnings == []


def test_missing_file_named_explicitly_is_reported(config_file: Path) -> None:
    settings = settings_for([])
    assert settings == Settings(config_warnings=settings.config_warnings)
    assert len(settings.config_warnings) == 1
    assert str(config_file) in settings.config_warnings[0] and "not found" in settings.config_warnings[0]


def test_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TFGPU_TUI_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert settings_for([]) == Settings()


FULL_FILE = """
# every key
interval = 2.5
readonly = true
python = "~/venvs/tf/bin/python"
log_path = "~/runs/train.log"
checkpoints_dir = "/data/ckpt"
kill_grace_seconds = 0
fallback_seconds = 30
stale_minutes = 45.5
memory_full_percent = 90
starvation_minutes = 5
starvation_util_percent = 40
starvation_cpu_percent = 150
memory_growth_percent = 85
probe_timeout_seconds = 300
probe_budget_mb = 20000
checkpoint_max_epochs = 3
checkpoint_max_minutes = 12.5
"""


def test_file_values_are_applied(config_file: Path) -> None:
    config_file.write_text(FULL_FILE)
    settings = settings_for([])
    home = Path.home()
    assert settings.config_warnings == []
    assert settings.interval == 2.5
    assert settings.readonly is True
    assert settings.python == str(home / "venvs/tf/bin/python")
    assert settings.log_path == home / "runs/train.log"
    assert settings.log_path_given is True
    assert settings.checkpoints_dir == Path("/data/ckpt")
    assert settings.kill_grace_seconds == 0
    assert settings.fallback_seconds == 30
    assert settings.stale_minutes == 45.5
    assert settings.memory_full_percent == 90
    assert (settings.starvation_minutes, settings.starvation_util_percent) == (5, 40)
    assert (settings.starvation_cpu_percent, settings.memory_growth_percent) == (150, 85)
    assert settings.probe_timeout_seconds == 300
    assert settings.probe_budget_mb == 20000
    assert (settings.checkpoint_max_epochs, settings.checkpoint_max_minutes) == (3, 12.5)


def test_every_documented_key_is_a_settings_field() -> None:
    fields = set(Settings.__dataclass_fields__)
    assert {key.name for key in CONFIG_KEYS} <= fields
    assert set(parse_config_text(FULL_FILE, Path("c.toml")).values) == {key.name for key in CONFIG_KEYS}


def test_command_line_overrides_the_file(config_file: Path, tmp_path: Path) -> None:
    config_file.write_text('interval = 5\nlog_path = "/from/file.log"\npython = "/file/python"\n')
    settings = settings_for(["--interval", "0.5", "--log", str(tmp_path / "cli.log"), "--python", "/cli/py"])
    assert settings.interval == 0.5
    assert settings.log_path == tmp_path / "cli.log"
    assert settings.python == "/cli/py"


def test_file_readonly_cannot_be_undone_but_cli_readonly_adds(config_file: Path) -> None:
    config_file.write_text("readonly = false\n")
    assert settings_for(["--readonly"]).readonly is True
    config_file.write_text("readonly = true\n")
    assert settings_for([]).readonly is True


def test_malformed_file_names_the_line_and_keeps_defaults(config_file: Path) -> None:
    config_file.write_text('interval = 3\nstale_minutes = 20\nlog_path = "unterminated\n')
    settings = settings_for([])
    assert settings == Settings(config_warnings=settings.config_warnings)
    [warning] = settings.config_warnings
    assert str(config_file) in warning and "line 3" in warning and "defaults" in warning


def test_unknown_key_is_named_and_the_rest_applies(config_file: Path) -> None:
    config_file.write_text("intervall = 3\nstale_minutes = 20\n")
    settings = settings_for([])
    assert settings.stale_minutes == 20 and settings.interval == Settings().interval
    [warning] = settings.config_warnings
    assert "unknown key 'intervall'" in warning and "did you mean 'interval'?" in warning


def test_unknown_key_far_from_any_lists_the_known_keys() -> None:
    [warning] = parse_config_text("colour = 'red'\n", Path("c.toml")).warnings
    assert "unknown key 'colour'" in warning
    assert all(key.name in warning.split("known keys:")[1] for key in CONFIG_KEYS)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('interval = "fast"', "interval must be a number, got 'fast'"),
        ("readonly = 1", "readonly must be true or false, got 1"),
        ("probe_budget_mb = 1.5", "probe_budget_mb must be a whole number, got 1.5"),
        ("log_path = 3", "log_path must be a non-empty string, got 3"),
        ("stale_minutes = true", "stale_minutes must be a number, got True"),
        ("interval = 0.1", "interval must be at least 0.25, got 0.1"),
        ("memory_full_percent = 120", "memory_full_percent must be between 0 (exclusive) and 100, got 120"),
        ("fallback_seconds = -5", "fallback_seconds must be greater than 0, got -5"),
        ("kill_grace_seconds = nan", "kill_grace_seconds must be a number, got nan"),
        ("[monitor]\nstale_minutes = 3", "unknown key 'monitor'"),
    ],
)
def test_wrong_values_are_named_and_defaults_kept(line: str, expected: str) -> None:
    config = parse_config_text(line + "\n", Path("/cfg/config.toml"))
    assert config.values == {}
    [warning] = config.warnings
    assert warning.startswith("/cfg/config.toml: ") and expected in warning


def test_apply_config_records_warnings_on_settings(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("stale_minutes = 5\nbogus = 1\n")
    settings = apply_config(Settings(), load_config(path))
    assert settings.stale_minutes == 5
    assert len(settings.config_warnings) == 1


def test_unreadable_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"interval = \xff\xfe\n")
    [warning] = load_config(path).warnings
    assert str(path) in warning and "defaults" in warning


def test_subcommands_print_the_warnings_to_stderr(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file.write_text("stale_minutes = 'ten'\n")
    assert main(["serve", "--host", "0.0.0.0"]) == 2  # refused before reading settings: no warning
    assert "stale_minutes" not in capsys.readouterr().err
    args = build_parser().parse_args(["serve"])
    settings_from_args(args)
    assert "tfgpu-tui: warning:" in capsys.readouterr().err


def test_the_dashboard_keeps_warnings_for_the_app(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file.write_text("stale_minutes = 'ten'\n")
    settings = settings_for([])
    assert capsys.readouterr().err == ""
    assert any("stale_minutes" in warning for warning in settings.config_warnings)
