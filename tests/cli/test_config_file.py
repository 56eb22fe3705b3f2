"""The settings file: where it is, what it may hold, and how bad input is reported (never raised)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tfgpu_tui.cli import build_parser, main
from tfgpu_tui.config_file import CONFIG_KEYS, apply_config, config_path, load_config, parse_config_text
from tfgpu_tui.options import settings_from_args
from tfgpu_tui.settings import Settings


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The settings file the CLI will read (not yet written)."""
    path = tmp_path / "config.toml"
    monkeypatch.setenv("TFGPU_TUI_CONFIG", str(path))
    return path


def settings_for(argv: list[str]) -> Settings:
    return settings_from_args(build_parser().parse_args(argv))


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG base directories are Linux's")
def test_location_follows_xdg_and_override(monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path.home()
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert config_path() == home / ".config" / "tfgpu-tui" / "config.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", "/xdg")
    assert config_path() == Path("/xdg/tfgpu-tui/config.toml")
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")  # the spec: a relative value is ignored
    assert config_path() == home / ".config" / "tfgpu-tui" / "config.toml"
    monkeypatch.setenv("TFGPU_TUI_CONFIG", "/etc/t.toml")
    assert config_path() == Path("/etc/t.toml")


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG base directories are Linux's")
def test_notify_files_follow_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tfgpu_tui.notify.state import default_state_path
    from tfgpu_tui.notify.status import status_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    assert default_state_path() == tmp_path / "state" / "tfgpu-tui" / "notify-state.json"
    assert status_path() == tmp_path / "run" / "tfgpu-tui" / "notify.json"
    monkeypatch.setenv("XDG_STATE_HOME", "relative")
    assert default_state_path() == Path.home() / ".local" / "state" / "tfgpu-tui" / "notify-state.json"


def test_missing_file_at_the_default_place_is_silent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    config = load_config()
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
efficiency_minutes = 3
busy_util_percent = 85
sm_active_low_percent = 40
tensor_idle_percent = 2
throttled_percent = 10
over_provisioned_minutes = 20
over_provisioned_percent = 30
env_check_timeout_seconds = 300
batch_budget_mb = 20000
least_privilege = true
allow_kill = true
allow_code = true
log_root = "~/runs"
checkpoint_max_epochs = 3
checkpoint_max_minutes = 12.5
notify_urls = ["ntfys://ntfy.sh/topic"]
notify_events = ["finished", "gpu_lost"]
notify_stall_minutes = 20
notify_idle_minutes = 45
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
    assert settings.env_check_timeout_seconds == 300
    assert settings.batch_budget_mb == 20000
    assert settings.notify_urls == ("ntfys://ntfy.sh/topic",)
    assert settings.notify_events == ("finished", "gpu_lost")
    assert (settings.notify_stall_minutes, settings.notify_idle_minutes) == (20, 45)
    assert (settings.least_privilege, settings.allow_kill, settings.allow_code) == (True, True, True)
    assert settings.log_root == home / "runs"
    assert (settings.checkpoint_max_epochs, settings.checkpoint_max_minutes) == (3, 12.5)
    assert (settings.efficiency_minutes, settings.busy_util_percent, settings.sm_active_low_percent) == (
        3,
        85,
        40,
    )
    assert (settings.tensor_idle_percent, settings.throttled_percent) == (2, 10)
    assert (settings.over_provisioned_minutes, settings.over_provisioned_percent) == (20, 30)


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
        ("batch_budget_mb = 1.5", "batch_budget_mb must be a whole number, got 1.5"),
        ("log_path = 3", "log_path must be a non-empty string, got 3"),
        ("stale_minutes = true", "stale_minutes must be a number, got True"),
        ("interval = 0.1", "interval must be between 0.25 and 3600, got 0.1; using the default 1.0"),
        ("memory_full_percent = 120", "memory_full_percent must be more than 0 and at most 100, got 120"),
        ("fallback_seconds = -5", "fallback_seconds must be between 1 and 86400, got -5"),
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


