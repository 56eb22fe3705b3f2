"""What a user reads about their run (issue 24, item 12): each problem one plain sentence about it, the fix
something to do (this tool's own command where one fits), titles in words, the tensor shape kept."""

from __future__ import annotations

import re

import pytest

from tests.helpers.paths import FIXTURES
from tfgpu_tui.cli import main
from tfgpu_tui.env.diagnoses import BENIGN_CATEGORIES, diagnose_line, load_signatures
from tfgpu_tui.training.follow import SegmentSplitter
from tfgpu_tui.training.run import TrainingRun
from tfgpu_tui.training.text_format import status_text
from tfgpu_tui.training.watch import LogWatch

OOM_LOG = FIXTURES / "training" / "keras3_oom_traceback.log"
CONSTRUCTED = "[constructed from source format string] "
NOTES = re.compile(r"\bIf fatal\b|\bNewer builds\b|^(?:As|See|Same as) [A-Z_]{4,}|\b[A-Z]+_[A-Z_]{3,}\b\.$")
SIGNATURE_IDS = {s.id for s in load_signatures()}


def feed(text: str) -> TrainingRun:
    run = TrainingRun()
    run.feed_segments(SegmentSplitter().feed(text.encode()))
    return run


def oom_run() -> TrainingRun:
    watch = LogWatch(OOM_LOG)
    watch.read_all()
    watch.close()
    return watch.run


def test_an_oom_crash_reads_as_one_problem_about_the_run_with_the_probe_as_the_fix():
    run = oom_run()
    problems = {p.id: p for p in run.problem_list()}
    assert "BFC_RAN_OUT" not in problems  # the allocator's warning led to the real OOM: not a note of its own
    crash = problems["EXCEPTION"]
    assert crash.title == "Out of GPU memory"
    expected = (
        "Training ran out of GPU memory at epoch 1/20, step 1/938 (ResourceExhaustedError). "
        "Your run ran out of memory on GPU:0 allocating a float tensor of shape [512,64,224,224]."
    )
    assert crash.message == expected  # the allocation it failed is the same cause: one problem (issue 39)
    assert "tfgpu-tui probe" in crash.fix and "OOM_TENSOR" not in problems


def test_the_now_line_keeps_the_tensor_shape():
    shape = "shape [512,64,224,224]"
    assert f"stopped: your run ran out of memory on GPU:0 allocating a float tensor of {shape}" in (
        status_text(oom_run())
    )


def test_the_log_command_prints_titles_in_words_and_no_notes(capsys):
    assert main(["log", str(OOM_LOG)]) == 1
    out = capsys.readouterr().out
    assert "[critical] Out of GPU memory (line 8): Training ran out of GPU memory" in out
    assert out.count("[critical]") == 1 and "EXCEPTION" not in out and "OOM_TENSOR" not in out  # issue 39
    assert "Either non-fatal" not in out and "Newer builds" not in out and "If fatal" not in out
    assert out.count("tfgpu-tui probe") == 1  # the shared fix is printed once


def test_header_alerts_have_titles_in_words():
    alerts = [p.to_alert("oom.log") for p in oom_run().problem_list()]
    assert {a.short for a in alerts} == {"Out of GPU memory: oom.log"}
    assert not any("oom tensor" in a.short.lower() for a in alerts)


def test_an_allocator_warning_alone_says_the_run_carried_on():
    run = feed(
        "W bfc_allocator.cc:243] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.55GiB with "
        "freed_by_count=0. The caller indicates that this is not a failure\nEpoch 1/2\n"
    )
    (problem,) = run.problem_list()
    assert problem.title == "GPU memory short" and "2.55GiB" in problem.message
    assert "carried on" in problem.message and not NOTES.search(problem.fix)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            "Epoch 1/1\n10/10 [==============================] - 1s 9ms/step - loss: 0.5000\n"
            'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
            "AttributeError: 'History' object has no attribute 'histroy'\n",
            "Your script failed after training finished, with AttributeError: 'History' object has no "
            "attribute 'histroy'.",
        ),
        (
            'Traceback (most recent call last):\n  File "train.py", line 2, in <module>\n'
            "NameError: name 'Data' is not defined\n",
            "Your script failed before training started, with NameError: name 'Data' is not defined.",
        ),
    ],
)
def test_an_error_says_where_the_run_was(lines, expected):
    problem = feed(lines).problems["EXCEPTION"]
    assert problem.message == expected and "line" in problem.fix
    assert problem.title == "Training stopped by an error"


@pytest.mark.parametrize(
    "signature",
    [s for s in load_signatures() if s.category not in BENIGN_CATEGORIES],
    ids=lambda s: s.id,
)
def test_every_problem_signature_reads_as_a_sentence_about_the_run_with_something_to_do(signature):
    found = diagnose_line(signature.sample_line.replace(CONSTRUCTED, ""), signatures=[signature])
    assert found is not None
    message, fix = found.message, found.fix
    assert signature.title and " " in signature.title and signature.title.lower() != signature.id.lower()
    assert message.endswith(".") and message.count(". ") == 0, message  # one sentence
    assert "{" not in message + fix and "?" not in message, message  # every placeholder filled
    assert fix and not NOTES.search(fix) and not NOTES.search(message), fix
    assert not any(re.search(rf"\b{other}\b", message + fix) for other in SIGNATURE_IDS)  # no "see X_Y"
