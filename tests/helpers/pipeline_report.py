"""What a pipeline probe child reports for a healthy run (probe/pipeline_worker.py): 100 samples/s from the
pipeline alone and with prefetch, 1,000 from the model's steps; the stand-in children print it."""

from __future__ import annotations

HEALTHY_REPORT = {
    "status": "ok",
    "batch_size": 8,
    "pipeline": {"samples": 200, "seconds": 2.0},
    "prefetch": {"samples": 200, "seconds": 2.0},
    "model": {"samples": 8, "seconds": 0.008},
    "ends_with_prefetch": False,
    "cpu_count": 2,
}
