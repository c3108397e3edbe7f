"""EAGLE-3 training-time test (TTT): the loss, the held-out metrics, and the drafter a run starts from.

The recipe (docs/engine-facts.md section 4): per step k = 0..K-1 the drafter gets the true next token (teacher
forcing) and its OWN hidden state from step k-1; the step-k attention sees the causal step-0 prefix plus the same
position of earlier steps; RoPE is offset by k. Targets are the target's distribution restricted to the draft
vocabulary (positions whose target top-1 is outside it get no loss); step k is weighted decay^k (0.8).

Row t of a sample (ids x, taps h, target logits z): step 0 takes (h_t, x_{t+1}) and is scored against z_{t+1}
(the distribution of x_{t+2}); step k takes x_{t+1+k} and is scored against z_{t+1+k}. The agreement counts are
`metrics.count_steps`, the same code the standalone test uses, so training logs and `eaglewire test` agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglewire.capture import CapturedSample, SampleSource, TargetHead
from eaglewire.drafter import Eagle3Drafter, init_weights
from eaglewire.formats import DrafterArch
from eaglewire.formats.vocab import build_maps, draft_to_target
from eaglewire.metrics import StepCounts, count_steps
from eaglewire.taps import Wiring
from eaglewire.targets import TargetInfo


@dataclass
class TTTLoss:
    loss: torch.Tensor  # summed, step-weighted soft cross-entropy over scored rows
    tokens: int  # scored step-0 rows: the normaliser
    counts: StepCounts


@dataclass
class StepMetrics:
    """TTT metrics, what EAGLE/SpecForge/speculators log as acc_k (here also the conditional alpha_k)."""

    loss: float  # per scored token
    acc: list[float]
    cond_acc: list[float]
    tokens: int

    @classmethod
    def of(cls, loss_sum: float, tokens: int, counts: StepCounts) -> StepMetrics:
        return cls(loss_sum / max(1, tokens), counts.acc, counts.cond_acc, tokens)


def ttt_loss(
    model: Eagle3Drafter,
    sample: CapturedSample,
    wiring: Wiring,
    head: TargetHead,
    steps: int,
    decay: float,
    bf16: bool = False,
) -> TTTLoss | None:
    """The TTT loss of one sample and its per-step agreement counts (None for samples under 3 tokens)."""
    ids = sample.input_ids
    T = ids.numel()
    if T < 3:
        return None
    aux = sample.aux(wiring)[: T - 1][None].to(model.fc.weight.dtype)
    targets = model.target_ids()
    with torch.no_grad():
        z = sample.target_logits(head)[1:T]  # row r predicts x_{r+2}
        greedy = z.argmax(-1)
        p = torch.softmax(z[:, targets], -1)  # restricted to the draft vocabulary
        in_vocab = torch.zeros(z.shape[-1], dtype=torch.bool, device=z.device)
        in_vocab[targets] = True
        in_vocab = in_vocab[greedy]
    mask = sample.loss_mask[2:T]  # predicted token of row r (step 0) is x_{r+2}
    with torch.autocast(aux.device.type, dtype=torch.bfloat16, enabled=bf16):
        out = model.unroll(aux, ids[1:T][None], steps, feed="teacher")
    total = torch.zeros((), device=aux.device)
    n = T - 2  # rows with a predicted token
    drafted = []
    for k, logits in enumerate(out.logits):
        rows = max(0, n - k)
        lg = logits[0, :rows].float()
        scored = mask[k : k + rows] & in_vocab[k : k + rows]
        ce = -(p[k : k + rows] * torch.log_softmax(lg, -1)).sum(-1)
        total = total + (decay**k) * (ce * scored).sum()
        drafted.append(model.to_target(lg.detach().argmax(-1)))
    return TTTLoss(total, int(mask[:n].sum()), count_steps(drafted, greedy, mask))


@torch.no_grad()
def evaluate_ttt(
    model: Eagle3Drafter,
    source: SampleSource,
    indices: list[int],
    wiring: Wiring,
    head: TargetHead,
    steps: int,
    decay: float,
) -> StepMetrics:
    """Teacher-forced TTT metrics on held-out samples."""
    model.eval()
    loss, tokens, counts = 0.0, 0, StepCounts.zeros(steps)
    for i in indices:
        r = ttt_loss(model, source[i], wiring, head, steps, decay)
        if r is None:
            continue
        loss += float(r.loss)
        tokens += r.tokens
        counts = counts + r.counts
    model.train()
    return StepMetrics.of(loss, tokens, counts)


@dataclass
class DrafterShape:
    """What a fresh drafter copies from its target besides the TargetInfo (from the target's config)."""

    rope: dict
    max_position_embeddings: int
    intermediate_size: int | None = None
    num_heads: int | None = None
    num_kv_heads: int | None = None


def new_drafter(
    cfg,
    target: TargetInfo,
    wiring: Wiring,
    counts: torch.Tensor,
    head: TargetHead,
    embed: torch.Tensor,
    shape: DrafterShape,
) -> tuple[Eagle3Drafter, torch.Tensor]:
    """A fresh drafter shaped like the target's layers; embedding copied (frozen), lm_head from the target rows
    of the draft vocabulary (the most frequent loss-masked tokens). Returns (model, t2d)."""
    h = target.hidden_size
    heads = cfg.num_heads or shape.num_heads or max(1, h // 64)
    dv = cfg.draft_vocab_size or target.vocab_size
    arch = DrafterArch(
        hidden_size=h,
        intermediate_size=cfg.intermediate_size or shape.intermediate_size or 4 * h,
        num_layers=cfg.num_layers,
        num_heads=heads,
        num_kv_heads=cfg.num_kv_heads or shape.num_kv_heads or heads,
        head_dim=h // heads,
        rms_norm_eps=1e-6,
        vocab_size=target.vocab_size,
        draft_vocab_size=dv,
        target_hidden_size=h,
        n_aux=len(wiring),
        max_position_embeddings=shape.max_position_embeddings,
        rope_parameters=dict(shape.rope),
        norm_before_residual=cfg.norm_before_residual,
    )
    model = init_weights(Eagle3Drafter(arch), seed=cfg.seed)
    d2t, t2d = build_maps(counts, dv)
    with torch.no_grad():
        model.embed_tokens.weight.copy_(embed)
        model.d2t.copy_(d2t)
        model.lm_head.weight.copy_(head.lm_head[draft_to_target(d2t, dv)])
    model.embed_tokens.weight.requires_grad_(False)
    return model, t2d


def token_counts(source: SampleSource, indices: list[int], vocab: int) -> torch.Tensor:
    """Loss-masked token counts (the draft vocabulary's ranking), without running the target when possible."""
    counts = torch.zeros(vocab, dtype=torch.long)
    for i in indices:
        s = source.sample_meta(i)
        counts += torch.bincount(s.input_ids[s.loss_mask], minlength=vocab)[:vocab]
    return counts
