"""Try the environment diagnosis on real TensorFlow installs: build each case's virtual environment with pip,
run ``tfgpu-tui check --json --python <its python>``, compare the findings with what the case expects, RUN the
printed fix in that environment (as printed, in bash: exports included), check again, and write the results
table to docs/environment-matrix.md.

Usage:
    python scripts/env_matrix.py --list                       # every case of the full matrix
    python scripts/env_matrix.py --cases cpu-2.21-py3.11,keras3-over-2.15-py3.11
    python scripts/env_matrix.py --all --fix-mode dry-run     # everything; pip fixes by the resolver only
    python scripts/env_matrix.py --wheels ~/wheels --cases ...  # installs from `pip download`ed wheels only
    python scripts/env_matrix.py --all --remove-venvs          # each venv removed after its case (GBs each)

Not part of the CI run: full TensorFlow wheels are about 600 MB and the CUDA pip packages about 3 GB a case.
Pythons come from pyenv (``$(pyenv root)/versions/3.X.*``) or PATH. The scripted driver is
../shared/fakenvml (built into the work directory); "none" runs without it, so no NVML at all.
A case's venv is rebuilt on every run, since its fix changes it. The results page keeps the rows of cases not
run this time and its hand-written sections (after the generated ones); a case run again replaces its row.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKENVML = ROOT.parent / "shared" / "fakenvml"
OUTPUT = ROOT / "docs" / "environment-matrix.md"
CHECK_TIMEOUT = 240
# Driver eras the scripted NVML answers with (one GPU, cc 8.6); "none": no NVML library at all.
DRIVERS = {
    "none": None,
    "no-gpu": "driver 580.95.05\ncuda 13000\n",
    "450": 'driver 450.80.02\ncuda 11000\ndevice name="NVIDIA A10" cc=8.6\n',
    "525": 'driver 525.60.13\ncuda 12000\ndevice name="NVIDIA A10" cc=8.6\n',
    "580": 'driver 580.95.05\ncuda 13000\ndevice name="NVIDIA A10" cc=8.6\n',
}
# A Keras-2 program: the legacy optimizer namespace is gone from Keras 3 (TF >= 2.16 without tf-keras).
KERAS2_PROGRAM = (
    "import tensorflow as tf\n"
    "model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])\n"
    "model.compile(optimizer=tf.keras.optimizers.legacy.Adam(), loss='mse')\n"
    "model.fit(tf.zeros((8, 4)), tf.zeros((8, 1)), epochs=1, verbose=2)\n"
)
# The releases before 2.18 (built against NumPy 1) that do not cap it (2.13 pins <=1.24.3, 2.15-2.17 <2.0).
NUMPY_UNCAPPED = ("2.14.",)
# A package `tensorflow` whose import never returns: the check must give up at its timeout.
HANGING_TENSORFLOW = "import time\nwhile True:\n    time.sleep(60)\n"


@dataclass(frozen=True)
class Case:
    """One environment: how to build it, the driver it sees, and the findings (id -> status) it must give."""

    name: str
    python: str  # "3.11"
    install: tuple[str, ...]  # pip requirements, one `pip install` call
    expect: dict[str, str]
    driver: str = "none"
    then: tuple[str, ...] = ()  # further shell commands in the venv ($PY is its python), e.g. an uninstall
    exit_code: int | None = None
    fix_contains: dict[str, str] = field(default_factory=dict)
    fix_mode: str | None = None  # None: the command line's; "dry-run" where running it downloads gigabytes
    fix_is_remedy: bool = True  # False where the fix is a diagnosis to run by hand (time a hanging import)
    fix_from: tuple[str, ...] = ()  # checks whose fix runs even when they are ok (an informational fix)
    program: str = ""  # a user's program run in the venv before and after the fix; its output read by `log`
    program_signature: str = ""  # the problem `tfgpu-tui log` must name in the program's failing output
    pip_libraries_on_path: bool = False  # the venv's nvidia/*/lib on LD_LIBRARY_PATH (the CUDA 11 recipe)
    ld_first: tuple[str, ...] = ()  # folders under the work directory put first on LD_LIBRARY_PATH
    no_fix_contains: str = ""  # text no printed fix may hold (one that installs what is installed)
    note: str = ""


def tf_versions() -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """(TF version, lowest Python, highest Python) of each release in the shipped table, 2.13 onwards."""
    from tfgpu_tui.env import compat  # the script runs with the package installed (it runs `-m tfgpu_tui`)
    from tfgpu_tui.env.fixes import release_to_install

    rows = []
    for row in compat.build_matrix():
        numbers = compat.major_minor(row.tf_version)
        if numbers is not None and numbers >= (2, 13):
            rows.append((release_to_install(row.tf_version), row.python_min, row.python_max))
    return rows


def full_matrix() -> list[Case]:
    """Every case the issue lists: each TF 2.13..2.21 on each Python 3.10..3.13 it has wheels for, with the
    CUDA libraries right, missing and CPU-only, and the special cases on one Python each."""
    cases = []
    for version, low, high in tf_versions():
        minor = version.rsplit(".", 1)[0]
        has_extra = tuple(int(part) for part in minor.split(".")) >= (2, 14)
        for python_minor in range(max(low[1], 10), min(high[1], 13) + 1):
            python = f"3.{python_minor}"
            suffix = f"{minor}-py{python}"
            cases += [
                Case(
                    f"right-{suffix}",
                    python,
                    right_install(version),
                    {"cuda_libraries": "ok", "libcuda": "failure"},
                    "580",
                    pip_libraries_on_path=not has_extra,
                    note=""
                    if has_extra
                    else "the CUDA 11 pip packages with their nvidia/*/lib on LD_LIBRARY_PATH",
                ),
                Case(
                    f"libs-missing-{suffix}",
                    python,
                    (f"tensorflow=={version}",),
                    {"cuda_libraries": "failure"},
                    "580",
                    fix_contains={"cuda_libraries": "tensorflow"},
                ),
                cpu_case(f"cpu-{suffix}", python, version),
            ]
    return cases + special_cases()


def right_install(version: str) -> tuple[str, ...]:
    """What a working GPU install of `version` is: `tensorflow[and-cuda]`, or its installable pins where the
    extra pins a TensorRT without a wheel (2.14.0), or the CUDA 11 pip packages before 2.14; NumPy 1 for a
    release before 2.18 that does not cap it."""
    from tfgpu_tui.env import compat, fixes

    numbers = compat.version_tuple(version) or ()
    numpy = ("numpy<2",) if numbers[:2] < fixes.NUMPY2_FIRST else ()
    if numbers[:2] < fixes.AND_CUDA_FIRST:
        return (f"tensorflow=={version}", *fixes.CUDA11_PACKAGES, *numpy)
    pins = compat.pins_for(version)
    if any(package in fixes.UNINSTALLABLE_PINS for package in pins):
        kept = [
            f"{package}{spec}"
            for package, spec in sorted(pins.items())
            if package not in fixes.UNINSTALLABLE_PINS
        ]
        return (f"tensorflow=={version}", *kept, *numpy)
    return (f"tensorflow[and-cuda]=={version}",)


def cpu_case(name: str, python: str, version: str) -> Case:
    """`pip install tensorflow-cpu==V` under a driver with a GPU: a CPU-only build on a GPU machine. Where the
    release does not cap NumPy, pip installs NumPy 2 and the import fails first: the fix pins NumPy 1."""
    if version.startswith(NUMPY_UNCAPPED):
        return Case(
            name,
            python,
            (f"tensorflow-cpu=={version}",),
            {"tensorflow": "failure"},
            "580",
            fix_contains={"tensorflow": "numpy<2"},
            note="pip installs NumPy 2 with this release (numpy>=1.23.5): the import fails until the fix",
        )
    return Case(name, python, (f"tensorflow-cpu=={version}",), {"cpu_only_build": "failure"}, "580")


def special_cases() -> list[Case]:
    """The classes beyond right/missing/CPU: one environment each."""
    return [
        Case(
            "cpu-only-2.21-py3.11",
            "3.11",
            ("tensorflow-cpu==2.21.0",),
            {"tensorflow": "ok", "keras": "ok", "cpu_only_build": "warning"},
            exit_code=3,
            fix_mode="dry-run",
            note="no NVML here: the driver check fails, the CPU build is a warning whose fix installs "
            "tensorflow[and-cuda] (about 3 GB): resolver only",
        ),
        Case(
            "keras3-over-2.15-py3.11",
            "3.11",
            ("tensorflow-cpu==2.15.1",),
            {"keras": "failure"},
            then=('"$PY" -m pip install -q "keras==3.6.0"',),  # as a user upgrades it: pip warns, installs
            fix_contains={"keras": "keras==2.15"},
        ),
        Case(
            "keras2-program-on-2.21-py3.11",
            "3.11",
            ("tensorflow-cpu==2.21.0",),
            {"keras": "ok"},
            fix_contains={"keras": "tf-keras~=2.21.0"},
            fix_from=("keras",),
            program=KERAS2_PROGRAM,
            program_signature="KERAS2_CODE_ON_KERAS3",
            note="the check cannot see the code: its keras info carries the tf-keras line; `log` names the "
            "program's failure; the program is run again after the fix",
        ),
        Case(
            "no-tensorflow-py3.12",
            "3.12",
            (),
            {"tensorflow": "failure"},
            fix_contains={"tensorflow": "tensorflow"},
            fix_mode="dry-run",
            note="the fix installs tensorflow[and-cuda] (about 3 GB): resolver only",
        ),
        Case(
            "hanging-import-py3.10",
            "3.10",
            (),
            {"tensorflow": "failure"},
            then=('mkdir -p "$SITE/tensorflow" && printf "%s" "$HANG" > "$SITE/tensorflow/__init__.py"',),
            fix_is_remedy=False,
            note="a tensorflow package whose import never returns; its fix times the import by hand",
        ),
        Case(
            "tf-and-tf-cpu-2.21-py3.11",
            "3.11",
            ("tensorflow==2.21.0", "tensorflow-cpu==2.21.0"),
            {"tensorflow_distributions": "warning"},
        ),
        Case(
            "half-removed-2.21-py3.11",
            "3.11",
            ("tensorflow==2.21.0", "tensorflow-cpu==2.21.0"),
            {"tensorflow": "failure"},
            then=('"$PY" -m pip uninstall -y -q tensorflow-cpu',),
            fix_contains={"tensorflow": "--force-reinstall"},
        ),
        Case(
            "cudnn8-under-2.21-py3.11",
            "3.11",
            ("tensorflow[and-cuda]==2.21.0",),
            {"cuda_libraries": "failure"},
            "580",
            then=('"$PY" -m pip install -q --no-deps "nvidia-cudnn-cu12==8.9.7.29"',),
        ),
        Case(
            "stale-cudnn-on-ld-path-2.15-py3.11",
            "3.11",
            ("tensorflow[and-cuda]==2.15.1",),
            {"cuda_libraries": "failure"},
            "580",
            then=(
                '"$PY" -m pip install -q --no-deps --target "$WORK/old-cudnn" "nvidia-cudnn-cu11==8.6.0.163"',
            ),
            ld_first=("old-cudnn/nvidia/cudnn/lib",),
            note="LD_LIBRARY_PATH=$WORK/old-cudnn/nvidia/cudnn/lib",
        ),
        Case(
            "stale-cublas-on-ld-path-2.15-py3.11",
            "3.11",
            ("tensorflow[and-cuda]==2.15.1",),
            {"cuda_libraries": "failure"},
            "580",
            then=(
                '"$PY" -m pip install -q --no-deps --target "$WORK/old-cublas" '
                '"nvidia-cublas-cu12==12.1.3.1"',
            ),
            ld_first=("old-cublas/nvidia/cublas/lib",),
            note="LD_LIBRARY_PATH=$WORK/old-cublas/nvidia/cublas/lib: cuBLAS 12.1 first; 2.15.1 pins "
            "12.2.5.6",
        ),
        Case(
            "libcuda-missing-with-and-cuda-2.15-py3.11",
            "3.11",
            ("tensorflow[and-cuda]==2.15.1",),
            {"libcuda": "failure", "log:DSO_LOAD_FAIL": "absent"},
            "580",
            no_fix_contains="tensorflow[and-cuda]",
            fix_is_remedy=False,
            note="NVML lists a GPU, libcuda.so.1 is nowhere: TensorFlow's log line about it is folded into "
            "the libcuda check, and no fix installs tensorflow[and-cuda] (installed); the fix (the driver's "
            "library) is not run here",
        ),
        Case(
            "cu11-pip-2.13-py3.11",
            "3.11",
            ("tensorflow==2.13.1", "nvidia-cudnn-cu11==8.6.0.163", "nvidia-cuda-runtime-cu11==11.8.89"),
            {"cuda_libraries": "failure"},
            "580",
            fix_contains={"cuda_libraries": "LD_LIBRARY_PATH"},
        ),
        *[
            Case(
                f"driver-{era}-2.21-py3.11",
                "3.11",
                ("tensorflow[and-cuda]==2.21.0",),
                want,
                era,
                exit_code=exit_code,
                note=note,
            )
            for era, want, exit_code, note in (
                (
                    "450",
                    {"driver_cuda": "failure"},
                    3,
                    "below CUDA 12's floor; the TF releases driver 450 runs have no wheel for Python 3.11: "
                    "the fix says so and names both ways out",
                ),
                ("525", {"driver_cuda": "warning"}, 3, "at CUDA 12's minor-version floor (525.60.13)"),
                ("580", {"driver_cuda": "ok", "cuda_libraries": "ok"}, 3, ""),
                ("no-gpu", {"driver": "warning", "driver_cuda": "ok", "libcuda": "skipped"}, 1, ""),
            )
        ],
    ]


def find_python(minor: str) -> str | None:
    """An interpreter for Python `minor` ("3.11"): pyenv's first, else PATH's."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(os.path.join(root, "versions", f"{minor}.*", "bin", f"python{minor}")))
    return found[-1] if found else shutil.which(f"python{minor}")