# Every numeric key, just outside its range (the examples first): a warning naming the key and the
# default used, the default kept, no exception.
OUT_OF_RANGE = [
    ("interval", "1e10"),
    ("env_check_timeout_seconds", "1e308"),
    ("kill_grace_seconds", "3e6"),
    ("interval", "0.2"),
    ("kill_grace_seconds", "-1"),
    ("fallback_seconds", "0.5"),
    ("fallback_seconds", "86401"),
    ("stale_minutes", "0"),
    ("stale_minutes", "1e9"),
    ("memory_full_percent", "0"),
    ("starvation_minutes", "-2"),
    ("starvation_util_percent", "100.5"),
    ("starvation_cpu_percent", "0"),
    ("starvation_cpu_percent", "1e7"),
    ("memory_growth_percent", "101"),
    ("env_check_timeout_seconds", "0.5"),
    ("checkpoint_max_epochs", "0"),
    ("checkpoint_max_epochs", "10000000"),
    ("checkpoint_max_minutes", "1e12"),
    ("batch_budget_mb", "0"),
    ("batch_budget_mb", "100000000000"),
    ("interval", "inf"),
    ("kill_grace_seconds", "nan"),
    ("notify_stall_minutes", "0"),
    ("notify_idle_minutes", "1e9"),
    ("efficiency_minutes", "0"),
    ("busy_util_percent", "101"),
    ("sm_active_low_percent", "0"),
    ("tensor_idle_percent", "-1"),
    ("throttled_percent", "100.5"),
    ("over_provisioned_minutes", "1e9"),
    ("over_provisioned_percent", "0"),
]


@pytest.mark.parametrize(("key", "value"), OUT_OF_RANGE)
def test_out_of_range_values_warn_and_keep_the_default(
    key: str, value: str, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    default = "none" if getattr(Settings(), key) is None else str(getattr(Settings(), key))
    config_file.write_text(f"{key} = {value}\n")
    settings = settings_for(["gpus"])  # a subcommand: warnings go to stderr too
    assert getattr(settings, key) == getattr(Settings(), key)
    [warning] = settings.config_warnings
    assert warning.startswith(f"{config_file}: {key} must be ") and warning.endswith(
        f"using the default {default}"
    )
    assert "Traceback" not in capsys.readouterr().err


def test_every_numeric_key_has_an_out_of_range_case() -> None:
    numeric = {key.name for key in CONFIG_KEYS if isinstance(getattr(Settings(), key.name), (int, float))}
    numeric -= {key.name for key in CONFIG_KEYS if isinstance(getattr(Settings(), key.name), bool)}
    assert numeric | {"batch_budget_mb"} == {key for key, _ in OUT_OF_RANGE}


def test_old_key_names_still_work_with_a_deprecation_warning(config_file: Path) -> None:
    config_file.write_text("probe_timeout_seconds = 30\nprobe_budget_mb = 900\n")
    settings = settings_for([])
    assert (settings.env_check_timeout_seconds, settings.batch_budget_mb) == (30, 900)
    assert settings.config_warnings == [
        f"{config_file}: probe_timeout_seconds is deprecated, call it env_check_timeout_seconds "
        "(its value is used)",
        f"{config_file}: probe_budget_mb is deprecated, call it batch_budget_mb (its value is used)",
    ]
    config_file.write_text("probe_budget_mb = 900\nbatch_budget_mb = 800\n")
    settings = settings_for([])
    assert settings.batch_budget_mb == 800 and "also set; ignored" in settings.config_warnings[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--interval", "1e10"], "--interval: must be between 0.25 and 3600 seconds"),
        (["--interval", "nan"], "--interval: must be between 0.25 and 3600 seconds"),
        (["check", "--timeout", "1e308"], "--timeout: must be between 1 and 86400 seconds"),
        (["check", "--timeout", "0"], "--timeout: must be between 1 and 86400 seconds"),
        (["probe", "--budget-mb", "nan"], "--budget-mb: not a finite number of MB: 'nan'"),
        (["probe", "--budget-mb", "inf"], "--budget-mb: not a finite number of MB: 'inf'"),
        (["probe", "--timeout", "inf"], "--timeout: must be between 1 and 86400 seconds"),
        (["serve", "--max-sessions", "0"], "--max-sessions: must be between 1 and 64"),
    ],
)
def test_out_of_range_options_are_refused_by_name(argv: list[str], message: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


def test_a_bad_notify_urls_value_is_never_repeated_in_the_warning(config_file: Path) -> None:
    config_file.write_text(
        'notify_urls = "tgram://123456:SECRETTOKEN/42"\nnotify_events = ["finished", "nope"]\n'
    )
    settings = settings_for([])
    assert settings.notify_urls == ()
    assert settings.notify_events == Settings().notify_events
    assert len(settings.config_warnings) == 2
    assert "SECRETTOKEN" not in "\n".join(settings.config_warnings)
    assert "unknown event 'nope'" in settings.config_warnings[1]
