"""The kill dialog's keys (issue 30 item 7): one line per action with its key shown, kernel actions only
where the kernel's server can be asked and the session may, Cancel highlighted first. Pilot-driven."""

from __future__ import annotations

import signal

import pytest
from textual.app import App
from textual.widgets import OptionList

from tests.helpers.waiting import wait_until
from tfgpu_tui.gpu.kernel_actions import KernelAction
from tfgpu_tui.gpu.model import HostState, JupyterKernel, ProcessRow
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui.widgets.confirm_kill import ConfirmKill

KERNEL = ProcessRow(
    4242, 0, 18432.0, 0.0, HostState.OK, user="me", uid=0, command="python -m ipykernel_launcher -f k.json",
    create_time=1.0, jupyter=JupyterKernel("k-1", "work/eda.ipynb", server_url="http://127.0.0.1:8888/"),
)  # fmt: skip


class DialogApp(App):
    def __init__(self, row: ProcessRow, settings: Settings) -> None:
        super().__init__()
        self.row, self.settings, self.results = row, settings, []

    def on_mount(self) -> None:
        self.push_screen(ConfirmKill(self.row, 5.0, self.settings), self.results.append)


def prompts(app: App) -> list[str]:
    choices = app.screen.query_one(OptionList)
    return [str(choices.get_option_at_index(i).prompt) for i in range(choices.option_count)]


@pytest.mark.parametrize(
    ("key", "chosen"),
    [
        ("s", KernelAction.SHUTDOWN),
        ("r", KernelAction.RESTART),
        ("t", signal.SIGTERM),
        ("9", signal.SIGKILL),
        ("i", signal.SIGINT),
        ("escape", None),
        ("enter", None),  # Cancel is highlighted first
    ],
)
async def test_each_action_has_its_key(key: str, chosen: object) -> None:
    app = DialogApp(KERNEL, Settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        assert prompts(app) == [
            "[s] Shut down kernel: the notebook shows it shut down",
            "[r] Restart kernel: memory freed, the notebook stays open",
            "[t] SIGTERM: ask it to exit",
            "[9] SIGKILL: end it at once, no clean-up",
            "[i] SIGINT: interrupt, as Ctrl+C does",
            "[esc] Cancel",
        ]
        await pilot.press(key)
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmKill))
    assert app.results == [chosen]


async def test_arrows_and_enter_take_the_highlighted_action_and_the_body_says_what_it_does() -> None:
    app = DialogApp(KERNEL, Settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        body = app.screen.query_one("#confirm-kill-body")
        assert "work/eda.ipynb" in str(body.render()) and "Nothing is sent" in str(body.render())
        await pilot.press("right")  # wraps round to the first line
        assert "Asks the Jupyter server at http://127.0.0.1:8888/ to shut down" in str(body.render())
        await pilot.press("down")
        assert "to restart this kernel" in str(body.render())
        await pilot.press("down")
        assert "SIGTERM now" in str(body.render()) and "starts a killed kernel again" in str(body.render())
        await pilot.press("up", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmKill))
    assert app.results == [KernelAction.RESTART]


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        (Settings(least_privilege=True, allow_kill=True), "least privilege"),
        (Settings(readonly=True), "Read-only"),
    ],
)
async def test_no_kernel_actions_where_the_session_may_not(settings: Settings, why: str) -> None:
    app = DialogApp(KERNEL, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        assert [p[:3] for p in prompts(app)] == ["[t]", "[9]", "[i]", "[es"]
        body = str(app.screen.query_one("#confirm-kill-body").render())
        assert "not offered" in body and why in body
        await pilot.press("s", "r")  # keys of actions not offered do nothing
        assert isinstance(app.screen, ConfirmKill)
        await pilot.press("escape")
    assert app.results == [None]


async def test_a_kernel_no_server_lists_gets_the_signals_only() -> None:
    from dataclasses import replace

    row = replace(KERNEL, jupyter=JupyterKernel("k-1", None, why_unknown="no Jupyter server found"))
    app = DialogApp(row, Settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        assert [p[:3] for p in prompts(app)] == ["[t]", "[9]", "[i]", "[es"]
        assert "no Jupyter server that lists this kernel" in str(
            app.screen.query_one("#confirm-kill-body").render()
        )


async def test_a_web_session_gets_no_kernel_actions_even_with_allow_kill() -> None:
    from tfgpu_tui.cli import build_parser
    from tfgpu_tui.commands.serve import session_arguments
    from tfgpu_tui.options import settings_from_args

    serve = build_parser().parse_args(["serve", "--allow-kill"])
    argv = session_arguments(serve)  # what each browser session's dashboard runs with
    session = settings_from_args(build_parser(argv).parse_args(argv))
    assert session.least_privilege and session.allow_kill and not session.readonly  # signals allowed
    app = DialogApp(KERNEL, session)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmKill))
        assert [p[:3] for p in prompts(app)] == ["[t]", "[9]", "[i]", "[es"]
        await pilot.press("s")
        assert isinstance(app.screen, ConfirmKill)