def _tail(text: str) -> str:
    """The last lines of pip's or bash's output that say something (not the local index notices)."""
    lines = [line for line in text.strip().splitlines() if "is ignored: it is neither" not in line]
    return " ".join(lines[-3:])[-300:]


def fakenvml_dir(work: Path) -> Path | None:
    """The scripted libnvidia-ml.so.1, built once into `work`; None where it cannot be built."""
    out = work / "fakenvml"
    if not (out / "libnvidia-ml.so.1").exists():
        result = subprocess.run(
            ["bash", str(FAKENVML / "build.sh"), str(out)], capture_output=True, text=True
        )
        if result.returncode != 0:
            print(f"fakenvml build failed: {_tail(result.stderr)}", file=sys.stderr)
            return None
    return out


def case_environment(case: Case, work: Path) -> dict[str, str]:
    """The environment the check (and the fix) run in: the scripted driver, stale library folders first."""
    env = {key: value for key, value in os.environ.items() if key not in ("LD_LIBRARY_PATH", "VIRTUAL_ENV")}
    directories = []
    scenario = DRIVERS[case.driver]
    if scenario is not None:
        library = fakenvml_dir(work)
        if library is not None:
            path = work / f"driver-{case.driver}.txt"
            path.write_text(scenario)
            env["FAKE_NVML_SCENARIO"] = str(path)
            directories.append(str(library))
    if case.pip_libraries_on_path:  # the recipe's export line, as the user runs it
        venv = work / case.name
        directories += sorted(str(lib) for lib in venv.glob("lib/python3*/site-packages/nvidia/*/lib"))
    directories[:0] = [str(work / folder) for folder in case.ld_first]
    if directories:
        env["LD_LIBRARY_PATH"] = ":".join(directories)
    return env


