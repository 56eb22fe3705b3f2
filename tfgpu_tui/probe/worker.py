"""The child process of one probe trial: build the model, train a few steps on dummy data, report JSON.

Run as a script with the target interpreter (``python worker.py '<request json>'``), never imported by the
dashboard with TensorFlow: TensorFlow and Keras are imported inside functions only, so the parent may read
`BUILTIN_MODELS` without loading them. The module uses nothing from tfgpu_tui, because the target interpreter
need not have tfgpu_tui installed. The last stdout line is ``RESULT_MARKER`` followed by a JSON object:

- ``{"status": "ok", "peak_mb": float, "peak_source": "allocator"|"rss", "step_seconds": float | None,
  "model": {...}}``, ``model`` being `model_facts` (parameter counts, optimizer slots, dtypes, activations);
  ``step_seconds`` is None with one step (its time is tracing and compilation, not speed)
- ``{"status": "exception", "phase": "setup"|"model"|"data"|"train", "type": str, "message": str}``
- ``{"status": "no_tensorflow", "message": str}``
"""

from __future__ import annotations

import importlib
import json
import math
import os
import statistics
import sys
import time
from typing import Any

RESULT_MARKER = "TFGPU_PROBE_RESULT "
# builtin:<name> -> (keras.applications class, input shape); "cnn" is built by hand.
BUILTIN_MODELS: dict[str, tuple[str, tuple[int, ...]]] = {
    "cnn": ("", (28, 28, 1)),
    "resnet50": ("ResNet50", (224, 224, 3)),
    "mobilenetv2": ("MobileNetV2", (224, 224, 3)),
    "efficientnetb0": ("EfficientNetB0", (224, 224, 3)),
    "vgg16": ("VGG16", (224, 224, 3)),
}
BUILTIN_CLASSES = 1000
# Loss name fragments -> the labels they need. Checked in order, so "sparse" wins over "categorical".
LABEL_KINDS = (
    ("sparse", "sparse"),
    ("categorical", "one_hot"),
    ("kl_divergence", "one_hot"),
    ("kld", "one_hot"),
    ("poisson", "one_hot"),
    ("binary", "binary"),
    ("hinge", "binary"),
    ("squared", "regression"),
    ("absolute", "regression"),
    ("mse", "regression"),
    ("mae", "regression"),
    ("mape", "regression"),
    ("msle", "regression"),
    ("huber", "regression"),
    ("cosh", "regression"),
    ("cosine", "regression"),
)


# Optimizer state tensors per parameter by class name, when the built optimizer's variables cannot tell.
SLOTS_BY_CLASS = {
    "Adam": 2,
    "AdamW": 2,
    "Adamax": 2,
    "Nadam": 2,
    "Adadelta": 2,
    "Ftrl": 2,
    "Adagrad": 1,
    "Lion": 1,
}


class ProbeInputError(Exception):
    """The model or its data cannot be set up; the message says what to pass instead."""


def emit(payload: dict[str, Any]) -> None:
    """Write the result line the parent reads."""
    sys.stdout.write("\n" + RESULT_MARKER + json.dumps(payload) + "\n")
    sys.stdout.flush()


def configure_device(tf: Any, device: str, budget_mb: float | None) -> str:
    """Make only the probed device visible; on a GPU cap its memory at the budget. Returns the device name."""
    if device.upper() == "CPU":
        return "CPU:0"
    index = int(device.split(":")[1])
    gpus = tf.config.list_physical_devices("GPU")
    if index >= len(gpus):
        seen = f"sees only {len(gpus)} GPU(s) (GPU:0 to GPU:{len(gpus) - 1})" if gpus else "sees no GPU"
        raise ProbeInputError(f"there is no {device}: TensorFlow {seen}; probe the CPU with --device CPU")
    tf.config.set_visible_devices([gpus[index]], "GPU")
    if budget_mb:
        config = [tf.config.LogicalDeviceConfiguration(memory_limit=int(budget_mb))]
        tf.config.set_logical_device_configuration(gpus[index], config)
    return "GPU:0"


