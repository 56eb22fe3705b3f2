"""The child process of the input-pipeline probe: time the user's tf.data pipeline, the same with prefetch,
and the model's training steps on one of its batches replayed from memory; report JSON.

Run as a script with the target interpreter (``python pipeline_worker.py '<request json>'``); it uses the
trial worker beside it (`worker`: device set-up, model loading, the result line) and nothing else from
tfgpu_tui. The user's module is imported here only, found as ``python -m`` finds it: the current directory
first, then PYTHONPATH. Before each phase a ``PHASE_MARKER`` line goes to stdout, so that a parent that ends
a child stuck there can say where. The last stdout line is ``worker.RESULT_MARKER`` and a JSON object:

- ``{"status": "ok", "batch_size": int, "pipeline": RATE, "prefetch": RATE, "model": RATE,
  "ends_with_prefetch": bool, "cpu_count": int | None}``, each RATE ``{"samples": int, "seconds": float}``
  (the model's: samples of one step and its median time);
- ``{"status": "exception", "phase": str, "type": str, "message": str, "where": "file:line" | ""}``;
- ``{"status": "no_tensorflow", "message": str}``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

if __package__:
    from tfgpu_tui.probe import worker
else:  # run as a script by the target interpreter, which need not have tfgpu_tui
    import worker  # type: ignore[import-not-found,no-redef]

PHASE_MARKER = "TFGPU_PIPELINE_PHASE "
WARMUP_BATCHES = 2  # the first batches open files, trace functions and fill buffers
MAX_BATCHES = 100_000
MIN_STEPS = 3  # the first traces and compiles; the median of the others is the step time
MAX_STEPS = 500
# Lines of an error message that say nothing about the error (Keras wraps a layer's error in them).
FILLER_LINES = ("Exception encountered when calling", "Arguments received by", "Traceback (most recent call")


class Phase:
    """The phase the child is in, said on stdout as it changes (the parent reads the last one said)."""

    def __init__(self) -> None:
        self.name = "setup"

    def enter(self, name: str) -> None:
        """Start phase `name`."""
        self.name = name
        sys.stdout.write(f"\n{PHASE_MARKER}{name}\n")
        sys.stdout.flush()


def load_pipeline(spec: str) -> Any:
    """The user's function: its module imported from the current directory (then sys.path)."""
    module_name, function_name = spec.split(":", 1)
    sys.path.insert(0, os.getcwd())
    function = getattr(importlib.import_module(module_name), function_name, None)
    if not callable(function):
        raise worker.ProbeInputError(f"{module_name} has no function {function_name!r}")
    return function


def make_dataset(tf: Any, function: Any, spec: str) -> Any:
    """Call the user's function; raises ProbeInputError when it returns something other than a dataset."""
    dataset = function()
    if not isinstance(dataset, tf.data.Dataset):
        raise worker.ProbeInputError(f"{spec} returned {type(dataset).__name__}, not a tf.data.Dataset")
    return dataset


def batch_size_of(tf: Any, element: Any) -> int:
    """The batch dimension of an element: the first dimension of its first component."""
    first = tf.nest.flatten(element)[0]
    dims = tuple(first.shape)
    if not dims or dims[0] is None:
        raise worker.ProbeInputError(
            f"the dataset's elements have no batch dimension (shape {dims}); return dataset.batch(N)"
        )
    return int(dims[0])


def useful_line(text: str) -> str:
    """The first line of an error message that says something: not blank, not Keras's or Python's wrapping."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(FILLER_LINES)), lines[0] if lines else "")


def next_element(iterator: Any) -> Any:
    """The iterator's next element, or None when the dataset has ended."""
    try:
        return next(iterator)
    except StopIteration:
        return None


def time_dataset(
    tf: Any, dataset: Any, seconds: float, after_first: Callable[[], None] = lambda: None
) -> tuple[dict[str, float], Any]:
    """Samples delivered and the time they took, over up to `seconds` after `WARMUP_BATCHES` warm-up
    batches; and the first batch (`after_first()` is called once it came). Raises ProbeInputError when the
    dataset gives too few batches."""
    iterator = iter(dataset)
    first = next_element(iterator)
    if first is None:
        raise worker.ProbeInputError("the dataset is empty: it yielded no batch")
    batch_size_of(tf, first)  # an unbatched dataset is said at once
    after_first()
    for _ in range(WARMUP_BATCHES - 1):
        if next_element(iterator) is None:
            break
    samples = batches = 0
    started = time.perf_counter()
    while batches < MAX_BATCHES and time.perf_counter() - started < seconds:
        element = next_element(iterator)
        if element is None:
            break
        samples += batch_size_of(tf, element)
        batches += 1
    elapsed = time.perf_counter() - started
    if not batches:
        raise worker.ProbeInputError(
            f"the dataset ended within its {WARMUP_BATCHES} warm-up batches: too few to time; .repeat() it"
        )
    return {"samples": samples, "seconds": elapsed}, first


