"""A number field that lets go of the keys it cannot use: it takes only the characters a number is written
with, so `q` and `?` still reach the app (and stay in the footer) while a budget or a step count is typed."""

from __future__ import annotations

from textual.widgets import Input

NUMBER_CHARACTERS = frozenset("0123456789.-+eE_")


class NumberInput(Input):
    """An Input of type "number" or "integer" that consumes only number characters."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return character is not None and character in NUMBER_CHARACTERS
