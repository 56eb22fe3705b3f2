"""The Environment tab's fix wrapped to the screen (finding_detail.wrap_fix): every line fits, and a shell
command copied off the screen line by line is the same command to the shell (bash parses both)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tfgpu_tui.ui.widgets.finding_detail import is_command, wrap_fix

pytestmark = pytest.mark.e2e  # real child processes

COMMANDS = [
    "/home/someone/venvs/tensorflow-gpu-env/bin/python3 -m pip uninstall -y tensorflow-cpu && "
    "/home/someone/venvs/tensorflow-gpu-env/bin/python3 -m pip install 'tensorflow[and-cuda]==2.18.0'",
    "/home/ana/venvs/tf/bin/python -m pip install 'tensorflow[and-cuda]==2.18.0'   # Install the versions "
    "from the tested-build table (tf_build_matrix.csv) or `pip install tensorflow[and-cuda]` (>=2.14)",
    "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/opt/a/long/path/to/some/cuda/libraries/that/goes/on",
    'python3 -m venv ~/venvs/tf && . ~/venvs/tf/bin/activate && pip install "tensorflow[and-cuda]"',
]


def parsed(command: str) -> str:
    """How bash reads a command: the body of a function holding it, printed back by `declare -f`."""
    script = f"g() {{\n{command}\n}}\ndeclare -f g"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("width", [30, 44, 78])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_wrapped_command_is_the_same_command_to_the_shell(command: str, width: int) -> None:
    lines = wrap_fix(command, width)
    assert len(lines) > 1 and all(len(line) <= width for line in lines)
    code = [line for line in lines if not line.startswith("#")]
    assert all(line.endswith("\\") for line in code[:-1]), "every continued line shows that it goes on"
    assert parsed("\n".join(lines)) == parsed(command)


def test_a_quoted_word_is_never_cut() -> None:
    lines = wrap_fix("/a/very/long/path/bin/python -m pip install 'tensorflow[and-cuda]==2.18.0'", 24)
    assert any("'tensorflow[and-cuda]==2.18.0'" in line for line in lines)


def test_sentences_wrap_at_spaces_without_continuations() -> None:
    fix = (
        "Install the NVIDIA driver (Ubuntu: `sudo ubuntu-drivers install`, then reboot); in Docker start the "
        "container with `--gpus all` (NVIDIA Container Toolkit)."
    )
    lines = wrap_fix(fix, 40)
    assert " ".join(lines) == fix and all(len(line) <= 40 and not line.endswith("\\") for line in lines)
    assert not is_command(fix) and not is_command("libcudnn.so.8 is missing: cd /x && ln -s a b")
    assert is_command("unset CUDA_VISIBLE_DEVICES   # or export CUDA_VISIBLE_DEVICES=0")


def test_a_fix_that_fits_is_left_as_it_is() -> None:
    assert wrap_fix("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64", 78) == [
        "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64"
    ]