def build(case: Case, work: Path) -> tuple[Path | None, str]:
    """A fresh venv for the case; (its python, "") or (None, why not)."""
    base = find_python(case.python)
    if base is None:
        return None, f"no Python {case.python}"
    venv = work / case.name
    shutil.rmtree(venv, ignore_errors=True)
    steps = [[base, "-m", "venv", str(venv)]]
    python = venv / "bin" / "python"
    steps.append([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    if case.install:
        steps.append([str(python), "-m", "pip", "install", "-q", *case.install])
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True)
        if result.returncode != 0:
            return None, f"`{shlex.join(step[3:])}` failed: {_tail(result.stderr)}"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    shell_env = {**os.environ, "PY": str(python), "SITE": site, "WORK": str(work), "HANG": HANGING_TENSORFLOW}
    for command in case.then:
        result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=shell_env)
        if result.returncode != 0:
            return None, f"`{command}` failed: {_tail(result.stderr)}"
    return python, ""


def run_check(python: Path, env: dict[str, str]) -> tuple[int, dict[str, dict[str, str]], float]:
    """(exit code, id -> finding, seconds) of `tfgpu-tui check --json` on `python`."""
    started = time.perf_counter()
    command = [
        sys.executable,
        "-m",
        "tfgpu_tui",
        "check",
        "--json",
        "--timeout",
        "120",
        "--python",
        str(python),
    ]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=CHECK_TIMEOUT, cwd=ROOT)
    seconds = time.perf_counter() - started
    try:
        findings = {item["id"]: item for item in json.loads(result.stdout)["findings"]}
    except (ValueError, KeyError):
        findings = {"(no json)": {"status": "error", "detail": _tail(result.stderr), "fix": ""}}
    return result.returncode, findings, seconds


