"""What the pipeline probe's three rates mean: how long the accelerator waits for input, whether the run is
input-bound, and the fixes in the order the measurements favour. Pure code: no TensorFlow, no I/O."""

from __future__ import annotations

from dataclasses import dataclass

# Input-bound when the pipeline leaves the model waiting at least this share of the time: under it, run-to-run
# noise of a few percent would flip the answer.
INPUT_BOUND_WAIT_PERCENT = 10.0
# Prefetch "helped" when the pipeline with it delivered at least this much more.
PREFETCH_HELPED_RATIO = 1.10


@dataclass(frozen=True)
class Rates:
    """The three measured rates, in samples per second, at the pipeline's batch size."""

    pipeline: float
    with_prefetch: float
    model: float
    batch_size: int


@dataclass(frozen=True)
class Fix:
    """One change to try: what to do, and whether the probe measured its effect or only advises it."""

    text: str
    measured: bool

    def line(self) -> str:
        """The fix as a sentence ending with what it rests on."""
        return f"{self.text} ({'measured' if self.measured else 'advised, not measured'})"


def wait_percent(pipeline: float, model: float) -> float:
    """The share of time (0-100) the model waits for input when the pipeline delivers `pipeline` samples/s and
    the model could train `model`: ``1 - pipeline / model``, and 0 when the pipeline keeps up. It assumes the
    input overlaps the steps (prefetch); without that the wait is longer."""
    if model <= 0 or pipeline >= model:
        return 0.0
    return 100.0 * (1.0 - max(pipeline, 0.0) / model)


def input_bound(pipeline: float, model: float) -> bool:
    """Whether the pipeline leaves the model waiting at least `INPUT_BOUND_WAIT_PERCENT` of the time."""
    return wait_percent(pipeline, model) >= INPUT_BOUND_WAIT_PERCENT


def prefetch_helped(rates: Rates) -> bool:
    """Whether appending ``.prefetch(tf.data.AUTOTUNE)`` made the pipeline measurably faster."""
    return rates.pipeline > 0 and rates.with_prefetch >= PREFETCH_HELPED_RATIO * rates.pipeline


def gain_text(rates: Rates) -> str:
    """``+35 %`` or ``-4 %``: the prefetched pipeline against the pipeline as it is."""
    return f"{100.0 * (rates.with_prefetch / rates.pipeline - 1.0):+.0f} %" if rates.pipeline > 0 else "n/a"


def fixes(rates: Rates, ends_with_prefetch: bool, cpu_count: int | None) -> list[Fix]:
    """What to change when input-bound, measured fixes first: prefetch where it helped, then
    ``num_parallel_calls``, ``cache()`` and more CPU, which the probe advises but cannot try on the user's
    code. A pipeline without a final prefetch that gained nothing from it alone gets prefetch last: it
    overlaps the input with the steps, which timing the pipeline alone cannot show. Empty when not
    input-bound."""
    if not input_bound(rates.pipeline, rates.model):
        return []
    found: list[Fix] = []
    prefetch_rate = f"{rates.with_prefetch:,.0f} samples/s with it ({gain_text(rates)})"
    if prefetch_helped(rates):
        found.append(Fix(f"end the pipeline with .prefetch(tf.data.AUTOTUNE): {prefetch_rate}", True))
    cores = f": this machine has {cpu_count}" if cpu_count else ""
    found += [
        Fix("give the costly map num_parallel_calls=tf.data.AUTOTUNE, to run it on several cores", False),
        Fix(
            "cache() right after the costly map (decoding, resizing), if its output fits in memory or on "
            "local disk: later epochs skip it",
            False,
        ),
        Fix(f"more CPU cores for the input pipeline{cores}", False),
    ]
    if not prefetch_helped(rates) and not ends_with_prefetch:
        found.append(
            Fix(
                ".prefetch(tf.data.AUTOTUNE) at the end, so that the input overlaps the training steps; "
                f"timed alone it gave {prefetch_rate}",
                False,
            )
        )
    return found


def verdict_line(rates: Rates, device: str) -> str:
    """The answer in one sentence, e.g. "Your pipeline delivers 1,240 samples/s; the model trains 4,100
    samples/s at batch 256, so the GPU waits about 70 % of the time."."""
    who = "the GPU" if device.upper().startswith("GPU") else "the CPU's training"
    head = (
        f"Your pipeline delivers {rates.pipeline:,.0f} samples/s; the model trains {rates.model:,.0f} "
        f"samples/s at batch {rates.batch_size}"
    )
    wait = wait_percent(rates.pipeline, rates.model)
    if input_bound(rates.pipeline, rates.model):
        return f"{head}, so {who} waits about {wait:.0f} % of the time for input."
    if wait > 0:
        return f"{head}: nearly enough ({who} would wait about {wait:.0f} % of the time); not input-bound."
    return f"{head}: the input keeps up ({rates.pipeline / rates.model:,.1f}x); not input-bound."
