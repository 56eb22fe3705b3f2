"""A fast path for reading exporters' text output: sample lines matched whole by a regular expression (the
text format's grammar for names, labels and values); anything it does not recognise sends the whole text to
prometheus-client's parser instead, so odd but valid output is still read correctly."""

from __future__ import annotations

import math
import re

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"'
_SAMPLE = re.compile(rf"({_NAME})(?:\{{((?:{_LABEL},?)*)\}})?[ \t]+(\S+)(?:[ \t]+-?\d+)?")
_LABELS = re.compile(_LABEL)
_UNESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "\\": "\\", '"': '"'}


class NotPlain(ValueError):
    """A line the fast path does not handle; use the full parser."""


def _value(text: str) -> float:
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    return float(text)  # NaN, exponents and plain numbers; ValueError otherwise


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return _UNESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), text)


def plain_samples(
    text: str, instance: str, wanted: tuple[str, ...]
) -> list[tuple[str, dict[str, str], float]]:
    """The samples of the metrics named in `wanted`, each labelled with `instance`; raises NotPlain (or
    ValueError) where the full parser is needed."""
    samples: list[tuple[str, dict[str, str], float]] = []
    for line in text.splitlines():
        if not line.startswith(wanted):  # comments, and metrics nobody reads, skipped unparsed
            continue
        match = _SAMPLE.fullmatch(line)
        if match is None:
            raise NotPlain(line[:80])
        name = match.group(1)
        if name not in wanted:  # a longer name that starts like a wanted one
            continue
        labels = {key: _unescape(value) for key, value in _LABELS.findall(match.group(2) or "")}
        labels["instance"] = instance
        samples.append((name, labels, _value(match.group(5))))
    return samples