def runnable(fix: str, python: Path) -> str:
    """The commands of a printed fix, for bash: the `quoted` ones that start with the venv's python or an
    export/unset where the fix quotes them, else the text from the first such command on, split at " && ", up
    to the first comment (what follows `   # ` is prose, an alternative included); "" for prose only."""
    starts = (str(python), "export ", "unset ")
    quoted = [part for part in fix.split("`")[1::2] if part.startswith(starts)]
    if quoted:
        return " && ".join(quoted)
    positions = [position for position in (fix.find(start) for start in starts) if position >= 0]
    if not positions:
        return ""
    commands = fix[min(positions) :].split("   # ", 1)[0]
    return " && ".join(part.strip() for part in commands.split(" && ") if part.strip())


def run_fix(command: str, env: dict[str, str], mode: str) -> tuple[bool, dict[str, str], str]:
    """Run a fix in bash as printed (dry-run: pip through its resolver only); (ran ok, env after, output)."""
    if mode == "dry-run":
        command = command.replace(" -m pip install ", " -m pip install --dry-run -q ")
    script = f"set -e\n{command}\nenv -0"
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=1800)
    if result.returncode != 0:
        return False, env, _tail(result.stderr or result.stdout)
    after = dict(item.split("=", 1) for item in result.stdout.split("\0") if "=" in item)
    return True, after, ""