def split_element(element: Any) -> tuple[Any, Any, Any]:
    """(inputs, labels, sample weights) as Keras reads an element: a 2- or 3-tuple, else inputs alone."""
    if isinstance(element, (tuple, list)) and len(element) in (2, 3):
        return element[0], element[1], element[2] if len(element) == 3 else None
    return element, None, None


def describe(tf: Any, element: Any) -> str:
    """The element's shapes and dtypes, e.g. ``(float32 (8, 28, 28, 1), int32 (8,))``."""
    parts = [f"{tensor.dtype.name} {tuple(tensor.shape)}" for tensor in tf.nest.flatten(element)]
    return "(" + ", ".join(parts) + ")"


def time_model(tf: Any, keras: Any, request: dict[str, Any], element: Any, phase: Phase) -> dict[str, float]:
    """The model's median step time training on `element` again and again (no input pipeline involved)."""
    batch_size = batch_size_of(tf, element)
    phase.enter("model")
    device = worker.configure_device(tf, request["device"], None)
    if request.get("mixed_precision"):
        keras.mixed_precision.set_global_policy(worker.mixed_policy_for(device))
    with tf.device(device):
        model = worker.load_model(keras, request["model"])
        x, y, weights = split_element(element)
        if y is None:
            labels = worker.dummy_labels(tf, model, batch_size)
            y = labels[0] if len(labels) == 1 else labels
        phase.enter("train")
        durations: list[float] = []
        started = time.perf_counter()
        seconds = float(request["measure_seconds"])
        while len(durations) < MAX_STEPS and (
            len(durations) < MIN_STEPS or time.perf_counter() - started < seconds
        ):
            began = time.perf_counter()
            try:
                model.train_on_batch(x, y, sample_weight=weights)
            except Exception as error:
                if durations:
                    raise
                found = useful_line(str(error))
                found = found if len(found) <= 160 else found[:157] + "..."
                message = f"the model cannot train on the pipeline's batches {describe(tf, element)}: {found}"
                raise worker.ProbeInputError(message + "; pass --model with one that takes them") from error
            durations.append(time.perf_counter() - began)
    step = worker.step_time(durations) or durations[-1]
    return {"samples": batch_size, "seconds": step}


def user_frame(error: BaseException) -> str:
    """``file:line`` of the innermost frame of the traceback outside TensorFlow, Keras and this probe."""
    here = os.path.dirname(os.path.abspath(__file__))
    frames = traceback.extract_tb(error.__traceback__)
    for frame in reversed(frames):
        path = os.path.abspath(frame.filename)
        outside = not path.startswith(here) and "site-packages" not in path and "dist-packages" not in path
        if outside and not frame.filename.startswith("<"):
            return f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return ""


def measure(tf: Any, keras: Any, request: dict[str, Any], phase: Phase) -> dict[str, Any]:
    """The three measurements; raises on any failure (`run` reports it with its phase)."""
    seconds = float(request["measure_seconds"])
    phase.enter("import")
    function = load_pipeline(request["pipeline"])
    phase.enter("call")
    dataset = make_dataset(tf, function, request["pipeline"])
    phase.enter("first_batch")
    alone, first = time_dataset(tf, dataset, seconds, lambda: phase.enter("pipeline"))
    phase.enter("prefetch")
    prefetched, _ = time_dataset(tf, dataset.prefetch(tf.data.AUTOTUNE), seconds)
    model = time_model(tf, keras, request, first, phase)
    return {
        "status": "ok",
        "batch_size": batch_size_of(tf, first),
        "pipeline": alone,
        "prefetch": prefetched,
        "model": model,
        "ends_with_prefetch": "Prefetch" in type(dataset).__name__,
        "cpu_count": os.cpu_count(),
    }


def run(request: dict[str, Any]) -> dict[str, Any]:
    """The probe; every failure becomes a status payload with its phase rather than a traceback."""
    phase = Phase()
    phase.enter("tensorflow")
    try:
        import tensorflow as tf
    except ImportError as error:
        return {"status": "no_tensorflow", "message": f"{sys.executable}: cannot import tensorflow ({error})"}
    try:
        import keras

        return measure(tf, keras, request, phase)
    except worker.ProbeInputError as error:
        return {"status": "exception", "phase": phase.name, "type": "ProbeInputError", "message": str(error)}
    except Exception as error:  # noqa: BLE001 - any failure of user code is reported, not raised
        return {
            "status": "exception",
            "phase": phase.name,
            "type": type(error).__name__,
            "message": str(error)[-4000:],
            "where": user_frame(error),
        }


def main(argv: list[str]) -> int:
    """Entry point: ``pipeline_worker.py '<request json>'``."""
    if len(argv) != 2:
        sys.stderr.write("usage: pipeline_worker.py '<request json>'\n")
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    sys.modules.pop("worker", None)  # ours is bound here; a user's module named worker must import
    worker.emit(run(json.loads(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
