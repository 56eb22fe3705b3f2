"""Property: the progress lines of a known run, interleaved at random with noise (other progress bars, prints,
warnings, an evaluate() bar), never give an invented epoch and never lose an epoch's final values; read both
from a file (tail first, history scan) and line by line as a follower sees it."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tfgpu_tui.training.follow import SegmentSplitter
from tfgpu_tui.training.run import TrainingRun
from tfgpu_tui.training.watch import LogWatch

BS = "\b"


def values(epoch: int, validation: bool) -> dict[str, float]:
    found = {"loss": round(1.0 / (epoch + 1), 4), "accuracy": round(0.5 + epoch / 100, 4)}
    if validation:
        found |= {"val_loss": round(1.1 / (epoch + 1), 4), "val_accuracy": round(0.45 + epoch / 100, 4)}
    return found


def metric_text(metrics: dict[str, float]) -> str:
    return " - ".join(f"{name}: {value:.4f}" for name, value in metrics.items())


def tf2_bar(steps: int, step: int, tail: str) -> str:
    done = 30 * step // steps
    arrow = "=" * done if step == steps else "=" * max(done - 1, 0) + ">"
    return f"{step:>{len(str(steps))}}/{steps} [{arrow}{'.' * (30 - len(arrow))}] - {tail}"


def keras3_bar(steps: int, step: int, tail: str) -> str:
    filled = 20 * step // steps
    return (
        f"\x1b[1m{step:>{len(str(steps))}}/{steps}\x1b[0m \x1b[32m{'━' * filled}\x1b[0m"
        f"\x1b[37m{'━' * (20 - filled)}\x1b[0m \x1b[1m{tail}"
    )


def epoch_lines(style: str, steps: int, metrics: dict[str, float]) -> list[str]:
    """The lines after `Epoch k/N` that carry the epoch (without their \\n)."""
    final = metric_text(metrics)
    if style == "verbose2":
        return [f"{steps}/{steps} - 2s - {final} - 2s/epoch - 20ms/step"]
    if style == "tf2":
        updates = [tf2_bar(steps, s, "ETA: 1s - loss: 0.9999") for s in (1, steps // 2, steps)]
        updates.append(tf2_bar(steps, steps, f"2s 20ms/step - {final}"))
    else:
        updates = [keras3_bar(steps, s, "1s\x1b[0m 20ms/step - loss: 0.9999") for s in (1, steps // 2, steps)]
        updates.append(keras3_bar(steps, steps, f"2s\x1b[0m 20ms/step - {final}"))
    return ["".join(BS * 60 + "\r" + update for update in updates)]


NOISE = st.sampled_from(
    [
        "starting the data pipeline ...",
        "2024-01-02 03:04:05.678901: W tensorflow/core/kernels/data/cache_dataset_ops.cc:858] The calling "
        "iterator did not fully read the dataset being cached.",
        "WARNING:tensorflow:Callback method `on_train_batch_end` is slow compared to the batch time",
        "\r 20%|██        | 1/5 [00:07<00:28,  7.02s/trial, best loss: ?]"
        "\r 40%|████      | 2/5 [00:14<00:21]",  # hyperopt's tqdm bar
        "best so far: 0.3 (trial 2)",
        "Epoch 00003: val_loss did not improve from 0.41000",
        "".join(BS * 40 + "\r" + tf2_bar(13, s, "ETA: 0s - loss: 0.6000 - accuracy: 0.7000") for s in (2, 7))
        + BS * 40
        + "\r"
        + tf2_bar(13, 13, "0s 5ms/step - loss: 0.6100 - accuracy: 0.7100"),  # an evaluate() bar
        "\r" + keras3_bar(7, 7, "0s\x1b[0m 3ms/step - compile_metrics: 0.2000 - loss: 0.3300"),  # Keras 3 one
    ]
)


@st.composite
def noisy_logs(draw):
    style = draw(st.sampled_from(["verbose2", "tf2", "keras3"]))
    total = draw(st.integers(1, 6))
    done = draw(st.integers(1, total))
    steps = draw(st.integers(2, 400))
    # Every epoch validates: an evaluate() bar inside an epoch without validation values cannot be told from
    # the epoch's own last update when only the last update of each line is read.
    known = {epoch: values(epoch, True) for epoch in range(1, done + 1)}
    lines: list[str] = []
    for epoch in range(1, done + 1):
        lines.append(f"Epoch {epoch}/{total}")
        lines += epoch_lines(style, steps, known[epoch])
    noisy: list[str] = []
    for line in lines:
        noisy += draw(st.lists(NOISE, max_size=2))
        noisy.append(line)
    noisy += draw(st.lists(NOISE, max_size=3))
    return "\n".join(noisy) + "\n", known


def check(run, known: dict[int, dict[str, float]]) -> None:
    epochs = run.epochs
    assert [e.epoch for e in epochs] == sorted(known), "an invented or a lost epoch"
    assert {e.fit_run for e in epochs} <= {1}
    for record in epochs:
        assert dict(record.metrics) == known[record.epoch], "an epoch's final values were lost"


# Found by this property: a Keras 3 evaluate() bar with the epoch's step count right after a verbose=2 epoch
# line used to be taken for that epoch's repeated final update (Keras 3 on Windows), and replaced its values.
EVALUATE_AFTER_VERBOSE2 = (
    "".join(f"Epoch {e}/2\n{epoch_lines('verbose2', 7, values(e, True))[0]}\n" for e in (1, 2))
    + "\r"
    + keras3_bar(7, 7, "0s\x1b[0m 3ms/step - compile_metrics: 0.2000 - loss: 0.3300")
    + "\n",
    {e: values(e, True) for e in (1, 2)},
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(noisy_logs())
@example(case=EVALUATE_AFTER_VERBOSE2)
def test_noise_never_invents_or_loses_epochs(tmp_path_factory, case):
    text, known = case
    path: Path = tmp_path_factory.mktemp("noise") / "train.log"
    path.write_text(text, encoding="utf-8")
    for tail_bytes in (10**9, 700):  # all at once, and tail first with the history merged
        watch = LogWatch(path, tail_bytes=tail_bytes)
        watch.read_all()
        check(watch.run, known)
        watch.close()
    run, splitter = TrainingRun(), SegmentSplitter()
    data = text.encode()
    for start in range(0, len(data), 97):  # as a follower sees it: every \r update, in arbitrary chunks
        run.feed_segments(splitter.feed(data[start : start + 97]))
    check(run, known)