@dataclass
class Result:
    case: Case
    built: str = ""
    exit_code: int | None = None
    got: dict[str, str] = field(default_factory=dict)
    fixes: list[str] = field(default_factory=list)
    fix_outcome: str = ""
    after: dict[str, str] = field(default_factory=dict)
    program: str = ""  # what happened to the case's program before and after the fix
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def run_case(case: Case, work: Path, mode: str) -> Result:
    result = Result(case)
    python, why = build(case, work)
    if python is None:
        result.built = why
        return result
    env = case_environment(case, work)
    result.exit_code, findings, result.seconds = run_check(python, env)
    for check_id, want in case.expect.items():
        got = findings.get(check_id, {}).get("status", "absent")
        result.got[check_id] = got
        if got != want:
            result.problems.append(f"{check_id}: {got}, expected {want}")
        wanted_text = case.fix_contains.get(check_id)
        if wanted_text and wanted_text not in findings.get(check_id, {}).get("fix", ""):
            result.problems.append(f"{check_id}'s fix lacks {wanted_text!r}")
    if case.no_fix_contains:
        wrong = [key for key, item in findings.items() if case.no_fix_contains in item.get("fix", "")]
        if wrong:
            result.problems.append(f"fixes of {', '.join(wrong)} hold {case.no_fix_contains!r}")
    if case.exit_code is not None and result.exit_code != case.exit_code:
        result.problems.append(f"exit {result.exit_code}, expected {case.exit_code}")
    if case.program:
        _run_program(case, python, env, work, result, before_fix=True)
    broken = [check_id for check_id in case.expect if result.got[check_id] in ("warning", "failure")]
    broken += [check_id for check_id in case.fix_from if check_id not in broken]
    commands = list(dict.fromkeys(runnable(findings[check_id].get("fix", ""), python) for check_id in broken))
    result.fixes = [findings[check_id].get("fix", "") for check_id in broken]
    commands = [command for command in commands if command]
    if not case.fix_is_remedy:
        result.fix_outcome = "not run: a diagnosis to run by hand"
        return result
    if not commands:
        result.fix_outcome = "no command printed" if broken else "nothing to fix"
        return result
    fix_mode = case.fix_mode or mode
    ok, env_after, output = run_fix(" && ".join(commands), env, fix_mode)
    if not ok:
        result.fix_outcome = f"fix failed: {output}"
        result.problems.append("the printed fix did not run")
        return result
    if fix_mode == "dry-run":
        result.fix_outcome = "resolves (pip --dry-run)"
        return result
    if case.program:
        _run_program(case, python, env_after, work, result, before_fix=False)
    _, findings_after, _ = run_check(python, env_after)
    result.after = {check_id: findings_after.get(check_id, {}).get("status", "absent") for check_id in broken}
    result.fix_outcome, problem = outcome_after_fix(result.after)
    if problem:
        result.problems.append(problem)
    return result