def build_builtin(keras: Any, name: str) -> Any:
    """A compiled built-in model: the starter CNN or a keras.applications model with random weights."""
    application, shape = BUILTIN_MODELS[name]
    if application:
        build = getattr(keras.applications, application)
        model = build(weights=None, input_shape=shape, classes=BUILTIN_CLASSES)
    else:
        layers = keras.layers
        model = keras.Sequential(
            [
                keras.Input(shape=shape),
                layers.Conv2D(32, 3, activation="relu"),
                layers.MaxPooling2D(2),
                layers.Conv2D(64, 3, activation="relu"),
                layers.MaxPooling2D(2),
                layers.Flatten(),
                layers.Dense(128, activation="relu"),
                layers.Dense(10, activation="softmax"),
            ]
        )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


def load_model(keras: Any, spec: str) -> Any:
    """The model named by ``builtin:NAME``, a saved ``.keras``/``.h5`` path or ``package.module:function``."""
    if spec.startswith("builtin:"):
        name = spec.split(":", 1)[1].lower()
        if name not in BUILTIN_MODELS:
            raise ProbeInputError(f"unknown built-in model {name!r}; choose from {', '.join(BUILTIN_MODELS)}")
        return build_builtin(keras, name)
    if os.path.exists(spec):
        return keras.models.load_model(spec)
    if ":" in spec and not spec.endswith((".keras", ".h5")):
        module_name, function_name = spec.split(":", 1)
        sys.path.insert(0, os.getcwd())
        function = getattr(importlib.import_module(module_name), function_name, None)
        if not callable(function):
            raise ProbeInputError(f"{module_name} has no function {function_name!r}")
        model = function()
        if not isinstance(model, keras.Model):
            raise ProbeInputError(f"{spec} returned {type(model).__name__}, not a keras.Model")
        return model
    raise ProbeInputError(f"model file not found: {spec}")


def loss_names(model: Any) -> list[str]:
    """The name of the loss of each output, lower-cased; raises when the model is not compiled."""
    loss = getattr(model, "loss", None)
    if loss is None:
        raise ProbeInputError(
            "the model has no loss: call model.compile(optimizer=..., loss=...) before saving or returning it"
        )
    outputs = len(model.outputs)
    if isinstance(loss, dict):
        losses = [loss.get(name) for name in model.output_names]
    elif isinstance(loss, (list, tuple)):
        losses = list(loss)
    else:
        losses = [loss] * outputs
    names = []
    for item in losses:
        name = item if isinstance(item, str) else getattr(item, "name", None) or getattr(item, "__name__", "")
        names.append(str(name).lower())
    return names


def label_kind(loss_name: str) -> str:
    """Which dummy labels a loss needs: sparse, one_hot, binary or regression."""
    for fragment, kind in LABEL_KINDS:
        if fragment in loss_name:
            return kind
    raise ProbeInputError(
        f"cannot tell what labels the loss {loss_name!r} needs; compile with a standard Keras loss "
        "(sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy, mse, mae ...)"
    )


def concrete_shape(tensor: Any, batch_size: int, what: str) -> tuple[int, ...]:
    """The tensor's shape with the batch filled in; raises when another dimension is unknown."""
    dims = tuple(tensor.shape)[1:]
    if any(d is None for d in dims):
        raise ProbeInputError(
            f"{what} {getattr(tensor, 'name', '')!r} has an unknown dimension {tuple(tensor.shape)}; "
            "build the model with a fixed input shape, e.g. keras.Input(shape=(128, 128, 3))"
        )
    return (batch_size, *dims)


