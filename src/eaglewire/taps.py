"""Taps and wirings: the one convention eaglewire speaks internally.

A tap `h<k>` indexes HF's `output_hidden_states` tuple: `h0` is the embedding output (the input of decoder layer
0), `h<k>` for 1 <= k <= L-1 the output of decoder layer k-1 (the residual stream), and `h<L>` the output of the
last decoder layer *before* the final norm (engines capture pre-norm; HF's own tuple holds the post-norm tensor
there). A wiring is the ordered list of taps whose concatenation feeds the drafter's fc. Every framework's own
numbering is translated to taps at the edges (see `conventions.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from eaglewire.errors import InputError

_TAP = re.compile(r"^h(\d+)$")
_HUMAN = re.compile(r"^(?:embed(?:ding)?|out\(\s*l?(\d+)\s*\))$", re.IGNORECASE)


@dataclass(frozen=True, order=True)
class Tap:
    """One target hidden state, `h<index>` (see module docstring)."""

    index: int

    def __post_init__(self) -> None:
        if self.index < 0:
            raise InputError(f"tap h{self.index} is negative; taps run from h0 (embeddings) to h<L>")

    def __str__(self) -> str:
        return f"h{self.index}"

    def human(self, num_layers: int | None = None) -> str:
        """`embed`, `out(L2)` (output of 0-based decoder layer 2), with `, pre-norm` marked for the last layer."""
        if self.index == 0:
            return "embed"
        text = f"out(L{self.index - 1})"
        if num_layers is not None and self.index == num_layers:
            text = f"out(L{self.index - 1}, pre-norm)"
        return text

    @classmethod
    def parse(cls, text: str) -> Tap:
        t = text.strip()
        m = _TAP.match(t.lower())
        if m:
            return cls(int(m.group(1)))
        m = _HUMAN.match(t)
        if m:
            return cls(0 if m.group(1) is None else int(m.group(1)) + 1)
        raise InputError(f"cannot read tap {text!r}: write h<k> (h0 = embeddings), 'embed' or 'out(L<k>)'")


@dataclass(frozen=True)
class Wiring:
    """The ordered taps feeding the drafter's fc. Engines concatenate in ascending order, so order is kept as
    given but `served()` (ascending) is what a serving engine actually builds."""

    taps: tuple[Tap, ...]

    def __post_init__(self) -> None:
        if not self.taps:
            raise InputError("a wiring needs at least one tap")
        if len(set(self.taps)) != len(self.taps):
            raise InputError(f"wiring {self} repeats a tap; each tap may feed fc once")

    @classmethod
    def of(cls, indices: Iterable[int]) -> Wiring:
        return cls(tuple(Tap(int(i)) for i in indices))

    @classmethod
    def parse(cls, text: str) -> Wiring:
        """`h0,h3,h31` or `embed, out(L2), out(L30)` (commas or spaces)."""
        parts = [p for p in re.split(r"[,\s]+(?![^()]*\))", text.strip()) if p]
        if not parts:
            raise InputError("empty wiring: write e.g. h0,h3,h31")
        return cls(tuple(Tap.parse(p) for p in parts))

    def __str__(self) -> str:
        return ",".join(str(t) for t in self.taps)

    def __iter__(self) -> Iterator[Tap]:
        return iter(self.taps)

    def __len__(self) -> int:
        return len(self.taps)

    @property
    def indices(self) -> tuple[int, ...]:
        return tuple(t.index for t in self.taps)

    def human(self, num_layers: int | None = None) -> str:
        return ", ".join(t.human(num_layers) for t in self.taps)

    def served(self) -> Wiring:
        """Ascending order: how SGLang and vLLM concatenate whatever order the config lists."""
        return Wiring(tuple(sorted(self.taps)))

    def same_set(self, other: Wiring) -> bool:
        return set(self.taps) == set(other.taps)

    def validate(self, num_layers: int) -> Wiring:
        """Raise if a tap does not exist on an L-layer target (h0..h<L>)."""
        bad = [t for t in self.taps if t.index > num_layers]
        if bad:
            raise InputError(
                f"wiring {self}: {', '.join(map(str, bad))} out of range for a {num_layers}-layer target "
                f"(taps run h0..h{num_layers})"
            )
        return self


def default_wiring(num_layers: int) -> Wiring:
    """h{2, L//2, L-3}: where every framework's default lands (docs/conventions.md section (d))."""
    return Wiring.of(sorted({2, num_layers // 2, num_layers - 3}))
