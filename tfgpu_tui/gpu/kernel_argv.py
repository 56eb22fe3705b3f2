"""Jupyter kernels recognised from their command line alone: cheap, with nothing loaded for it.

Every kernel launcher (``python -m ipykernel_launcher -f <runtime dir>/kernel-<id>.json``, ``-m ipykernel``,
VS Code's and Colab's launchers, a connection file anywhere) is labelled from argv, synchronously. What the
kernel's server says about it (its notebook, state, last activity) is in jupyter.py, which loads only once a
kernel is seen.
"""

from __future__ import annotations

import os
import re

from tfgpu_tui.gpu.model import JupyterKernel

KERNEL_FILE = re.compile(r"kernel-([0-9A-Za-z_.-]+?)\.json$")
LAUNCHERS = ("ipykernel_launcher", "ipykernel", "colab_kernel_launcher", "kernel_launcher", "ipython_kernel")
FILE_OPTIONS = ("-f", "--f", "--existing", "--connection-file", "--connection_file")
FILE_PREFIXES = (
    *(f"{opt}=" for opt in FILE_OPTIONS),
    "--IPKernelApp.connection_file=",
    "--KernelApp.connection_file=",
)


def kernel_connection_file(cmdline: list[str]) -> str | None:
    """The connection file of a kernel's command line ('' for a launcher without one); None when it is not a
    kernel. A ``-f`` option naming ``kernel-*.json`` marks a kernel whatever launched it."""
    value: str | None = None
    for i, part in enumerate(cmdline):
        if part in FILE_OPTIONS and i + 1 < len(cmdline):
            value = cmdline[i + 1]
            break
        if part.startswith(FILE_PREFIXES):
            value = part.split("=", 1)[1]
            break
    launcher = any(_is_launcher(part) for part in cmdline[:4])
    if value is not None and (launcher or (value.endswith(".json") and KERNEL_FILE.search(value))):
        return value
    return "" if launcher else None


def _is_launcher(part: str) -> bool:
    name = os.path.basename(part)
    name = name[:-3] if name.endswith(".py") else name
    return name in LAUNCHERS or name.startswith("ipykernel_launcher") or "kernel_launcher" in name


def kernel_id_from_file(connection_file: str) -> str | None:
    """The kernel id in ``.../kernel-<id>.json``."""
    match = KERNEL_FILE.search(connection_file)
    return match.group(1) if match else None


def kernel_from_cmdline(cmdline: list[str]) -> JupyterKernel | None:
    """The kernel a command line runs, labelled from argv alone (no server asked); None for non-kernels."""
    connection_file = kernel_connection_file(cmdline)
    if connection_file is None:
        return None
    if not connection_file:
        return JupyterKernel("?", why_unknown="no connection file on its command line")
    kernel_id = kernel_id_from_file(connection_file) or os.path.basename(connection_file)
    return JupyterKernel(kernel_id, why_unknown="asking the Jupyter server")
