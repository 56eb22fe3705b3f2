"""Ending a kernel the way Jupyter does (issue 30 item 7), with a real Jupyter server and real kernels holding
(scripted) GPU memory on fakenvml: Shut down, Restart, and a signal after which the server restarts its kernel
by itself. Core only (no Textual): the Sampler and gpu/kernel_actions.py, as the kill flow uses them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.helpers.notebook_server import JupyterServer
from tfgpu_tui.gpu.kernel_actions import (
    KernelAction,
    KernelServer,
    available_actions,
    end_process,
    find_server,
    run_kernel_action,
)
from tfgpu_tui.gpu.kill import KillResult
from tfgpu_tui.settings import Settings

HELD_MIB = 18432
BASE_MIB = 500
HANG_GUARD_SECONDS = 180.0  # the server's own restart, however loaded the machine: ends as soon as it is seen

MISSING = next((m for m in ("jupyter_server", "ipykernel") if importlib.util.find_spec(m) is None), None)
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} is not installed (pip install -e '.[test]')"),
]


def kernel_scenario(pid: int) -> str:
    """GPU 0 with BASE_MIB of its own, and HELD_MIB held by `pid` at 0 % SM."""
    return (
        f'device name="NVIDIA H200" total_mib=143771 base_used_mib={BASE_MIB} util=0\n'
        f"process gpu=0 pid={pid} used_mib={HELD_MIB} sm=0\n"
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("jupyter")
    env = {**os.environ, "JUPYTER_DATA_DIR": str(base / "data")}
    jupyter = JupyterServer(base, env, runtime=base / "runtime")
    yield jupyter
    jupyter.stop()


@pytest.fixture
def sampler_for(server: JupyterServer, scenario, monkeypatch: pytest.MonkeyPatch):
    """A notebook's kernel holding HELD_MIB on GPU 0; a Sampler (as the app's, inline lookups) and its row."""
    from tfgpu_tui.gpu.nvml import NvmlSource
    from tfgpu_tui.gpu.processes import HostInspector
    from tfgpu_tui.gpu.sampler import Sampler

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(server.runtime))
    made = []

    def make(notebook: str, settings: Settings | None = None):  # type: ignore[no-untyped-def]
        kernel_id = server.open_notebook(notebook)
        (pid,) = server.kernel_pids(kernel_id)
        scenario(kernel_scenario(pid))
        sampler = Sampler(
            settings or Settings(kill_grace_seconds=5), NvmlSource(), HostInspector(background=False)
        )
        made.append(sampler)
        row = next(r for r in sampler.sample().processes if r.pid == pid)
        return sampler, row, kernel_id

    yield make
    for sampler in made:
        sampler.close()


def test_shut_down_frees_the_memory_and_the_server_no_longer_lists_the_kernel(
    server: JupyterServer, sampler_for
) -> None:
    sampler, row, kernel_id = sampler_for("work/shutdown.ipynb")
    assert row.jupyter is not None and row.jupyter.notebook_path == "work/shutdown.ipynb"
    assert row.jupyter.server_url == server.url and row.jupyter.actions == ("shutdown", "restart")
    assert available_actions(row, sampler.settings) == (KernelAction.SHUTDOWN, KernelAction.RESTART)
    steps: list[str] = []
    outcome = end_process(sampler, row, KernelAction.SHUTDOWN, steps.append)
    assert outcome.result is KillResult.FREED, outcome.message
    assert (
        outcome.freed_mib == HELD_MIB and outcome.kernel_after == "shut_down" and outcome.signals_sent == ()
    )
    assert "shut down" in outcome.message and "no longer lists it" in outcome.message
    assert f"{HELD_MIB} MiB freed on GPU 0" in outcome.message
    assert any(server.url in step for step in steps)
    assert sampler.sample().devices[0].memory_used_mib == BASE_MIB
    assert kernel_id not in server.listed_kernels() and server.kernel_pids(kernel_id) == []


def test_restart_frees_the_memory_and_the_kernel_id_comes_back_with_a_new_pid(
    server: JupyterServer, sampler_for
) -> None:
    sampler, row, kernel_id = sampler_for("work/restart.ipynb")
    outcome = end_process(sampler, row, KernelAction.RESTART)
    assert outcome.result is KillResult.FREED, outcome.message
    assert outcome.freed_mib == HELD_MIB and outcome.kernel_after == "restarted"
    assert outcome.new_pid is not None and outcome.new_pid != row.pid
    assert server.kernel_pids(kernel_id) == [outcome.new_pid] and kernel_id in server.listed_kernels()
    assert f"new PID {outcome.new_pid}" in outcome.message and "notebook stays open" in outcome.message
    snapshot = sampler.sample()
    assert snapshot.devices[0].memory_used_mib == BASE_MIB and row.pid not in {
        r.pid for r in snapshot.processes
    }


def test_a_signal_reports_the_servers_own_restart(server: JupyterServer, sampler_for) -> None:
    sampler, row, kernel_id = sampler_for("work/signal.ipynb")
    outcome = end_process(sampler, row, signal.SIGKILL, restart_watch_seconds=HANG_GUARD_SECONDS)
    assert outcome.result is KillResult.FREED and outcome.signals_sent == ("SIGKILL",), outcome.message
    assert outcome.kernel_after == "restarted_by_server", outcome.message
    assert outcome.new_pid is not None and outcome.new_pid != row.pid
    assert outcome.new_pid in server.kernel_pids(kernel_id) and kernel_id in server.listed_kernels()
    assert "restarted kernel" in outcome.message and "by itself" in outcome.message


def test_least_privilege_cannot_call_the_kernel_api(server: JupyterServer, sampler_for) -> None:
    sampler, row, kernel_id = sampler_for("work/least.ipynb", Settings(least_privilege=True, allow_kill=True))
    assert available_actions(row, sampler.settings) == ()
    outcome = run_kernel_action(sampler, row, KernelAction.SHUTDOWN)
    assert outcome.result is KillResult.REFUSED and "least privilege" in outcome.message
    assert server.kernel_pids(kernel_id) == [row.pid] and kernel_id in server.listed_kernels()


def test_the_identity_is_checked_right_before_acting(server: JupyterServer, sampler_for) -> None:
    from dataclasses import replace

    sampler, row, kernel_id = sampler_for("work/identity.ipynb")
    older = replace(row, create_time=(row.create_time or 0) - 10)  # the PID now another process's
    outcome = run_kernel_action(sampler, older, KernelAction.SHUTDOWN)
    assert outcome.result is KillResult.PID_REUSED and "not asked" in outcome.message
    assert server.kernel_pids(kernel_id) == [row.pid] and kernel_id in server.listed_kernels()


def test_a_server_whose_token_is_not_known_is_never_called(server: JupyterServer, tmp_path: Path) -> None:
    no_token = tmp_path / "runtime"
    no_token.mkdir()
    info = json.loads(next(server.runtime.glob(f"jpserver-{server.process.pid}.json")).read_text())
    (no_token / "jpserver-1.json").write_text(json.dumps({**info, "token": ""}))
    assert find_server(server.url, [no_token]) is None  # its runtime file gives no token: not called
    found = find_server(server.url, [server.runtime])
    assert found is not None and found.token == server.token and server.token not in repr(found)
    assert server.token not in repr(KernelServer(server.url, server.token))


def test_gpus_json_gives_the_kernels_jupyter_fields(
    server: JupyterServer, fakenvml_lib_dir: Path, tmp_path: Path
) -> None:
    kernel_id = server.open_notebook("work/json.ipynb")
    (pid,) = server.kernel_pids(kernel_id)
    scenario = tmp_path / "scenario.txt"
    scenario.write_text(kernel_scenario(pid))
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": str(fakenvml_lib_dir),
        "FAKE_NVML_SCENARIO": str(scenario),
        "JUPYTER_RUNTIME_DIR": str(server.runtime),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tfgpu_tui", "gpus", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert server.token not in done.stdout
    row = next(p for p in json.loads(done.stdout)["processes"] if p["pid"] == pid)
    assert row["jupyter"]["kernel_id"] == kernel_id and row["jupyter"]["notebook_path"] == "work/json.ipynb"
    assert row["jupyter"]["server_url"] == server.url
    assert row["jupyter"]["actions"] == ["shutdown", "restart"]
    assert psutil.pid_exists(pid)


async def test_the_dialogs_s_key_shuts_the_kernel_down_from_the_monitor(
    server: JupyterServer, scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import OptionList

    from tests.helpers.monitor_helpers import record_notifications, select_pid, shown_pids
    from tests.helpers.waiting import wait_until
    from tfgpu_tui.ui.app import TfgpuApp
    from tfgpu_tui.ui.monitor import MonitorTab
    from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(server.runtime))
    kernel_id = server.open_notebook("work/ui.ipynb")
    (pid,) = server.kernel_pids(kernel_id)
    scenario(kernel_scenario(pid))
    app = TfgpuApp(Settings(interval=0.5))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: pid in shown_pids(app), timeout=HANG_GUARD_SECONDS)
        await select_pid(pilot, pid)
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill), timeout=HANG_GUARD_SECONDS)
        choices = app.screen.query_one(OptionList)
        prompts = [str(choices.get_option_at_index(i).prompt) for i in range(choices.option_count)]
        assert prompts[0].startswith("[s] Shut down kernel") and prompts[1].startswith("[r] Restart kernel")
        assert [p[:3] for p in prompts[2:]] == ["[t]", "[9]", "[i]", "[es"]
        notifications = record_notifications(app)
        await pilot.press("s")
        tab = app.query_one(MonitorTab)
        await wait_until(
            pilot, lambda: not tab.kill_running and "shut down" in tab.kill_status, HANG_GUARD_SECONDS
        )
        assert f"{HELD_MIB} MiB freed" in tab.kill_status and "no longer lists it" in tab.kill_status
        assert any("shut down" in message for _title, message in notifications)
        await wait_until(pilot, lambda: pid not in shown_pids(app), timeout=HANG_GUARD_SECONDS)
    assert kernel_id not in server.listed_kernels()