def outcome_after_fix(after: dict[str, str]) -> tuple[str, str]:
    """(the "fix run" cell, the problem or "") from the statuses of the fixed checks after the fix: the
    finding is gone only where each is ok; a check skipped after it (TensorFlow broken) tells nothing."""
    still = [check_id for check_id, status in after.items() if status in ("warning", "failure")]
    if still:
        return "ran; still " + ", ".join(still), "the fix ran but the finding stayed: " + ", ".join(still)
    unknown = [f"{check_id} {status}" for check_id, status in after.items() if status != "ok"]
    if unknown:
        return "ran; " + ", ".join(unknown), "after the fix the check cannot tell: " + ", ".join(unknown)
    return "ran; finding gone", ""


def _run_program(
    case: Case, python: Path, env: dict[str, str], work: Path, result: Result, before_fix: bool
) -> None:
    """Run the case's program; before the fix `tfgpu-tui log` must name its failure, after it it must run."""
    source, output = work / f"{case.name}-program.py", work / f"{case.name}-program.log"
    source.write_text(case.program)
    done = subprocess.run([str(python), str(source)], capture_output=True, text=True, env=env, timeout=600)
    output.write_text(done.stdout + done.stderr)
    if not before_fix:
        result.program += f"; after the fix: exit {done.returncode}"
        if done.returncode != 0:
            result.problems.append("the program still fails after the fix")
        return
    command = [sys.executable, "-m", "tfgpu_tui", "log", "--json", str(output)]
    read = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    try:
        named = [problem["id"] for problem in json.loads(read.stdout)["problems"]]
    except (ValueError, KeyError):
        named = []
    result.program = f"exit {done.returncode}, `log` names {', '.join(named) or 'nothing'}"
    if case.program_signature not in named:
        result.problems.append(f"`log` does not name {case.program_signature}")


@dataclass
class Earlier:
    """What docs/environment-matrix.md already holds, so a run of a few cases keeps the others' results: the
    table rows, fixes and notes by case name, and the hand-written sections after them, verbatim."""

    rows: dict[str, str] = field(default_factory=dict)
    fixes: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    hand_written: str = ""


GENERATED_SECTIONS = ("## Fixes as printed", "## Notes")


def read_earlier(text: str) -> Earlier:
    """Parse an earlier results page (written by `markdown`); sections other than the generated ones are kept
    as they are."""
    earlier = Earlier()
    section = ""
    kept: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            section = line.strip()
        if section and section not in GENERATED_SECTIONS:
            kept.append(line)
        elif line.startswith("| ") and not line.startswith(("| case ", "|---")):
            earlier.rows[line[2:].split(" | ", 1)[0]] = line
        elif line.startswith("- `") and "`: " in line:
            name, _, rest = line[3:].partition("`: ")
            if section == "## Notes":
                earlier.notes[name] = line
            else:
                earlier.fixes.setdefault(name, []).append(line)
    earlier.hand_written = "\n".join(kept).strip()
    return earlier


