"""`tfgpu-tui notify` as a user runs it: one clear line and exit 2 for an unusable configuration, --test
per URL, --json events, SIGTERM/SIGHUP end it with one line, and no URL secret in anything it prints."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.nohup_child import start_nohup
from tests.helpers.notify_receiver import receiving
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e  # real child processes

TOKEN = "s3cr3t-T0KEN"
FINISHED = (
    "Epoch 1/2\n10/10 [==============================] - 1s 100ms/step - loss: 0.5000\n"
    "Epoch 2/2\n10/10 [==============================] - 1s 100ms/step - loss: 0.2500\n"
)


def environment(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path / "run"), XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("TFGPU_TUI_NOTIFY", None)
    return env


def notify(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "tfgpu_tui", "notify", *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=env or environment(tmp_path), timeout=120, check=False
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--to", f"ntfy.sh/{TOKEN}"], "no scheme://"),
        (["--to", f"nosuch://user:{TOKEN}@example.org"], "unknown scheme 'nosuch'"),
        (["--to", f"tgram://{TOKEN}"], "malformed for tgram://"),
        ([], "nowhere to send"),
        (["--json", "--events", "finished,oops"], "unknown event 'oops'"),
        (["--json", "--state", "/proc/1/notify-state.json"], "cannot write the state file"),
        (["--json", "--log", "/dev/null"], "--log"),
    ],
)
def test_an_unusable_configuration_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], words: str
) -> None:
    result = notify(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and words in result.stderr, result.stderr
    assert TOKEN not in result.stderr + result.stdout and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('notify_events = ["finished", "nope"]', "notify_events unknown event 'nope'"),
        ("notify_stall_minutes = -3", "notify_stall_minutes"),
        (f'notify_urls = "json://127.0.0.1/{TOKEN}"', "notify_urls must be a list"),
    ],
)
def test_a_refused_notify_setting_in_the_settings_file_is_one_line_and_exit_2(
    tmp_path: Path, line: str, words: str
) -> None:
    """notify does not send other events, or nowhere, in place of what the file asked for."""
    config = tmp_path / "config.toml"
    config.write_text(f"{line}\nunknown_key = 1\n")
    result = notify(tmp_path, "--json", env=dict(environment(tmp_path), TFGPU_TUI_CONFIG=str(config)))
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and words in result.stderr and "default" not in result.stderr
    assert TOKEN not in result.stderr + result.stdout and "Traceback" not in result.stderr


def test_a_refused_setting_that_an_option_replaces_does_not_stop_notify(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('notify_events = ["nope"]\nnotify_stall_minutes = -3\n')
    env = dict(environment(tmp_path), TFGPU_TUI_CONFIG=str(config))
    result = notify(tmp_path, "--json", "--events", "finished", "--stall-minutes", "5", "--to", "x", env=env)
    *warnings, last = result.stderr.splitlines()
    assert result.returncode == 2 and "no scheme://" in last  # past the settings, stopped at --to
    assert len(warnings) == 2 and all(line.startswith("tfgpu-tui: warning: ") for line in warnings)


def test_test_names_each_url_and_says_why_it_failed(tmp_path: Path) -> None:
    """Three URLs on one host: a receiver that takes it, one that answers HTTP 500, a closed port. Each line
    names its URL (scheme, host, port, path; the token hidden) and the reason."""
    url_file = tmp_path / "urls"
    port = closed_port()
    dead = f"json://127.0.0.1:{port}/other/{TOKEN}"
    with receiving(TOKEN) as receiver, receiving(TOKEN, status=500) as failing:
        url_file.write_text(f"{receiver.url}\n{failing.url}\n{dead}\n")
        result = notify(tmp_path, "--test", "--to-file", str(url_file), "--hostname", "box")
        assert [m["title"] for m in receiver.messages] == ["tfgpu-tui notify test from box"]
        good, bad = receiver.url.split(":")[2].split("/")[0], failing.url.split(":")[2].split("/")[0]
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"URL 1 of 3, json://127.0.0.1:{good}/hook/…: delivered",
        f"URL 2 of 3, json://127.0.0.1:{bad}/hook/…: NOT delivered: the service answered HTTP 500",
        f"URL 3 of 3, json://127.0.0.1:{port}/other/…: NOT delivered: the connection was refused "
        "(nothing listens on that port)",
    ]
    assert TOKEN not in result.stdout + result.stderr


def test_test_says_when_a_host_name_does_not_resolve(tmp_path: Path) -> None:
    result = notify(tmp_path, "--test", "--to", f"json://no-such-host.invalid/hook/{TOKEN}")
    assert result.returncode == 1
    assert (
        result.stdout == "json://no-such-host.invalid/hook/…: NOT delivered: the host name did not resolve\n"
    )


def test_the_url_from_the_environment_works_and_help_shows_no_url(tmp_path: Path) -> None:
    with receiving(TOKEN) as receiver:
        env = dict(environment(tmp_path), TFGPU_TUI_NOTIFY=receiver.url)
        result = notify(tmp_path, "--test", env=env)
        assert result.returncode == 0 and len(receiver.messages) == 1
        helped = notify(tmp_path, "--help", env=env)
    assert "--to-file" in helped.stdout and TOKEN not in helped.stdout + result.stdout + result.stderr


def test_the_url_from_the_settings_file_works_and_is_never_printed(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    with receiving(TOKEN) as receiver:
        config.write_text(f'notify_urls = ["{receiver.url}"]\n')
        env = dict(environment(tmp_path), TFGPU_TUI_CONFIG=str(config))
        result = notify(tmp_path, "--test", "--hostname", "box", env=env)
        assert result.returncode == 0 and receiver.titles() == ["tfgpu-tui notify test from box"]
    assert result.stdout == f"json://127.0.0.1:{receiver.url.split(':')[2].split('/')[0]}/hook/…: delivered\n"
    assert TOKEN not in result.stdout + result.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_json_events_once_and_a_signal_ends_it_with_one_line(tmp_path: Path, signum: signal.Signals) -> None:
    log = tmp_path / "train.log"
    log.write_text(FINISHED)
    state = tmp_path / "notify-state.json"
    with receiving(TOKEN) as receiver:
        args = ["--json", "--log", str(log), "--state", str(state), "--interval", "0.5", "--to", receiver.url]
        command = [sys.executable, "-m", "tfgpu_tui", "notify", *args]
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(tmp_path)
        )
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            wait_for(lambda: receiver.messages, timeout=60)
            status = json.loads((tmp_path / "run" / "tfgpu-tui" / "notify.json").read_text())
            child.send_signal(signum)
            out, err = child.communicate(timeout=60)
        finally:
            child.kill()
            child.wait()
    event = json.loads(line)
    assert event["event"] == "finished" and "epoch 2/2" in event["message"] and out == ""
    assert [m["title"] for m in receiver.messages] == [event["title"]]
    assert status["schemes"] == ["json"] and status["pid"] == child.pid
    assert child.returncode == 0
    assert err.splitlines()[-1] == f"tfgpu-tui notify: stopped by {signum.name}; 1 event(s) sent this run"
    assert not (tmp_path / "run" / "tfgpu-tui" / "notify.json").exists()
    assert TOKEN not in line + out + err + state.read_text()


def lines_with(text: str, words: str) -> list[str]:
    return [line for line in text.splitlines() if words in line]


def test_a_failing_service_a_deleted_log_and_an_unwritable_state_are_one_line_each(tmp_path: Path) -> None:
    """While a destination cannot be reached the watch goes on (the other destination gets each event) and the
    failure is said once; once the service is up its messages arrive through the retries. A deleted log and a
    state file that cannot be written any more are one line each; nothing stops the watch."""
    log = tmp_path / "train.log"
    log.write_text(FINISHED)
    state_dir = tmp_path / "state"
    err = tmp_path / "notify.err"
    late_port = closed_port()
    late_url = f"json://localhost:{late_port}/hook/{TOKEN}"  # shown as json://localhost:PORT/hook/…
    with receiving(TOKEN) as live:
        args = ["--json", "--log", str(log), "--state", str(state_dir / "state.json"), "--interval", "0.5"]
        args += ["--to", live.url, "--to", late_url]
        with err.open("w") as stderr:
            child = subprocess.Popen(
                [sys.executable, "-m", "tfgpu_tui", "notify", *args],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=environment(tmp_path),
            )
        try:
            wait_for(lambda: len(live.messages) == 1, timeout=60)
            shown = f"delivery to json://localhost:{late_port}/hook/… failed (the connection was refused"
            wait_for(lambda: lines_with(err.read_text(), shown), timeout=60)
            with log.open("a") as more:  # a second run finishes while the other service is still down
                more.write(FINISHED)
            wait_for(lambda: len(live.messages) == 2, timeout=60)
            with receiving(TOKEN, port=late_port) as late:  # the service comes up: the retries reach it
                wait_for(lambda: len(late.messages) == 2, timeout=120)
                wait_for(lambda: lines_with(err.read_text(), "works again"), timeout=60)
                log.unlink()
                wait_for(lambda: lines_with(err.read_text(), "was deleted"), timeout=60)
                state_dir.rename(tmp_path / "state.moved")
                state_dir.write_text("")  # a file where the state file's folder was: it cannot be written
                log.write_text(FINISHED)  # the log comes back with a third finished run
                wait_for(lambda: len(live.messages) == 3 and len(late.messages) == 3, timeout=60)
                wait_for(lambda: lines_with(err.read_text(), "cannot write the state file"), timeout=60)
                child.send_signal(signal.SIGTERM)
                assert child.wait(timeout=60) == 0
                late_titles = late.titles()
        finally:
            child.kill()
            child.wait()
        titles = live.titles()
    said = err.read_text()
    assert titles == late_titles and len(set(titles)) == 1, (titles, late_titles)
    for words in ("failed", "works again", "was deleted", "cannot write the state file"):
        assert len(lines_with(said, words)) == 1, said
    assert f"json://localhost:{late_port}/hook/… failed" in said and "the watch goes on" in said
    assert said.splitlines()[-1].endswith("stopped by SIGTERM; 3 event(s) sent this run"), said
    assert TOKEN not in said + (tmp_path / "state.moved" / "state.json").read_text()


SILENT_CHILD = (
    "import sys, time\n"
    'print("Epoch 1/5\\n10/10 [==============================] - 1s 100ms/step - loss: 0.5000\\nEpoch 2/5", '
    "flush=True)\n"
    "time.sleep(600)\n"
)


@contextlib.contextmanager
def notify_running(tmp_path: Path, out: Path, args: list[str]) -> Iterator[subprocess.Popen]:
    """A notify process with these arguments, its stdout to `out`; killed on the way out if still running."""
    with out.open("w") as stdout:
        child = subprocess.Popen(
            [sys.executable, "-m", "tfgpu_tui", "notify", *args],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(tmp_path),
        )
    try:
        yield child
    finally:
        child.kill()
        child.wait()


@contextlib.contextmanager
def nohup_writer(tmp_path: Path, source: str, printed: str) -> Iterator[tuple[int, Path]]:
    """A real `nohup python child.py > train.log` running `source`, once its log shows `printed`: (its PID,
    the log); SIGKILLed after, if still there."""
    log = tmp_path / "train.log"
    (tmp_path / "child.py").write_text(source)
    pid = start_nohup(tmp_path / "child.py", log)
    try:
        wait_for(lambda: printed in log.read_text(), timeout=60)
        yield pid, log
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def watching(tmp_path: Path, log: Path, url: str, events: str) -> list[str]:
    """notify's arguments to watch `log` every 0.5 s and send `events` to `url`, as JSON lines."""
    state = str(tmp_path / "state.json")
    return [
        "--json",
        "--log",
        str(log),
        "--state",
        state,
        "--interval",
        "0.5",
        "--to",
        url,
        "--events",
        events,
    ]


