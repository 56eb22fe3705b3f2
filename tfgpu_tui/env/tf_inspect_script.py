"""Inspect TensorFlow from inside the target interpreter and print one JSON object on stdout.

Run as a standalone script by the interpreter under test (``python tf_inspect_script.py``), never imported by
the dashboard. It needs only the standard library and TensorFlow, and keeps to syntax that Python 3.6
understands, because the target environment may be old. Everything TensorFlow writes (its C++ log on fd 2 and
any Python prints) goes to stderr, which the caller captures; stdout carries only the JSON object.

Its schema is ``tfgpu_tui/env/inspection_data.py`` (``InspectionData``), which parses the object once on the
dashboard's side; a key added here is read there, never by string key in the checks.
"""

import contextlib
import json
import os
import platform
import sys
import time

INSPECTION_VERSION = 1
MATMUL_SIZE = 1024
WATCHED_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "TF_CPP_MIN_LOG_LEVEL",
    "TF_CPP_MAX_VLOG_LEVEL",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_GPU_ALLOCATOR",
    "XLA_FLAGS",
)
LIBRARY_MARKERS = ("libcuda.so", "libcudart", "libcudnn", "libcublas", "libcufft", "libcusolver", "libnvrtc")


def jsonable(value):
    """Plain JSON data from TF's build info (OrderedDicts, tuples, bytes...)."""
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    return str(value)


def python_facts():
    return {
        "version": platform.python_version(),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform": platform.platform(),
    }


def import_tensorflow(report):
    """Import TF, recording the time and any error; returns the module or None."""
    started = time.perf_counter()
    try:
        import tensorflow as tf
    except ImportError as error:
        missing = getattr(error, "name", None) == "tensorflow"
        report["tensorflow"] = {"installed": not missing, "error": str(error), "error_type": "ImportError"}
        return None
    except Exception as error:  # a broken install raises anything; the caller gets it as a finding
        report["tensorflow"] = {"installed": True, "error": str(error), "error_type": type(error).__name__}
        return None
    report["tensorflow"] = {
        "installed": True,
        "version": getattr(tf, "__version__", None),
        "git_version": getattr(getattr(tf, "version", None), "GIT_VERSION", None),
        "import_seconds": round(time.perf_counter() - started, 3),
        "error": None,
        "error_type": None,
    }
    return tf


def device_facts(tf, report):
    """Build info, physical and logical GPUs. Memory growth is set first: the inspection holds little VRAM."""
    try:
        report["build_info"] = jsonable(dict(tf.sysconfig.get_build_info()))
    except Exception as error:
        report["build_info"] = {"error": str(error)}
    try:
        report["built_with_cuda"] = bool(tf.test.is_built_with_cuda())
    except Exception:
        report["built_with_cuda"] = None
    gpus = tf.config.list_physical_devices("GPU")
    physical = []
    for gpu in gpus:
        entry = {"name": gpu.name, "device_type": gpu.device_type}
        try:
            details = tf.config.experimental.get_device_details(gpu)
            capability = details.get("compute_capability")
            entry["compute_capability"] = list(capability) if capability else None
            entry["device_name"] = details.get("device_name")
        except Exception as error:
            entry["details_error"] = str(error)
        with contextlib.suppress(Exception):
            tf.config.experimental.set_memory_growth(gpu, True)
        physical.append(entry)
    report["physical_gpus"] = physical
    try:
        report["logical_gpus"] = [device.name for device in tf.config.list_logical_devices("GPU")]
    except Exception as error:
        report["logical_gpus"] = []
        report["gpu_init_error"] = str(error)


def timed_matmul(tf, device):
    """Seconds for one MATMUL_SIZE^2 matmul on `device` (after a warm-up), and where it ran."""
    with tf.device(device):
        a = tf.random.normal((MATMUL_SIZE, MATMUL_SIZE))
        b = tf.random.normal((MATMUL_SIZE, MATMUL_SIZE))
        tf.linalg.matmul(a, b).numpy()
        started = time.perf_counter()
        product = tf.linalg.matmul(a, b)
        product.numpy()
        return time.perf_counter() - started, product.device


def placement_test(tf, report):
    """A small matmul on GPU:0 (skipped without a GPU), with the CPU time beside it."""
    placement = {"status": "skipped", "device": None, "seconds": None, "cpu_seconds": None, "error": None}
    try:
        placement["cpu_seconds"] = round(timed_matmul(tf, "/CPU:0")[0], 6)
    except Exception as error:
        placement["error"] = f"CPU matmul failed: {error}"
    if not report.get("logical_gpus"):
        placement["error"] = placement["error"] or "no GPU visible to TensorFlow"
    else:
        try:
            seconds, device = timed_matmul(tf, "/GPU:0")
            placement.update(status="ok", device=device, seconds=round(seconds, 6), error=None)
        except Exception as error:
            placement.update(status="failed", error=f"{type(error).__name__}: {error}")
    report["placement"] = placement


def loaded_libraries():
    """CUDA libraries mapped into this process (which file was really loaded, pip or system)."""
    found = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if any(marker in os.path.basename(path) for marker in LIBRARY_MARKERS) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def main():
    json_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything TensorFlow prints lands on stderr, keeping stdout for the JSON
    report = {
        "inspection_version": INSPECTION_VERSION,
        "python": python_facts(),
        "env": {name: os.environ[name] for name in WATCHED_ENV if name in os.environ},
    }
    tf = import_tensorflow(report)
    if tf is not None:
        for stage in (device_facts, placement_test):
            try:
                stage(tf, report)
            except Exception as error:  # an odd TF build must still give a report, not a traceback
                report.setdefault("inspection_errors", []).append(
                    f"{stage.__name__}: {type(error).__name__}: {error}"
                )
                break
        report["loaded_libraries"] = loaded_libraries()
    sys.stdout.flush()
    sys.stderr.flush()
    json_out.write(json.dumps(report) + "\n")
    json_out.flush()
    return 0


def flush_c_streams() -> None:
    """Flush the C library's stdio buffers: native code (TensorFlow's, a plugin's) may have printed to them,
    and os._exit does not flush them as a normal exit does. Run by tf_inspection (PYTHONUNBUFFERED=1), they
    are unbuffered already; this keeps the output whole when the script is run another way."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None).fflush(None)


if __name__ == "__main__":
    status = main()  # flushes Python's streams and the report
    flush_c_streams()
    # Nothing else is left to save: os._exit skips the interpreter's shutdown, where TensorFlow's atexit
    # handlers and module teardown run (about half a second on a CUDA build, docs/performance.md).
    os._exit(status)
