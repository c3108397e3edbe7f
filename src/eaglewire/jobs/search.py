"""Wiring search: which taps was this drafter trained on?

fc is linear, fc(cat(a, b, c)) = W1 a + W2 b + W3 c, so every tap is projected through every slot's block once
(P[j][k] = W_j h_k) and a candidate wiring costs one sum plus one step-0 drafter pass. Candidates: the declared,
trained-as-inferred and default taps with every convention's off-by-one variant, then coordinate search slot by
slot over all taps. The score is the step-0 cross-entropy to the target's distribution (continuous, so it
separates candidates that top-1 accuracy cannot), with accuracy reported beside it.

Adjacent taps of a shallow target are nearly interchangeable (docs/observations.md), so the result is the best
wiring plus every candidate statistically indistinguishable from it (paired bootstrap over samples), and the
accuracy the served wiring loses against the best with a confidence interval.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch

from eaglewire.capture import CapturedSample, TargetHead
from eaglewire.drafter import Eagle3Drafter
from eaglewire.errors import InputError
from eaglewire.metrics import count_steps
from eaglewire.taps import Wiring


@dataclass
class Candidate:
    wiring: Wiring
    ce: float
    acc0: float
    per_sample: list[tuple[float, int, int]] = field(default_factory=list, repr=False)  # (CE sum, hits, rows)


@dataclass
class SearchResult:
    best: Candidate
    ranked: list[Candidate]  # best first
    tied: list[Candidate]  # indistinguishable from the best (95% bootstrap interval of the CE gap includes 0)
    heatmap: torch.Tensor  # [slots, L+1] acc0 with slot j set to tap k, other slots at the best wiring
    heatmap_ce: torch.Tensor
    evaluated: int
    served: Candidate | None = None
    served_gap: tuple[float, float, float] | None = None  # acc0(best) - acc0(served): mean, 2.5%, 97.5%

    def to_dict(self) -> dict:
        def c(x: Candidate) -> dict:
            return {"taps": str(x.wiring), "ce": round(x.ce, 5), "acc0": round(x.acc0, 4)}

        return {
            "best": c(self.best),
            "top": [c(x) for x in self.ranked[:10]],
            "indistinguishable": [c(x) for x in self.tied],
            "candidates_evaluated": self.evaluated,
            "served": c(self.served) if self.served else None,
            "served_acc0_gap": None
            if self.served_gap is None
            else {
                "mean": round(self.served_gap[0], 4),
                "ci95": [round(self.served_gap[1], 4), round(self.served_gap[2], 4)],
            },
            "heatmap_acc0": [[round(v, 4) for v in row] for row in self.heatmap.tolist()],
        }


class Projections:
    """P[j][k] = slot j's fc block applied to tap k (the fc input norms handled exactly), for all samples at
    once: samples are right-padded to one length, which a causal drafter pass leaves exact for real rows."""

    def __init__(self, model: Eagle3Drafter, samples: list[CapturedSample], taps: list[int]):
        self.model, self.taps = model, taps
        arch = model.arch
        W = model.fc.weight.detach().float()
        dev = W.device
        hd = arch.target_hidden_size
        self.n = arch.n_aux
        self.blocks = [W[:, j * hd : (j + 1) * hd] for j in range(self.n)]
        self.bias = model.fc.bias.detach().float() if model.fc.bias is not None else None
        self.lengths = [s.input_ids.numel() - 1 for s in samples]  # drafter rows per sample
        B, R = len(samples), max(self.lengths)
        self.input_ids = torch.zeros(B, R, dtype=torch.long, device=dev)
        for i, s in enumerate(samples):
            self.input_ids[i, : self.lengths[i]] = s.input_ids[1:]
        self.proj: dict[tuple[int, int], torch.Tensor] = {}  # [B, R, H]
        self.sq: dict[int, torch.Tensor] = {}  # per-tap sum of squares [B, R, 1] (for norm_before_fc)
        with torch.no_grad():
            for k in taps:
                h = torch.zeros(B, R, hd, device=dev)
                for i, s in enumerate(samples):
                    h[i, : self.lengths[i]] = s.hidden[k][: self.lengths[i]].to(dev, torch.float32)
                self.sq[k] = h.pow(2).sum(-1, keepdim=True)
                for j in range(self.n):
                    hj = h
                    if model.fc_norm is not None:
                        hj = model.fc_norm[j](h)
                    if model.input_norm is not None:
                        hj = hj * model.input_norm.weight[j * hd : (j + 1) * hd].float()
                    self.proj[(j, k)] = hj @ self.blocks[j].T

    def fc_out(self, wiring: tuple[int, ...]) -> torch.Tensor:
        g = sum(self.proj[(j, k)] for j, k in enumerate(wiring))
        if self.model.input_norm is not None:  # RMS over the whole concatenation
            ms = sum(self.sq[k] for k in wiring) / (self.n * self.model.arch.target_hidden_size)
            g = g * torch.rsqrt(ms + self.model.input_norm.eps)
        if self.bias is not None:
            g = g + self.bias
        return g


@dataclass
class _Reference:
    """What the target says at every scored row of one sample (computed once for all candidates)."""

    p: torch.Tensor  # target distribution over the draft vocab
    greedy: torch.Tensor  # target's greedy token (target ids)
    mask: torch.Tensor  # scored rows


def _references(
    model: Eagle3Drafter, samples: list[CapturedSample], head: TargetHead | None
) -> list[_Reference]:
    targets = model.target_ids()
    dev = targets.device
    head = head.to(dev) if head is not None else None
    refs = []
    for s in samples:
        T = s.input_ids.numel()
        z = s.to(dev).target_logits(head)[1 : T - 1]
        refs.append(_Reference(torch.softmax(z[:, targets], -1), z.argmax(-1), s.loss_mask[2:T].to(dev)))
    return refs


@torch.no_grad()
def _score(
    model: Eagle3Drafter, samples, proj: Projections, refs: list[_Reference], wiring: tuple[int, ...]
) -> Candidate:
    """Step-0 CE and top-1 agreement with fc's output summed from the projections (one batched drafter pass)."""
    ids = proj.input_ids
    positions = torch.arange(ids.shape[1], device=ids.device).expand(ids.shape[0], -1)
    logits, _ = model.step(ids, proj.fc_out(wiring).to(next(model.parameters()).dtype), positions)
    per = []
    for i, ref in enumerate(refs):
        lg = logits[i, : proj.lengths[i] - 1].float()
        m = ref.mask
        ce = -(ref.p * torch.log_softmax(lg, -1)).sum(-1)
        counts = count_steps([model.to_target(lg.argmax(-1))], ref.greedy, m)
        per.append((float(ce[m].sum()), counts.hits[0], counts.valid[0]))
    rows = sum(x[2] for x in per) or 1
    return Candidate(Wiring.of(wiring), sum(x[0] for x in per) / rows, sum(x[1] for x in per) / rows, per)


