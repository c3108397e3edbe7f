"""Per-step agreement of a drafter with its target: one computation for training logs, the standalone test, the
doctor and the wiring search, so "comparable with the training log" is the same code, not two that agree.

Row r of an unrolled draft is scored at step k against the target's greedy token at row r + k. A row counts where
the data's loss mask is set. Per step k: `acc` (unconditional agreement), `cond_acc` = alpha_k (agreement given
every earlier step agreed) and the predicted chain accept length tau(K) = 1 + sum_{k<K} prod_{i<=k} alpha_i, bonus
token included (SGLang completion_tokens / verify_ct, vLLM 1 + accepted / drafts).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

TAU_CONVENTION = (
    "accept length includes the bonus token (SGLang completion_tokens/verify_ct, vLLM 1 + accepted/drafts)"
)


def predicted_tau(cond: list[float]) -> list[float]:
    """tau(K) for K = 1..len(cond): 1 + sum_{k<K} prod_{i<=k} alpha_i."""
    out, run, total = [], 1.0, 1.0
    for a in cond:
        run *= a
        total += run
        out.append(total)
    return out


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
    def tau(self) -> list[float]:
        return predicted_tau(self.cond_acc)

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