def terminated(child: subprocess.Popen) -> str:
    """End a notify as `kill` does (SIGTERM); what it wrote on stderr."""
    child.send_signal(signal.SIGTERM)
    return child.communicate(timeout=60)[1]


def test_a_writer_killed_without_a_word_is_sent_once_after_its_stall(tmp_path: Path) -> None:
    """A real `nohup python child.py > train.log` mid-epoch: silent past --stall-minutes while alive
    (stalled, which also shows notify knows the writer), then SIGKILLed, which writes nothing to its log
    (writer died)."""
    out = tmp_path / "notify.out"
    with nohup_writer(tmp_path, SILENT_CHILD, "Epoch 2/5") as (pid, log), receiving(TOKEN) as receiver:
        args = watching(tmp_path, log, receiver.url, "stalled,writer_died") + ["--stall-minutes", "0.01"]
        with notify_running(tmp_path, out, args) as child:
            wait_for(lambda: len(receiver.messages) == 1, timeout=60)
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: len(receiver.messages) == 2, timeout=60)
            err = terminated(child)
        titles = receiver.titles()
    events = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["event"] for e in events] == ["stalled", "writer_died"], err
    assert titles == [e["title"] for e in events]
    assert f"Its writer (PID {pid}) is alive" in events[0]["message"]
    assert f"The training process (PID {pid})" in events[1]["message"] and "epoch 2/5" in events[1]["message"]
    assert "dmesg" in events[1]["fix"] and err.splitlines()[-1].endswith("2 event(s) sent this run")