def dummy_inputs(tf: Any, model: Any, batch_size: int) -> list[Any]:
    """Random inputs matching each model input's shape and dtype (integer inputs get zeros, safe as ids)."""
    inputs = []
    for tensor in model.inputs:
        shape = concrete_shape(tensor, batch_size, "input")
        dtype = tf.as_dtype(tensor.dtype)
        if dtype.is_floating:
            inputs.append(tf.random.uniform(shape, dtype=dtype))
        elif dtype.is_integer or dtype.is_bool:
            inputs.append(tf.zeros(shape, dtype=dtype))
        else:
            raise ProbeInputError(f"input {tensor.name!r} has dtype {dtype.name}; only numeric inputs work")
    return inputs


def dummy_labels(tf: Any, model: Any, batch_size: int) -> list[Any]:
    """Labels that fit each output's loss: class ids, one-hot rows, 0/1 targets or regression targets."""
    labels = []
    for tensor, loss_name in zip(model.outputs, loss_names(model), strict=True):
        shape = concrete_shape(tensor, batch_size, "output")
        kind = label_kind(loss_name)
        if kind == "sparse":
            labels.append(tf.random.uniform(shape[:-1], maxval=shape[-1], dtype=tf.int32))
        elif kind == "one_hot":
            ids = tf.random.uniform(shape[:-1], maxval=shape[-1], dtype=tf.int32)
            labels.append(tf.one_hot(ids, shape[-1]))
        elif kind == "binary":
            labels.append(tf.cast(tf.random.uniform(shape) > 0.5, tf.float32))
        else:
            labels.append(tf.random.uniform(shape))
    return labels


def mixed_policy_for(device: str) -> str:
    """The mixed-precision policy the child uses: float16 on a GPU; bfloat16 on the CPU, where float16 math
    is emulated and slow."""
    return "mixed_float16" if device.upper().startswith("GPU") else "mixed_bfloat16"


def slots_from_class(optimizer: Any) -> int | None:
    """Optimizer state tensors per parameter from the optimizer's class and settings, or None if unknown."""
    name = type(optimizer).__name__
    if name == "SGD":
        return 1 if getattr(optimizer, "momentum", 0) else 0
    if name == "RMSprop":
        return 1 + bool(getattr(optimizer, "momentum", 0)) + bool(getattr(optimizer, "centered", False))
    slots = SLOTS_BY_CLASS.get(name)
    if slots is not None and name == "Adam" and getattr(optimizer, "amsgrad", False):
        return slots + 1
    return slots


def optimizer_facts(model: Any, trainable: int) -> dict[str, Any]:
    """The optimizer's class and its state tensors per trainable parameter: counted from the built
    optimizer's variables (scalars such as the step counter left out), else taken from its class."""
    optimizer = getattr(model, "optimizer", None)
    inner = getattr(optimizer, "inner_optimizer", None) or optimizer  # LossScaleOptimizer wraps the real one
    if inner is None:
        return {"optimizer": None, "optimizer_slots": None, "optimizer_slots_source": ""}
    try:
        state = sum(math.prod(v.shape) for v in inner.variables if len(v.shape) > 0)
    except Exception:  # noqa: BLE001 - an unusual optimizer: fall back to its class
        state = 0
    if state and trainable:
        slots, source = round(state / trainable, 2), "variables"
    else:
        slots, source = slots_from_class(inner), "class"
    return {"optimizer": type(inner).__name__, "optimizer_slots": slots, "optimizer_slots_source": source}


def activation_values_per_sample(keras: Any, model: Any) -> int | None:
    """The sum of every layer's output size per sample (what the backward pass keeps), or None when a layer
    has no single symbolic output (subclassed models, shared layers) or an unknown dimension."""
    total = 0
    try:
        for layer in model.layers:
            if type(layer).__name__ == "InputLayer":
                continue
            for tensor in keras.tree.flatten(layer.output):
                dims = tuple(tensor.shape)[1:]
                if any(d is None for d in dims):
                    return None
                total += math.prod(dims)
    except (AttributeError, ValueError):
        return None
    return total


