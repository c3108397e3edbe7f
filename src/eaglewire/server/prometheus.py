"""The Prometheus text exposition format (version 0.0.4, and the OpenMetrics text both engines' prometheus_client
can emit), read strictly: a line that is neither a comment nor a sample is an error naming its line number,
because a probe that half-reads garbage would report numbers nobody measured.

Format: https://prometheus.io/docs/instrumenting/exposition_formats/ (`name{label="value",...} value [timestamp]`,
label values escape backslash, double quote and newline)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from eaglewire.errors import InputError

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*\"((?:[^\"\\]|\\.)*)\"\s*(,|\})")
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


def _unescape(text: str) -> str:
    return re.sub(r"\\[\\\"n]", lambda m: _ESCAPES[m.group(0)], text)


def _value(text: str) -> float:
    word = text.strip()
    special = {"+Inf": math.inf, "Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
    if word in special:
        return special[word]
    return float(word)


def _sample(line: str) -> Sample:
    m = _NAME.match(line)
    if not m:
        raise ValueError("no metric name")
    name, i = m.group(0), m.end()
    labels: list[tuple[str, str]] = []
    if i < len(line) and line[i] == "{":
        i += 1
        if line[i:].lstrip().startswith("}"):
            i = line.index("}", i) + 1
        else:
            while True:
                lm = _LABEL.match(line, i)
                if not lm:
                    raise ValueError("malformed labels")
                labels.append((lm.group(1), _unescape(lm.group(2))))
                i = lm.end()
                if lm.group(3) == "}":
                    break
    rest = line[i:].split()
    if not rest or len(rest) > 2:
        raise ValueError("expected a value (and an optional timestamp)")
    return Sample(name, tuple(labels), _value(rest[0]))


def parse(text: str, where: str = "/metrics") -> list[Sample]:
    """Every sample in an exposition text. Raises `InputError` naming the first malformed line."""
    out: list[Sample] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            out.append(_sample(line))
        except (ValueError, IndexError):
            raise InputError(
                f"{where} line {n}: not Prometheus text ({line[:60]!r}); is this a vLLM or SGLang metrics endpoint?"
            ) from None
    return out
