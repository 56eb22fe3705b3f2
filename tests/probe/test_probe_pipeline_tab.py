"""The Batch probe tab's Pipeline field: Start times the pipeline instead of searching (a stand-in child, no
TensorFlow), a malformed spec, --demo or a session without --allow-code is refused, cancel ends the child."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from textual.widgets import Button, Input, Static

from tests.helpers.pipeline_report import HEALTHY_REPORT
from tests.helpers.waiting import wait_until
from tfgpu_tui.probe import pipeline_runner
from tfgpu_tui.probe.pipeline_worker import PHASE_MARKER
from tfgpu_tui.probe.worker import RESULT_MARKER
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.app import TfgpuApp
from tfgpu_tui.ui.batch_probe import BatchProbeTab


@pytest.fixture(autouse=True)
def no_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfgpu_tui.ui.interpreter import SharedInterpreter

    # the child's interpreter is chosen as the dashboard chooses it; no TensorFlow job of the machine's
    monkeypatch.setattr(SharedInterpreter, "find_jobs", staticmethod(list))


def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """Replace the pipeline probe's child with a script that runs `body`."""
    script = tmp_path / "stand_in.py"
    script.write_text("import json, sys, time\n" + textwrap.dedent(body))
    monkeypatch.setattr(pipeline_runner, "PIPELINE_SCRIPT", script)


def text_of(app: TfgpuApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def start_pipeline(app: TfgpuApp, pilot, spec: str) -> BatchProbeTab:
    await pilot.pause()
    field = app.query_one("#probe-pipeline", Input)
    field.value = spec
    field.focus()
    await pilot.pause()
    await pilot.press("enter")
    return app.query_one(BatchProbeTab)


async def test_start_times_the_pipeline_and_shows_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in(tmp_path, monkeypatch, f"print({RESULT_MARKER!r} + json.dumps({HEALTHY_REPORT!r}))\n")
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(160, 45)) as pilot:
        tab = await start_pipeline(app, pilot, "mypipe.data:make")
        await wait_until(pilot, lambda: tab.pipeline_result is not None and not tab.running, timeout=60)
        summary = text_of(app, "#probe-summary")
        assert "Your pipeline delivers 100 samples/s; the model trains 1,000 samples/s at batch 8" in summary
        assert "waits about 90 % of the time" in summary and "num_parallel_calls" in summary
        assert "Done: mypipe.data:make" in text_of(app, "#probe-status")
        assert tab.result is None  # no batch search ran


async def test_a_child_that_fails_gives_one_line_and_an_alert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failure = {"status": "exception", "phase": "call", "type": "RuntimeError", "message": "no data here"}
    stand_in(tmp_path, monkeypatch, f"print({RESULT_MARKER!r} + json.dumps({failure!r}))\n")
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(160, 45)) as pilot:
        tab = await start_pipeline(app, pilot, "mypipe:make")
        await wait_until(pilot, lambda: tab.pipeline_result is not None and not tab.running, timeout=60)
        expected = "RuntimeError while calling mypipe:make: no data here"
        assert f"Pipeline probe stopped: {expected}" in text_of(app, "#probe-summary")

        def alerts() -> list:
            return [alert for alert in app.all_alerts if alert.kind == "probe_error"]

        await wait_until(pilot, alerts, timeout=60)  # the alert reaches the header through a message
        assert [alert.message for alert in alerts()] == [f"Batch probe: {expected}"]


@pytest.mark.parametrize(
    ("settings", "spec", "expected"),
    [
        (Settings(), "mypipe:make()", "cannot read the pipeline 'mypipe:make()'"),
        (Settings(), "../x:make", "dotted Python names only"),
        (Settings(least_privilege=True), "mypipe:make", "a pipeline function runs code on this machine"),
        (Settings(demo=True), "mypipe:make", "--demo simulates no TensorFlow"),
    ],
)
async def test_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Settings, spec: str, expected: str
) -> None:
    stand_in(tmp_path, monkeypatch, "raise SystemExit('must not run')\n")
    app = TfgpuApp(settings, initial_tab="probe")
    async with app.run_test(size=(160, 45)) as pilot:
        tab = await start_pipeline(app, pilot, spec)
        await pilot.pause()
        assert expected in text_of(app, "#probe-status")
        assert not tab.running and tab.pipeline_result is None


async def test_cancel_ends_the_pipeline_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = tmp_path / "started"
    body = f"open({str(started)!r}, 'w').close()\nprint({PHASE_MARKER!r} + 'first_batch', flush=True)\n"
    stand_in(tmp_path, monkeypatch, body + "time.sleep(120)\n")
    app = TfgpuApp(Settings(), initial_tab="probe")
    async with app.run_test(size=(160, 45)) as pilot:
        tab = await start_pipeline(app, pilot, "mypipe:make")
        await wait_until(pilot, started.exists, timeout=60)
        assert app.query_one("#probe-start", Button).disabled is True
        await pilot.press("escape")
        await wait_until(pilot, lambda: not tab.running, timeout=60)
        assert "Cancelled" in text_of(app, "#probe-status")
        assert "Pipeline probe cancelled." in text_of(app, "#probe-summary")
        assert app.query_one("#probe-start", Button).disabled is False
