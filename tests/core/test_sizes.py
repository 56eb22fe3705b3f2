"""Memory sizes as text: one style per use, the same wherever it is shown."""

from __future__ import annotations

import pytest

from tfgpu_tui.sizes import gib_figure, gib_text, mib_text, size_text, used_of_total_text


def test_gib_forms() -> None:
    assert gib_figure(12595.2) == "12.3" and gib_figure(None) == "N/A" and gib_figure(None, "?") == "?"
    assert gib_text(81920) == "80.0 GiB" and gib_text(None, "?") == "?"
    assert used_of_total_text(12595.2, 81920) == "12.3/80.0 GiB"


@pytest.mark.parametrize(
    ("mib", "sentence", "column"),
    [(512, "512 MiB", "512 MiB"), (1536, "1.5 GiB", "1536 MiB"), (20480, "20.0 GiB", "20.0 GiB")],
)
def test_a_sentence_switches_to_gib_at_1_gib_and_a_column_at_10(
    mib: float, sentence: str, column: str
) -> None:
    assert size_text(mib) == sentence and mib_text(mib) == column
