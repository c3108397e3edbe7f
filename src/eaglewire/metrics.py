"""Agreement of a drafter with its target: one computation for training logs, the standalone test, the doctor and
the wiring search, so "comparable with the training log" is the same code, not two that agree.

Two different things, never mixed up:
- `StepCounts`, per draft step k over EVERY scored row: `acc` (unconditional agreement: what training logs) and
  `cond_acc` = alpha_k (agreement given every earlier step agreed). Row r of an unrolled draft is scored at step k
  against the target's greedy token at row r + k, where the data's loss mask is set.
- `WalkCounts`, the accept length an engine measures: the engine drafts K tokens only at the position after each
  verify, accepts the longest prefix the target agrees with and continues from there (`walk`), so it jumps through
  easy stretches K+1 tokens at a time and its drafts land on the harder positions. Mean accept length =
  1 + accepted / drafts (bonus token included: vLLM's 1 + accepted/drafts, SGLang's completion_tokens/verify_ct);
  per-position acceptance = drafts whose position i was accepted / drafts (vLLM's accepted_per_pos[i] / drafts).
  On the zoo the every-row formula 1 + sum_k prod_{i<=k} alpha_i was 9-34% above what vLLM measured; the walk is
  within 1-3%.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

TAU_CONVENTION = (
    "accept length includes the bonus token (SGLang completion_tokens/verify_ct, vLLM 1 + accepted/drafts), "
    "measured along the engine's walk: K drafts at the position after each verify"
)


@dataclass
class StepCounts:
    """Counts per draft step k, summed over rows and samples (add them with `+`)."""

    hits: list[int]  # scored rows whose step-k token equals the target's greedy token
    valid: list[int]  # scored rows at step k
    cond: list[int]  # scored rows where steps 0..k all agreed

    @classmethod
    def zeros(cls, steps: int) -> StepCounts:
        return cls([0] * steps, [0] * steps, [0] * steps)

    @property
    def steps(self) -> int:
        return len(self.hits)

    def __add__(self, other: StepCounts) -> StepCounts:
        return StepCounts(
            [a + b for a, b in zip(self.hits, other.hits, strict=True)],
            [a + b for a, b in zip(self.valid, other.valid, strict=True)],
            [a + b for a, b in zip(self.cond, other.cond, strict=True)],
        )

    @property
    def acc(self) -> list[float]:
        return [h / v if v else 0.0 for h, v in zip(self.hits, self.valid, strict=True)]

    @property
    def cond_acc(self) -> list[float]:
        out = []
        for k, c in enumerate(self.cond):
            base = self.valid[0] if k == 0 else self.cond[k - 1]
            out.append(c / base if base else 0.0)
        return out

    @property
    def rows(self) -> int:
        return self.valid[0] if self.valid else 0

    def as_list(self) -> list[float]:
        """Flat numbers (for an all-reduce across ranks); `from_list` reads them back."""
        return [float(x) for x in (*self.hits, *self.valid, *self.cond)]

    @classmethod
    def from_list(cls, values: list[float]) -> StepCounts:
        k = len(values) // 3
        ints = [round(v) for v in values]
        return cls(ints[:k], ints[k : 2 * k], ints[2 * k :])


def count_steps(draft: list[torch.Tensor], greedy: torch.Tensor, mask: torch.Tensor) -> StepCounts:
    """One sample of n rows. `draft[k][r]` is the drafter's step-k token (a target id) at row r, a guess for the
    target's greedy token `greedy[r + k]`; `mask[r]` (n entries) says whether row r + k is scored at step k."""
    n = mask.numel()
    counts = StepCounts.zeros(len(draft))
    all_ok = None
    for k, d in enumerate(draft):
        rows = n - k
        if rows <= 0:
            continue
        ok = d[:rows] == greedy[k : k + rows]
        m = mask[k : k + rows]
        all_ok = ok if all_ok is None else (all_ok[:rows] & ok)
        counts.hits[k] += int((ok & m).sum())
        counts.valid[k] += int(m.sum())
        counts.cond[k] += int((all_ok & m).sum())
    return counts