def search(
    model: Eagle3Drafter,
    samples: list[CapturedSample],
    num_layers: int,
    seeds: list[Wiring],
    head: TargetHead | None = None,
    served: Wiring | None = None,
    rounds: int = 2,
    bootstrap: int = 1000,
    seed: int = 0,
) -> SearchResult:
    n = model.arch.n_aux
    # every tap the samples hold (all of h0..h_L for a capture; a dump holds only the taps it was written with)
    taps = sorted(set.intersection(*(set(s.hidden) for s in samples))) if samples else []
    if len(taps) < n:
        raise InputError(
            f"the wiring search needs {n} taps per sample; the data holds {Wiring.of(taps) if taps else 'none'}"
        )
    model.eval()
    proj = Projections(model, samples, taps)
    refs = _references(model, samples, head)
    cache: dict[tuple[int, ...], Candidate] = {}

    def score(w: tuple[int, ...]) -> Candidate:
        w = tuple(sorted(w))
        if w not in cache:
            cache[w] = _score(model, samples, proj, refs, w)
        return cache[w]

    spread = Wiring.of(sorted({round(i * num_layers / max(1, n - 1)) for i in range(n)}))
    starts = set()
    for s in [*seeds, spread]:
        base = tuple(sorted(s.indices))
        if len(base) != n:
            continue
        for delta in itertools.product((-1, 0, 1), repeat=n) if n <= 4 else [(0,) * n]:
            w = tuple(min(num_layers, max(0, t + d)) for t, d in zip(base, delta, strict=True))
            if len(set(w)) == n and set(w) <= set(taps):
                starts.add(w)
    if not starts and len(taps) >= n:
        starts.add(tuple(taps[:n]))
    for s in starts:
        score(s)
    best = min(cache.values(), key=lambda c: c.ce).wiring.indices
    for _ in range(rounds):
        improved = False
        for j in range(n):
            for k in taps:
                w = list(best)
                w[j] = k
                if len(set(w)) == n:
                    score(tuple(w))
            new = min(cache.values(), key=lambda c: c.ce).wiring.indices
            if new != best:
                best, improved = new, True
        if not improved:
            break
    ranked = sorted(cache.values(), key=lambda c: c.ce)
    top = ranked[0]
    heat = torch.full((n, num_layers + 1), float("nan"))
    heat_ce = torch.full((n, num_layers + 1), float("nan"))
    for j in range(n):
        for k in taps:
            w = list(top.wiring.indices)
            w[j] = k
            if len(set(w)) == n:
                c = score(tuple(w))
                heat[j, k], heat_ce[j, k] = c.acc0, c.ce
    ranked = sorted(cache.values(), key=lambda c: c.ce)
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, len(samples), (bootstrap, len(samples)), generator=g)
    tied = [c for c in ranked[1:20] if _gap_ci(top, c, idx, "ce")[1] <= 0.0]
    result = SearchResult(top, ranked, [top, *tied], heat, heat_ce, len(cache))
    if served is not None and len(served) == n and set(served.indices) <= set(taps):
        result.served = score(tuple(sorted(served.indices)))
        result.served_gap = _gap_ci(top, result.served, idx, "acc")
    return result


def _gap_ci(a: Candidate, b: Candidate, idx: torch.Tensor, metric: str) -> tuple[float, float, float]:
    """Paired bootstrap over samples: (b - a) for CE (positive = b worse), (a - b) for acc0 (positive = b worse)."""
    col = 0 if metric == "ce" else 1
    va = torch.tensor([x[col] for x in a.per_sample], dtype=torch.float64)
    vb = torch.tensor([x[col] for x in b.per_sample], dtype=torch.float64)
    rows = torch.tensor([x[2] for x in a.per_sample], dtype=torch.float64)
    diff = vb - va if metric == "ce" else va - vb
    boot = diff[idx].sum(1) / rows[idx].sum(1).clamp(min=1)
    mean = float(diff.sum() / rows.sum().clamp(min=1))
    return mean, float(torch.quantile(boot, 0.025)), float(torch.quantile(boot, 0.975))
