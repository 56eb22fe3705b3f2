"""notify's core without a terminal: events from logs and snapshots, the ledger (once each, across
restarts), URLs shown without their secrets, delivery retried and reported once, the status file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.paths import FIXTURES
from tests.helpers.waiting import wait_for
from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.gpu.model import DeviceSample, NvmlUnavailable, Snapshot
from tfgpu_tui.notify.destinations import Destination, DestinationError, check, gather, known_schemes, shown
from tfgpu_tui.notify.events import DEFAULT_EVENTS, Event, EventKind, parse_events
from tfgpu_tui.notify.gpu_events import GpuEvents
from tfgpu_tui.notify.logs import LogSet
from tfgpu_tui.notify.state import Ledger
from tfgpu_tui.notify.status import clear_status, read_status, write_status
from tfgpu_tui.notify.training_events import TrainingEvents
from tfgpu_tui.proc.log_writers import LogWriter
from tfgpu_tui.training.checkpoints import CheckpointPolicy
from tfgpu_tui.training.follow import FileState
from tfgpu_tui.training.log_state import LogState
from tfgpu_tui.training.oversight import OversightState
from tfgpu_tui.training.watch import LogWatch

pytestmark = pytest.mark.e2e  # real child processes

FIXTURES = FIXTURES / "training"
BAR = "10/10 [==============================] - 1s 100ms/step"
FINISHED = (
    f"Epoch 1/2\n{BAR} - loss: 0.5000 - accuracy: 0.8000\n"
    f"Epoch 2/2\n{BAR} - loss: 0.2500 - accuracy: 0.9000\n"
)
RUNNING = f"Epoch 1/5\n{BAR} - loss: 0.5000\nEpoch 2/5\n"
NAN = f"Epoch 1/3\n{BAR} - loss: nan\nEpoch 2/3\n"
HOST = "gpu-box"


def reading(
    tmp_path: Path,
    text: str,
    idle: float = 0.0,
    writer: LogWriter | None = None,
    warning: str = "",
) -> LogState:
    path = tmp_path / "train.log"
    path.write_text(text)
    watch = LogWatch(path)
    watch.read_all()
    watch.close()
    around = OversightState(writer, None, 0, (tmp_path,), warning, True)
    return LogState.judged(path, watch.run.snapshot(), FileState.OPEN, idle, around)


def kinds(events: list[Event]) -> list[EventKind]:
    return [event.kind for event in events]


ALIVE = LogWriter(4242, "python train.py", 1.0, True)
GONE = LogWriter(4242, "python train.py", 1.0, False)


def test_a_finished_run_says_its_final_epoch_metrics_and_wall_time(tmp_path: Path) -> None:
    [event] = TrainingEvents(HOST, 600).evaluate(reading(tmp_path, FINISHED, writer=GONE))
    assert event.kind is EventKind.FINISHED
    assert "epoch 2/2" in event.message and "loss 0.25" in event.message and "accuracy 0.9" in event.message
    assert "Wall time 2s" in event.message
    assert "PID 4242" in event.body() and "gpu-box" in event.title and str(tmp_path) in event.subject


def test_an_oom_traceback_is_a_crash_with_the_readers_fix(tmp_path: Path) -> None:
    text = (FIXTURES / "keras3_oom_traceback.log").read_text(encoding="utf-8")
    events = TrainingEvents(HOST, 600).evaluate(reading(tmp_path, text, idle=10_000, writer=GONE))
    assert kinds(events) == [EventKind.CRASHED]  # neither stalled nor "writer died": the log says why
    assert "ran out of GPU memory" in events[0].message and "batch" in events[0].fix.lower()


def test_nan_loss(tmp_path: Path) -> None:
    events = TrainingEvents(HOST, 600).evaluate(reading(tmp_path, NAN, writer=ALIVE))
    assert kinds(events) == [EventKind.NAN_LOSS] and "nan" in events[0].message


def test_stalled_only_while_the_writer_lives_and_past_the_threshold(tmp_path: Path) -> None:
    rules = TrainingEvents(HOST, 120)
    assert rules.evaluate(reading(tmp_path, RUNNING, idle=119, writer=ALIVE)) == []
    [stalled] = rules.evaluate(reading(tmp_path, RUNNING, idle=121, writer=ALIVE))
    assert stalled.kind is EventKind.STALLED and "PID 4242" in stalled.message
    [died] = rules.evaluate(reading(tmp_path, RUNNING, idle=5, writer=GONE))
    assert died.kind is EventKind.WRITER_DIED and "epoch 2/5" in died.message


def test_no_checkpoint_is_an_event_when_the_reader_warns(tmp_path: Path) -> None:
    warned = reading(tmp_path, RUNNING, writer=ALIVE, warning="5 epochs since the last checkpoint")
    [event] = TrainingEvents(HOST, 600).evaluate(warned)
    assert event.kind is EventKind.NO_CHECKPOINT and "ModelCheckpoint" in event.fix


def event(key: str) -> Event:
    return Event(EventKind.STALLED, key, HOST, "Log x", "m")


def test_the_ledger_sends_once_again_after_clearing_and_not_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "state" / "notify.json"
    ledger = Ledger(path)
    assert ledger.due([event("a")]) == [event("a")]
    ledger.mark_sent([event("a")])
    ledger.save()
    assert ledger.due([event("a")]) == []
    assert Ledger(path).due([event("a")]) == []  # a restart while it holds: no repeat
    assert ledger.due([]) == []  # cleared
    assert ledger.due([event("a")]) == [event("a")]  # and came back
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_restarted_ledger_keeps_its_keys_until_the_conditions_had_time_to_show(tmp_path: Path) -> None:
    path = tmp_path / "notify.json"
    first = Ledger(path)
    first.mark_sent([event("idle")])
    first.save()
    now = [1000.0]
    restarted = Ledger(path, settle_seconds=60, clock=lambda: now[0])
    assert restarted.due([]) == [] and "idle" in restarted.sent  # not yet known: kept
    assert restarted.due([event("idle")]) == []
    now[0] += 61
    restarted.due([])
    assert "idle" not in restarted.sent


def test_a_corrupt_state_file_is_said_and_started_afresh(tmp_path: Path) -> None:
    path = tmp_path / "notify.json"
    path.write_text("{not json")
    ledger = Ledger(path)
    assert ledger.sent == {} and "could not be read" in ledger.load_problem


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("json://127.0.0.1:8080/hook/s3cret", "json://127.0.0.1:8080/hook/…"),
        (
            "jsons://ana:pa55@hooks.example.org/notify/alerts?token=s3cret",
            "jsons://hooks.example.org/notify/alerts",
        ),
        ("json://[::1]:9000/a-b/aaaaaaaaaaaaaaaaaaaaaaaaa", "json://[::1]:9000/a-b/…"),
        ("mailtos://ana:pa55word@smtp.example.org:465?to=ana@example.org", "mailtos://smtp.example.org:465"),
        ("tgram://123456789:AAHsecretTOKEN/987654", "tgram://(token hidden)"),
        ("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ", "slack://(token hidden)"),
        ("ntfys://ntfy.sh/my-private-topic", "ntfys://ntfy.sh"),
        ("dingtalk://secrettoken/", "dingtalk://(token hidden)"),
        ("no scheme at all", "a URL without a scheme://"),
    ],
)
def test_a_url_is_shown_by_scheme_host_port_and_plain_path_only(url: str, expected: str) -> None:
    assert shown(url) == expected
    assert expected in repr(Destination(url)) and "s3cret" not in repr(Destination(url))


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ntfy.sh/topic-s3cret", "no scheme://"),
        ("nosuch://user:s3cret@example.org", "unknown scheme 'nosuch'"),
        ("tgram://s3cret", "malformed for tgram://"),
        ("json://127.0.0.1/s3cret\x1b[2J", "control characters"),
    ],
)
def test_unusable_urls_are_refused_without_their_secret(url: str, words: str) -> None:
    with pytest.raises(DestinationError) as raised:
        check(url, known_schemes())
    assert words in str(raised.value) and "s3cret" not in str(raised.value)


def test_urls_come_from_options_a_file_the_environment_and_the_settings(tmp_path: Path) -> None:
    url_file = tmp_path / "urls"
    url_file.write_text("# mine\nntfys://ntfy.sh/a\n\njson://127.0.0.1/b\n")
    urls = gather(["slack://x/y/z"], url_file, ("ntfys://ntfy.sh/a",), {"TFGPU_TUI_NOTIFY": "tgram://1:2/3"})
    assert urls == ["slack://x/y/z", "ntfys://ntfy.sh/a", "json://127.0.0.1/b", "tgram://1:2/3"]
    with pytest.raises(DestinationError, match="not a regular file|directory"):
        gather([], tmp_path, (), {})


def test_parse_events() -> None:
    assert parse_events(["finished", " NaN ", "finished"]) == (EventKind.FINISHED, EventKind.NAN_LOSS)
    assert len(parse_events(["all"])) == len(EventKind)
    with pytest.raises(ValueError, match="unknown event 'oops'"):
        parse_events(["oops"])
    assert EventKind.GPU_IDLE in DEFAULT_EVENTS and EventKind.MEMORY_FULL not in DEFAULT_EVENTS


def snapshot(when: float, util: float | None = 0.0, alerts: list[Alert] | None = None) -> Snapshot:
    device = DeviceSample(0, "NVIDIA H200", util, 500.0, 143771.0, 40, 80.0, 700.0, None, 1980, 0)
    return Snapshot(when, False, None, None, [device], [], None, alerts or [])


def test_gpu_idle_after_the_threshold_unless_a_log_grew(tmp_path: Path) -> None:
    gpus = GpuEvents(HOST, idle_seconds=60)
    assert gpus.evaluate(snapshot(1000.0), None) == []
    [idle] = gpus.evaluate(snapshot(1061.0), None)
    assert idle.kind is EventKind.GPU_IDLE and "GPU 0 (NVIDIA H200)" in idle.message
    assert gpus.evaluate(snapshot(1062.0), training_since=1030.0) == []  # a log grew 32 s ago
    assert gpus.evaluate(snapshot(1063.0, util=40.0), None) == []
    assert gpus.evaluate(snapshot(1100.0), None) == []  # the clock restarts after work


def test_the_monitors_alerts_become_events_and_advice_does_not() -> None:
    alerts = [
        Alert("stale_vram", Severity.WARNING, "PID 7 has held 20 GiB", "kill it", "PID 7"),
        Alert("memory_growth_off", Severity.INFO, "advice", "", "PID 8"),
        Alert("gpu_lost", Severity.CRITICAL, "GPU 0 has fallen off the bus", "reboot", "GPU 0"),
    ]
    events = GpuEvents(HOST, 60).evaluate(snapshot(1.0, util=50.0, alerts=alerts), None)
    assert [(e.kind, e.key) for e in events] == [
        (EventKind.STALE_KERNEL, "stale_kernel:PID 7"),
        (EventKind.GPU_LOST, "gpu_lost:GPU 0"),
    ]
    assert events[0].fix == "kill it"


def test_nvml_going_away_after_gpus_were_seen_is_a_lost_gpu() -> None:
    gpus = GpuEvents(HOST, 60)
    error = NvmlUnavailable("unknown", "NVML: GPU is lost", "")
    gone = Snapshot(2.0, False, error, None, [], [], None, [])
    assert gpus.evaluate(gone, None) == []  # never had GPUs: nothing lost
    gpus.evaluate(snapshot(1.0, util=50.0), None)
    assert kinds(gpus.evaluate(gone, None)) == [EventKind.GPU_LOST]


def test_a_log_that_rotates_is_said_once_and_followed(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(RUNNING)
    logs = LogSet([path], CheckpointPolicy(), discover=lambda: [])
    logs.read()
    path.rename(tmp_path / "train.log.1")
    path.write_text(FINISHED)
    notices: list[str] = []

    def rotated() -> bool:
        notices.extend(logs.read()[1])
        return any("rotated" in notice for notice in notices)

    wait_for(rotated)
    [reading] = logs.read()[0]
    assert reading.run.current.finished
    logs.close()


def test_followed_log_reads_the_whole_file_before_judging(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("x" * 300_000 + "\n" + FINISHED)  # longer than the follower's first tail
    logs = LogSet([path], CheckpointPolicy(), discover=lambda: [])
    [state] = logs.read()[0]
    assert state.run.finish_reason() is not None
    logs.close()


def test_the_status_file_names_schemes_and_goes_with_its_process(tmp_path: Path) -> None:
    path = tmp_path / "run" / "notify.json"
    status = write_status(path, ["ntfys", "slack", "ntfys"])
    assert read_status(path) == status and status.indicator() == "notify → ntfys, slack"
    assert "://" not in path.read_text()
    clear_status(path, status)
    assert not path.exists() and read_status(path) is None
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"pid": os.getpid(), "create_time": 1.0, "schemes": ["ntfy"]}))
    assert read_status(path) is None  # a PID that is not that process any more


def test_without_log_options_the_running_jobs_logs_are_found_and_kept(tmp_path: Path) -> None:
    from tfgpu_tui.proc.log_writers import LogCandidate

    path = tmp_path / "train.log"
    path.write_text(RUNNING)
    running = [LogCandidate(os.getpid(), "python train.py", path, "stdout")]
    now = [0.0]
    logs = LogSet([], CheckpointPolicy(), discover=lambda: list(running), clock=lambda: now[0])
    readings, notices = logs.read()
    assert [r.path for r in readings] == [path] and notices == [
        f"following {path} (PID {os.getpid()}'s stdout)"
    ]
    running.clear()  # the job ended: its log is still read, so that its end is seen
    now[0] += 60
    assert [r.path for r in logs.read()[0]] == [path]
    logs.close()


def test_notify_never_imports_tensorflow_and_the_header_never_imports_apprise() -> None:
    import subprocess
    import sys

    def loaded(code: str) -> list[str]:
        probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        return json.loads(done.stdout.splitlines()[-1])

    notify = loaded(
        "import tfgpu_tui.commands.notify, tfgpu_tui.notify.watcher, tfgpu_tui.notify.delivery\n"
        "from tfgpu_tui.notify.destinations import check, known_schemes\n"
        "check('json://127.0.0.1/x', known_schemes())"
    )
    assert "apprise" in notify and not [m for m in notify if m.startswith(("tensorflow", "keras"))]
    assert not [m for m in loaded("import tfgpu_tui.ui.header") if m.startswith("apprise")]