def repetition(ids: list[int], n: int = 4) -> float:
    """Share of n-grams that repeat an earlier one: a greedy continuation in a loop scores near 1."""
    grams = [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


# ---- the engine's walk ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextGate:
    """An engine that stops running the drafter once a sequence outgrows the draft's context and verifies
    placeholder drafts in its place: they are counted as drafts and (almost) never accepted, so acceptance
    collapses to 1.0 while every verify still carries k tokens. vLLM's V1 model runner (`_input_fits_in_drafter`):
    the batch's longest sequence length + k against the draft model's max_model_len, zeros drafted instead."""

    limit: int  # the draft's context (vLLM: the draft model's max_model_len)
    # the token drafted in the drafter's place; None: nothing is drafted (a plain decode step, not counted)
    placeholder: int | None = 0
    batch: bool = True  # the batch's longest sequence decides for every request in it

    def closed(self, seq_len: int, k: int) -> bool:
        """No drafter after a verify (or prefill) forward over `seq_len` tokens."""
        return seq_len + k > self.limit


@dataclass
class WalkCounts:
    """What an engine's spec-decode counters would read after walking K-token drafts (vLLM's names)."""

    k: int  # draft tokens per verify
    drafts: int = 0  # verify steps that carried drafts (vLLM num_drafts, SGLang verify_ct)
    accepted_per_pos: list[int] = field(default_factory=list)  # drafts whose position i was accepted
    per_sample: list[tuple[int, int]] = field(default_factory=list)  # (drafts, accepted tokens) per request

    def __post_init__(self) -> None:
        if not self.accepted_per_pos:
            self.accepted_per_pos = [0] * self.k

    @property
    def accepted(self) -> int:
        return sum(self.accepted_per_pos)

    @property
    def tau(self) -> float:
        """Mean accept length, bonus token included (0.0 with no draft walked)."""
        return 1 + self.accepted / self.drafts if self.drafts else 0.0

    @property
    def per_position(self) -> list[float]:
        return [a / self.drafts if self.drafts else 0.0 for a in self.accepted_per_pos]

    def __add__(self, other: WalkCounts) -> WalkCounts:
        return WalkCounts(
            self.k,
            self.drafts + other.drafts,
            [a + b for a, b in zip(self.accepted_per_pos, other.accepted_per_pos, strict=True)],
            self.per_sample + other.per_sample,
        )

    def to_dict(self) -> dict:
        return {
            "draft_tokens": self.k,
            "accept_length": round(self.tau, 4),
            "per_position_acceptance": [round(x, 4) for x in self.per_position],
            "drafts": self.drafts,
            "accepted_tokens": self.accepted,
        }


def walk_span(loss_mask: torch.Tensor) -> tuple[int, int] | None:
    """(P, E): the first token an engine emits (the prefill's, never drafted) and the last it emits, from the mask
    of a target's continuation; tokens after E only score the final drafts (an engine counts every token of a
    verify, also past max_tokens)."""
    idx = torch.nonzero(loss_mask).flatten()
    if idx.numel() == 0:
        return None
    # a mask over the whole sequence (training data scoring every token): the prompt is at least its first token
    first, last = max(1, int(idx[0])), int(idx[-1])
    return (first, last) if first <= last else None


def walk(
    draft: list[list[int]], path: list[int], span: tuple[int, int], k: int, gate: ContextGate | None = None
) -> WalkCounts:
    """The engine's walk over one request. `draft[j][r]` is the drafter's step-j token at row r (a guess for
    `path[r + j]`, the committed token at position r + j + 2): row r drafts after token r + 1 was committed.
    Starting after the prefill's token P, each verify drafts k tokens, accepts the longest prefix the target agrees
    with, commits it plus the bonus token, until the token E is committed. With a `gate`, a verify whose request
    has outgrown the draft's context carries the gate's placeholder drafts instead (`ContextGate`)."""
    return _walk(span, k, _accepted(draft, path, k), gate)


def walk_batch(
    requests: list[tuple[list[list[int]], list[int], tuple[int, int]]],
    k: int,
    gate: ContextGate | None = None,
) -> WalkCounts:
    """The same walk over requests served together in one batch from their first step, in lockstep (one verify
    each per engine step, a finished request leaving the batch): what the engine counts where the gate reads the
    batch's longest sequence (vLLM: one long request stops drafting for every request beside it). Without a
    gate it equals the sum of the requests' own walks."""
    out = WalkCounts(k)
    states = []
    for draft, path, span in requests:
        states.append({"accepted": _accepted(draft, path, k), "last": span[0], "seq": span[0], "end": span[1],
                       "counts": WalkCounts(k)})  # fmt: skip
    running = [s for s in states if s["last"] < s["end"]]
    while running:
        longest = max(s["seq"] for s in running)
        for s in running:
            closed = gate is not None and gate.closed(longest if gate.batch else s["seq"], k)
            if not _verify(s, k, s["accepted"], gate if closed else None):
                s["end"] = s["last"]  # the continuation ends here
        running = [s for s in running if s["last"] < s["end"]]
    for s in states:
        s["counts"].per_sample.append((s["counts"].drafts, s["counts"].accepted))
        out = out + s["counts"]
    return out


def _accepted(draft: list[list[int]], path: list[int], k: int):
    def accepted(r: int, gated: ContextGate | None = None) -> int | None:
        if r >= len(draft[0]):
            return None  # the continuation ends here: nothing left to draft against
        a = 0
        while a < k and r < len(draft[a]) and r + a < len(path):
            guess = gated.placeholder if gated is not None else draft[a][r]
            if guess != path[r + a]:
                break
            a += 1
        return a

    return accepted


def walk_lengths(accept_length: list[int], span: tuple[int, int], depth: int) -> WalkCounts:
    """The same walk for a drafter whose accept length per row is known (SGLang's tree, bonus included, at most
    `depth` + 1); the accepted path's depth i counts at position i."""
    return _walk(span, depth, lambda r: int(accept_length[r]) - 1 if r < len(accept_length) else None)


def _walk(span: tuple[int, int], k: int, accepted, gate: ContextGate | None = None) -> WalkCounts:
    """Draft at row last - 1 (after the last committed token), commit the accepted tokens and the bonus, repeat."""
    state = {"last": span[0], "seq": span[0], "counts": WalkCounts(k)}
    while state["last"] < span[1]:
        closed = gate is not None and gate.closed(state["seq"], k)
        if not _verify(state, k, accepted, gate if closed else None):
            break
    out = state["counts"]
    out.per_sample.append((out.drafts, out.accepted))
    return out


def _verify(state: dict, k: int, accepted, gate: ContextGate | None) -> bool:
    """One engine step after the last committed token: a verify of k drafts (the drafter's, or a closed gate's
    placeholders), or a plain decode where a closed gate drafts nothing; False where the continuation has ended.
    `seq` becomes that forward's sequence length (every token before the last committed one, it, and the drafts):
    what the engine compares with the draft's context before the next draft."""
    if gate is not None and gate.placeholder is None:
        state["seq"] = state["last"] + 1
        state["last"] += 1
        return True
    a = accepted(state["last"] - 1, gate) if gate is not None else accepted(state["last"] - 1)
    if a is None:
        return False
    c = state["counts"]
    c.drafts += 1
    for i in range(a):
        c.accepted_per_pos[i] += 1
    state["seq"] = state["last"] + 1 + k
    state["last"] += a + 1
    return True
