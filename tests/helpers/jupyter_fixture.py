"""The real Jupyter server of the end-to-end tests (conftest's `jupyter` fixture): one notebook session
whose browser tab has come and gone, so its kernel is idle and holds, on the scripted NVML, what a notebook
holds."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from tests.helpers.notebook_server import JupyterServer
from tests.helpers.waiting import wait_for

NOTEBOOK = "work/analysis.ipynb"
HELD_MIB = 18432
STALE_AFTER_SECONDS = 0.5  # longer than the tests' stale threshold (stale_minutes = 0.005: 0.3 s)


async def _open_and_close_notebook_tab(server: dict, kernel_id: str) -> None:
    """What a browser tab does: connect to the kernel's channels until it reports idle, then go away."""
    import aiohttp

    url = server["url"].replace("http://", "ws://") + f"api/kernels/{kernel_id}/channels"
    headers = {"Authorization": f"token {server['token']}"}
    async with aiohttp.ClientSession() as client, client.ws_connect(url, headers=headers) as socket:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = await socket.receive(timeout=deadline - time.monotonic())
            data = json.loads(message.data) if message.type == aiohttp.WSMsgType.TEXT else {}
            if data.get("msg_type") == "status" and data["content"].get("execution_state") == "idle":
                return
    raise AssertionError("the kernel never reported idle")


def idle_seconds(server: JupyterServer, kernel_id: str) -> float:
    """How long the kernel has been idle by the server's own record (0 while it is busy)."""
    kernel = server.api("GET", f"api/kernels/{kernel_id}")
    assert isinstance(kernel, dict)
    if kernel["execution_state"] != "idle":
        return 0.0
    last = datetime.fromisoformat(kernel["last_activity"].replace("Z", "+00:00"))
    return (datetime.now(timezone.utc) - last).total_seconds()


def idle_notebook_session(base: Path) -> Iterator[dict[str, object]]:
    """A real jupyter_server (a non-root base_url) in `base` with one notebook session whose tab has come and
    gone; yields the server's URL, token and runtime dir, the kernel's id and PID, and the server itself."""
    env = {**os.environ, "JUPYTER_DATA_DIR": str(base / "data")}
    server = JupyterServer(base, env, runtime=base / "runtime", base_url="/jp/")
    try:
        kernel_id = server.open_notebook(NOTEBOOK)
        info = {"url": server.url, "token": server.token}
        asyncio.run(_open_and_close_notebook_tab(info, kernel_id))
        wait_for(lambda: idle_seconds(server, kernel_id) > STALE_AFTER_SECONDS, 60)
        (pid,) = server.kernel_pids(kernel_id)
        yield {**info, "runtime": server.runtime, "kernel_id": kernel_id, "pid": pid, "server": server}
    finally:
        server.stop()