NAN_CHILD = (
    "import sys, time\n"
    "for epoch in range(1, 8):\n"
    "    loss = 'nan' if epoch >= 3 else f'{1 / epoch:.4f}'\n"
    "    print(f'Epoch {epoch}/20')\n"
    "    print(f'10/10 [==============================] - 1s 100ms/step - loss: {loss}', flush=True)\n"
    "time.sleep(600)\n"
)


def test_a_nan_loss_and_no_checkpoint_are_sent_once_each_from_a_live_writer(tmp_path: Path) -> None:
    """A real `nohup python child.py > train.log` whose loss turns NaN at epoch 3 and that has run 7 epochs
    without writing a checkpoint (the default allows 5): both are sent, once each, while it goes on."""
    out = tmp_path / "notify.out"
    with nohup_writer(tmp_path, NAN_CHILD, "Epoch 7/20") as (pid, log), receiving(TOKEN) as receiver:
        args = watching(tmp_path, log, receiver.url, "nan,no_checkpoint,finished,crashed")
        with notify_running(tmp_path, out, args) as child:
            wait_for(lambda: len(receiver.messages) == 2, timeout=60)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=3)  # a few more rounds of the watch: nothing is sent again
            err = terminated(child)
        titles = receiver.titles()
    events = {e["event"]: e for e in map(json.loads, out.read_text().splitlines())}
    assert sorted(events) == ["nan", "no_checkpoint"] and len(titles) == 2, err
    assert all(f"PID {pid}" in event["subject"] for event in events.values())  # the run, by its writer
    assert "The loss is nan at epoch 3" in events["nan"]["message"]
    assert "learning rate" in events["nan"]["fix"]
    assert "7 epochs and no checkpoint has been written" in events["no_checkpoint"]["message"]
    assert "ModelCheckpoint" in events["no_checkpoint"]["fix"]
    assert err.splitlines()[-1].endswith("2 event(s) sent this run")