def table_row(result: Result) -> str:
    """One case's row of the results table."""
    case = result.case
    expected = ", ".join(f"{key} {value}" for key, value in case.expect.items())
    got = result.built or ", ".join(f"{key} {value}" for key, value in result.got.items())
    after = ", ".join(f"{key} {value}" for key, value in result.after.items())
    verdict = "not built" if result.built else ("; ".join(result.problems) or "as expected")
    cells = [
        case.name,
        case.python,
        " ".join(case.install) or "(nothing)",
        case.driver,
        expected,
        got,
        str(result.exit_code),
        result.fix_outcome,
        after,
        result.program,
        f"{result.seconds:.1f}",
        verdict,
    ]
    return "| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |"


def markdown(results: list[Result], total: int, earlier: Earlier | None = None) -> str:
    """The results page: this run's cases replace their earlier rows; the other earlier rows stay."""
    earlier = earlier or Earlier()
    rows, fixes, notes = dict(earlier.rows), dict(earlier.fixes), dict(earlier.notes)
    for result in results:
        name = result.case.name
        rows[name] = table_row(result)
        fixes[name] = [f"- `{name}`: `{fix}`" for fix in result.fixes]
        notes.pop(name, None)
        if result.case.note:
            notes[name] = f"- `{name}`: {result.case.note}"
    lines = [
        "# Environment matrix: the diagnosis tried on real installs",
        "",
        "Written by `scripts/env_matrix.py` (see its docstring). Each row is a virtual environment built",
        "with pip, checked with `tfgpu-tui check --json --python <venv python>`; the printed fix then ran",
        "in it as printed and the check ran again (or, where the row says so, pip's resolver alone took the "
        "fix). "
        f"{len(rows)} of the {total} cases of the full matrix have run (a run replaces its cases' rows and "
        "keeps the others).",
        "",
        "| case | Python | installed | driver | expected | got | exit | fix run | after the fix | program "
        "| check s | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows.values(),
        "",
        "## Fixes as printed",
        "",
        *[line for lines in fixes.values() for line in lines],
    ]
    if notes:
        lines += ["", "## Notes", "", *notes.values()]
    if earlier.hand_written:
        lines += ["", earlier.hand_written]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", help="comma-separated case names (see --list)")
    parser.add_argument("--all", action="store_true", help="every case of the full matrix")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/tfgpu-env-matrix"), help="where venvs are built"
    )
    parser.add_argument("--fix-mode", choices=("run", "dry-run"), default="run")
    parser.add_argument(
        "--wheels",
        type=Path,
        help="install only from this folder of wheels (pip --no-index --find-links), filled once with "
        "`pip download`, so cases that share wheels download them once",
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument(
        "--remove-venvs", action="store_true", help="remove each case's venv after it (they take 0.3-6 GB)"
    )
    args = parser.parse_args()
    cases = full_matrix()
    if args.list:
        for case in cases:
            print(f"{case.name}: Python {case.python}, {' '.join(case.install) or '-'}, driver {case.driver}")
        return 0
    by_name = {case.name: case for case in cases}
    names = list(by_name) if args.all else [name for name in (args.cases or "").split(",") if name]
    unknown = [name for name in names if name not in by_name]
    if unknown or not names:
        print(
            f"env_matrix: unknown or no cases: {', '.join(unknown) or '(none)'} (see --list)", file=sys.stderr
        )
        return 2
    args.work.mkdir(parents=True, exist_ok=True)
    if args.wheels is not None:  # pip reads these in every step: the builds and the fixes
        os.environ["PIP_NO_INDEX"] = "1"
        links = f"{os.environ.get('PIP_FIND_LINKS', '')} {args.wheels.resolve()}"
        os.environ["PIP_FIND_LINKS"] = links.strip()
    earlier = read_earlier(args.output.read_text()) if args.output.exists() else Earlier()
    results = []
    for name in names:
        print(f"{name} ...", file=sys.stderr, flush=True)
        results.append(run_case(by_name[name], args.work, args.fix_mode))
        print(f"  {results[-1].problems or 'as expected'} ({results[-1].fix_outcome})", file=sys.stderr)
        if args.remove_venvs:
            shutil.rmtree(args.work / name, ignore_errors=True)
        args.output.write_text(markdown(results, len(cases), earlier))  # after each case: a long run can stop
    return 1 if any(result.problems or result.built for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