def model_facts(keras: Any, model: Any) -> dict[str, Any]:
    """Parameter counts, optimizer slots, the dtype policy and activation sizes, for the rule of thumb."""
    trainable = sum(math.prod(w.shape) for w in model.trainable_weights)
    return {
        "params_trainable": int(trainable),
        "params_total": int(sum(math.prod(w.shape) for w in model.weights)),
        **optimizer_facts(model, trainable),
        "variable_dtype": str(getattr(model, "variable_dtype", "float32")),
        "compute_dtype": str(getattr(model, "compute_dtype", "float32")),
        "activation_values_per_sample": activation_values_per_sample(keras, model),
    }


def memory_reader(tf: Any, device: str) -> tuple[Any, Any]:
    """Functions (reset, peak MB, source) for the device: TensorFlow's allocator stats where it keeps them
    (GPUs; the CPU with oneDNN on), else the child's peak resident memory."""

    def rss_peak() -> tuple[float, str]:
        import resource

        kilobytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return (kilobytes / 1024 if sys.platform != "darwin" else kilobytes / 2**20), "rss"

    try:
        tf.config.experimental.reset_memory_stats(device)
        tf.config.experimental.get_memory_info(device)
    except ValueError:
        return (lambda: None), rss_peak

    def allocator_peak() -> tuple[float, str]:
        return tf.config.experimental.get_memory_info(device)["peak"] / 2**20, "allocator"

    return (lambda: tf.config.experimental.reset_memory_stats(device)), allocator_peak


def step_time(durations: list[float]) -> float | None:
    """The median time of the steps after the first (which traces, compiles and autotunes); None with one
    step: its time is not a speed."""
    timed = durations[1:]
    return statistics.median(timed) if timed else None


def train_steps(tf: Any, model: Any, device: str, batch_size: int, steps: int) -> dict[str, Any]:
    """Train ``steps`` steps; peak memory and step time are taken after the first (tracing, autotuning); with
    one step the peak includes it and no step time is reported."""
    x, y = dummy_inputs(tf, model, batch_size), dummy_labels(tf, model, batch_size)
    x_arg, y_arg = (x[0] if len(x) == 1 else x), (y[0] if len(y) == 1 else y)
    reset, peak = memory_reader(tf, device)
    durations = []
    for step in range(steps):
        if step == 1:
            reset()
        started = time.perf_counter()
        model.train_on_batch(x_arg, y_arg)
        durations.append(time.perf_counter() - started)
    peak_mb, source = peak()
    return {"status": "ok", "peak_mb": peak_mb, "peak_source": source, "step_seconds": step_time(durations)}


def run(request: dict[str, Any]) -> dict[str, Any]:
    """One trial; every failure becomes a status payload rather than a traceback."""
    try:
        import tensorflow as tf
    except ImportError as error:
        return {"status": "no_tensorflow", "message": f"{sys.executable}: cannot import tensorflow ({error})"}
    phase = "setup"
    try:
        import keras

        device = configure_device(tf, request["device"], request.get("budget_mb"))
        if request.get("mixed_precision"):
            keras.mixed_precision.set_global_policy(mixed_policy_for(device))
        phase = "model"
        with tf.device(device):
            model = load_model(keras, request["model"])
            phase = "train"
            report = train_steps(tf, model, device, int(request["batch_size"]), int(request["steps"]))
        try:
            facts = model_facts(keras, model)
        except Exception:  # noqa: BLE001 - the facts are extras; the measurement stands without them
            facts = {}
        return {**report, "model": facts}
    except ProbeInputError as error:
        return {"status": "exception", "phase": phase, "type": "ProbeInputError", "message": str(error)}
    except Exception as error:  # noqa: BLE001 - any failure of user code is reported, not raised
        message = str(error)[-4000:]
        return {"status": "exception", "phase": phase, "type": type(error).__name__, "message": message}


def main(argv: list[str]) -> int:
    """Entry point: ``worker.py '<request json>'``."""
    if len(argv) != 2:
        sys.stderr.write("usage: worker.py '<request json>'\n")
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    emit(run(json.loads(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
