"""Keras helpers for training scripts: ``from tfgpu_tui.keras import JsonLinesLogger``.

Keras is imported only when `JsonLinesLogger` is first used, never by the dashboard.

    model.fit(x, y, epochs=10, callbacks=[JsonLinesLogger("train.jsonl", batch_size=64)])
    # then: tfgpu-tui --log train.jsonl   or   tfgpu-tui log train.jsonl --json
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "JsonLinesLogger":
        from tfgpu_tui.training.callback import json_lines_logger_class

        return json_lines_logger_class()
    raise AttributeError(f"module 'tfgpu_tui.keras' has no attribute {name!r}")
