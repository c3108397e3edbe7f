"""The standalone drafter test: the accept length an engine would measure, and per-step accuracy, no engine.

Two measurements on the same drafter and taps:
- chain: on the target's own greedy continuations of prompts, the drafter drafts as an engine's chain does (its
  own hidden state and its own proposed tokens fed back, the target's taps for everything committed), and the
  engine's walk is replayed (metrics.walk): K drafts at the position after each verify, the longest agreeing prefix
  accepted, the next drafts after the bonus token. That gives the mean accept length (bonus included) and the
  per-position acceptance an engine's counters read (vLLM: accepted_per_pos[i] / drafts), for K = 1..steps, and
  SGLang's tree walked the same way (docs/sglang-tree.md). Per-step agreement over every position (`acc`,
  `cond_acc`) is reported beside it, never as an accept length.
- teacher-forced: on the data as given, true tokens fed at each step, own hidden state fed back: the acc_k that
  EAGLE, SpecForge, speculators and `eaglewire train` log, so it is comparable with recorded training metrics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from eaglewire.capture import CapturedSample, TargetHead
from eaglewire.data import Sample, SampleLoader
from eaglewire.drafter import Eagle3Drafter
from eaglewire.dumps import describe, open_dump, require_taps
from eaglewire.errors import InputError
from eaglewire.jobs.pair import load_pair
from eaglewire.jobs.search import SearchResult, search
from eaglewire.jobs.tree import TreeBuilder, greedy_accept
from eaglewire.metrics import (
    TAU_CONVENTION,
    ContextGate,
    StepCounts,
    WalkCounts,
    count_steps,
    walk,
    walk_lengths,
    walk_span,
)
from eaglewire.taps import Wiring, default_wiring
from eaglewire.targets import LoadedTarget, forward_taps


@dataclass(frozen=True)
class TreeSetting:
    steps: int  # speculative_num_steps
    topk: int  # speculative_eagle_topk
    draft_tokens: int  # speculative_num_draft_tokens (root included)

    def __str__(self) -> str:
        return f"steps={self.steps} topk={self.topk} draft_tokens={self.draft_tokens}"


def parse_tree(text: str) -> TreeSetting:
    """`steps,topk,draft_tokens`, e.g. 5,4,8."""
    try:
        return TreeSetting(*(int(x) for x in text.split(",")))
    except (TypeError, ValueError):
        raise InputError(f"--tree {text}: write steps,topk,draft_tokens e.g. 5,4,8") from None


def parse_ids(text: str | None, flag: str = "--dump-ids") -> list[int] | None:
    """A comma-separated id list (`--dump-ids 2,4,5,8`)."""
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise InputError(f"{flag} {text!r}: write comma-separated integers, e.g. 2,4,5,8") from None


def parse_sampling(temperature: float, top_p: float = 1.0, seeds: int = 4) -> Sampling | None:
    """--temperature/--top-p/--seeds: None for greedy."""
    if temperature < 0 or not 0 < top_p <= 1 or seeds < 1:
        raise InputError(
            f"--temperature {temperature} --top-p {top_p} --seeds {seeds}: need temperature >= 0, 0 < top-p <= 1, "
            "seeds >= 1"
        )
    return Sampling(temperature, top_p, seeds) if temperature > 0 else None


# SGLang's own automatic choices ((5, 4, 8) for Llama/Grok targets, (3, 1, 4) for the rest:
# _auto_choose_speculative_params) and the 5-step chain; the chains come free from the chain walk. More: --tree.
DEFAULT_TREES = (TreeSetting(3, 1, 4), TreeSetting(5, 1, 6), TreeSetting(5, 4, 8))


@dataclass
class Evaluation:
    wiring: str
    mode: str  # "chain" | "teacher"
    counts: StepCounts  # per-step agreement over every scored row (metrics.py): acc, cond_acc
    ce: float  # step-0 cross-entropy to the target's distribution over the draft vocab (nats)
    tree: dict[str, float] = field(
        default_factory=dict
    )  # setting -> mean accept length along the engine's walk
    walks: list[WalkCounts] = field(default_factory=list)  # chain: the engine's walk with K = 1..steps drafts
    # chain with a context gate: the same walks without it (what the release serves once the drafter's context is
    # raised; SGLang's chains are walked from these)
    ungated: list[WalkCounts] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return self.counts.steps

    @property
    def acc(self) -> list[float]:
        return self.counts.acc

    @property
    def cond_acc(self) -> list[float]:
        return self.counts.cond_acc

    @property
    def tau(self) -> list[float]:
        """Mean accept length along the engine's walk with k+1 draft tokens (chain mode; empty when teacher-forced:
        an accept length exists only where the target's own continuation is walked)."""
        return [w.tau for w in self.walks]

    @property
    def per_position(self) -> list[float]:
        """Per-position acceptance as vLLM counts it (accepted at position i / drafts), with `steps` drafts."""
        return self.walks[-1].per_position if self.walks else []

    @property
    def rows(self) -> int:
        return self.counts.rows

    def to_dict(self) -> dict:
        return {
            "wiring": self.wiring,
            "mode": self.mode,
            "steps": self.steps,
            "acc": [round(x, 4) for x in self.acc],
            "cond_acc": [round(x, 4) for x in self.cond_acc],
            "acc_convention": "per draft step over every scored position (what training logs); not an accept length",
            "predicted_tau": [round(x, 4) for x in self.tau] if self.walks else None,
            "walks": [w.to_dict() for w in self.walks],
            "rows": self.rows,
            "ce": None if math.isnan(self.ce) else round(self.ce, 5),
            "tree_accept_length": {k: round(v, 4) for k, v in self.tree.items()},
            "convention": TAU_CONVENTION,
        }


# ---- data ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sampling:
    """Continuations sampled from the target instead of greedy ones (temperature > 0). Engines draft
    deterministically (argmax chains, top-k trees) and verify target-only: a draft is accepted with the target's
    probability of it, and the committed token is then distributed as the target's, so along a continuation
    sampled from the target a draft is accepted exactly when it equals the sampled token. The walk over `seeds`
    sampled continuations per prompt is therefore the engine's accept length measured over seeds."""

    temperature: float
    top_p: float = 1.0
    seeds: int = 4

    def describe(self) -> str:
        return (
            f"measured over {self.seeds} continuations per prompt sampled from the target (temperature "
            f"{self.temperature}, top-p {self.top_p}); a deterministic draft is accepted iff it equals the sampled "
            "token (vLLM's and SGLang's target-only rejection sampling)"
        )


@torch.no_grad()
def greedy_continuations(
    target: LoadedTarget,
    samples: list[Sample],
    prompt_len: int,
    new_tokens: int,
    extra: int = 0,
    sampling: Sampling | None = None,
) -> list[Sample]:
    """prompt (the first prompt_len tokens of each sample) + the target's greedy continuation of new_tokens tokens,
    which is exactly what a greedy serving engine verifies against (the loss mask marks it), + `extra` more that
    are not masked: an engine's last verify checks all its drafts, also those past max_tokens. With `sampling`,
    `seeds` sampled continuations per prompt instead (seeded: the same on every run)."""
    out = []
    eos = getattr(target.tokenizer, "eos_token_id", None) if target.tokenizer is not None else None
    draws = [None] if sampling is None else list(range(sampling.seeds))
    for i, s in enumerate(samples):
        prompt = s.input_ids[:prompt_len][None].to(target.device)
        for seed in draws:
            kwargs: dict = {"do_sample": False}
            if sampling is not None:
                torch.manual_seed(1000 * i + seed)
                kwargs = {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p,
                          "top_k": 0}  # fmt: skip
            gen = target.model.generate(
                prompt, max_new_tokens=new_tokens + extra, pad_token_id=eos, eos_token_id=None, **kwargs
            )
            ids = gen[0].cpu()
            mask = torch.zeros(ids.numel(), dtype=torch.bool)
            mask[prompt.shape[1] : prompt.shape[1] + new_tokens] = True
            out.append(Sample(ids, mask, s.source))
    return out


def captured(target: LoadedTarget, samples: list[Sample], taps: list[int]) -> list[CapturedSample]:
    """Run the target once per sample, keeping the taps asked for and the logits."""
    L = target.info.num_layers
    keep = sorted(set(taps) | {L})
    out = []
    for s in samples:
        hidden, logits = forward_taps(target, s.input_ids[None], keep)
        out.append(
            CapturedSample(
                s.input_ids,
                s.loss_mask,
                {t: h[0].float() for t, h in zip(keep, hidden, strict=True)},
                logits[0].float(),
            )
        )
    return out


# ---- scoring --------------------------------------------------------------------------------------------------


@torch.no_grad()
def evaluate(
    model: Eagle3Drafter,
    samples: list[CapturedSample],
    wiring: Wiring,
    steps: int = 5,
    mode: str = "chain",
    head: TargetHead | None = None,
    trees: tuple[TreeSetting, ...] = (),
    aux_override=None,
    gate: ContextGate | None = None,
) -> Evaluation:
    """Per-step acceptance of `model` fed `wiring` on `samples` (see module docstring for the two modes).
    `aux_override(i, sample) -> [T, n*H]` replaces the concatenated taps (the wiring search uses it). Samples and
    head move to the drafter's device one sample at a time. `gate`: the engine stops drafting past the draft's
    context (metrics.ContextGate), walked one request at a time."""
    model.eval()
    device = model.fc.weight.device
    head = head.to(device) if head is not None else None
    targets = model.target_ids()
    feed = "own" if mode == "chain" else "teacher"
    counts = StepCounts.zeros(steps)
    ce_sum, ce_n = 0.0, 0
    walks = [WalkCounts(k) for k in range(1, steps + 1)] if mode == "chain" else []
    plain = list(walks)  # the walks without the gate (where there is one)
    tree_walks = {str(t): WalkCounts(t.steps) for t in trees}
    for i, s in enumerate(samples):
        T = s.input_ids.numel()
        if T < 3:
            continue
        s = s.to(device)
        aux = (aux_override(i, s) if aux_override is not None else s.aux(wiring))[: T - 1][None]
        aux = aux.to(model.fc.weight.dtype)
        z = s.target_logits(head)[1:T]
        g = z.argmax(-1)  # g[r] = target's greedy token at position r+2
        mask = s.loss_mask[2:T]
        un = model.unroll(aux, s.input_ids[1:T][None], steps, feed=feed)
        logits = [lg[0, : max(0, T - 2 - k)].float() for k, lg in enumerate(un.logits)]
        drafted = [model.to_target(lg.argmax(-1)) for lg in logits]
        counts = counts + count_steps(drafted, g, mask)
        p = torch.softmax(z[: T - 2][:, targets], -1)
        ce = -(p * torch.log_softmax(logits[0], -1)).sum(-1)
        ce_sum += float(ce[mask].sum())
        ce_n += int(mask.sum())
        span = walk_span(s.loss_mask) if mode == "chain" else None
        if span is not None:
            # the committed path: the continuation's own tokens (the greedy ones, or a sampled continuation)
            path = s.input_ids[2:T]
            rows = [d.tolist() for d in drafted]
            walks = [w + walk(rows[: w.k], path.tolist(), span, w.k, gate) for w in walks]
            if gate is not None:  # SGLang's chains are walked as SGLang drafts: no gate
                plain = [w + walk(rows[: w.k], path.tolist(), span, w.k) for w in plain]
            for t in trees:
                if _is_chain(t, steps):
                    continue  # SGLang's chain (topk 1) is the chain walked above: taken from it below
                acc_len, _ = simulate_tree(model, aux, s.input_ids[1:T], path, mask, t)
                tree_walks[str(t)] = tree_walks[str(t)] + walk_lengths(acc_len.tolist(), span, t.steps)
    chains = plain if gate is not None else walks
    for t in trees:
        if _is_chain(t, steps) and chains:
            tree_walks[str(t)] = chains[t.steps - 1]
    return Evaluation(
        wiring=str(wiring),
        mode=mode,
        counts=counts,
        ce=ce_sum / ce_n if ce_n else float("nan"),
        tree={k: w.tau for k, w in tree_walks.items() if w.drafts},
        walks=walks if any(w.drafts for w in walks) else [],
        ungated=plain if gate is not None and any(w.drafts for w in plain) else [],
    )


def _is_chain(t: TreeSetting, steps: int) -> bool:
    """A top-k 1 setting SGLang runs as a chain of t.steps drafts (it forces draft_tokens = steps + 1)."""
    return t.topk == 1 and t.steps <= steps


@torch.no_grad()
def simulate_tree(
    model: Eagle3Drafter,
    aux: torch.Tensor,
    ids_in: torch.Tensor,
    greedy: torch.Tensor,
    mask: torch.Tensor,
    setting: TreeSetting,
    more_draft_tokens: tuple[int, ...] = (),
):
    """Draft SGLang's tree at every row at once and walk it with the target's greedy continuation.
    Returns (accept length per row, rows with a full greedy continuation in the scored region); with
    `more_draft_tokens`, a dict {draft_tokens: accept lengths} over the same pool instead of one tensor."""
    N, K, D = setting.steps, setting.topk, setting.draft_tokens
    n = ids_in.numel() - 1  # rows with a predicted token
    state = model.unrolled_state(ids_in.numel(), aux.dtype, aux.device)
    pos = torch.arange(ids_in.numel(), device=ids_in.device)[None]
    logits, h0 = model.unrolled_step(ids_in[None], model.project(aux), pos, state)
    builder = TreeBuilder(torch.softmax(logits[0].float(), -1), K, model.to_target)
    hid = h0.expand(K, -1, -1)
    for i in range(N - 1):
        tok = builder.front_tokens().T  # [K, rows]
        lg, hout = model.unrolled_step(tok, hid, pos + 1 + i, state)
        inherit = builder.expand(torch.softmax(lg.float(), -1).permute(1, 0, 2))  # [rows, K]
        hid = torch.gather(
            hout.permute(1, 0, 2), 1, inherit[..., None].expand(-1, -1, hout.shape[-1])
        ).permute(1, 0, 2)
    rows = ids_in.numel()
    cont = torch.full((rows, N), -1, dtype=torch.long, device=ids_in.device)
    ok_rows = torch.zeros(rows, dtype=torch.bool, device=ids_in.device)
    for r in range(n):
        end = r + N
        if end <= n:
            cont[r] = greedy[r:end]
            ok_rows[r] = bool(mask[r:end].all())
    if more_draft_tokens:
        return {d: greedy_accept(builder.select(d), cont, N) for d in (D, *more_draft_tokens)}, ok_rows
    return greedy_accept(builder.select(D), cont, N), ok_rows


# ---- the data ---------------------------------------------------------------------------------------------------


def samples_for_test(
    target: LoadedTarget, data: SampleLoader | None, limit: int, max_len: int
) -> list[Sample]:
    """Samples to test on, from the loader the caller chose (the CLI picks the zoo's held-out files for the
    bundled target)."""
    if target.tokenizer is None:
        raise InputError(f"{target.path}: the standalone test needs the target's tokenizer")
    if data is None:
        raise InputError(
            "give --data (text, folder or JSONL) to test on; only the bundled zoo target has default data"
        )
    return data(target.tokenizer, max_len, limit)


def chain_data(
    target: LoadedTarget,
    samples: list[Sample],
    taps: list[int],
    prompt_len: int = 64,
    new_tokens: int = 128,
    extra: int = 8,
    sampling: Sampling | None = None,
) -> list[CapturedSample]:
    """The target's greedy (or sampled) continuations of the samples' first `prompt_len` tokens, captured (chain
    mode); `extra` unmasked tokens past the walk's end score its last drafts (at least the deepest draft + 1)."""
    conts = greedy_continuations(target, samples, prompt_len, new_tokens, extra, sampling)
    return captured(target, conts, taps)


# ---- the job: `eaglewire test` ----------------------------------------------------------------------------------


@dataclass
class StandaloneOptions:
    taps: str | None = None  # feed these taps (default: the trained ones)
    engine: str | None = None  # or the taps this engine serves, e.g. sglang==0.5.23
    platform: str | None = None  # with engine: cuda | cpu (picks vLLM's runner, conventions.select_rows)
    runner: str | None = None  # with engine: v1 | mrv2
    steps: int = 5
    samples: int = 12
    prompt_len: int = 64
    new_tokens: int = 96
    trees: tuple[TreeSetting, ...] = DEFAULT_TREES
    teacher: bool = True  # also the teacher-forced acc on the data (comparable with training logs)
    search: bool = False
    dump: Path | None = None  # hidden states already on disk (eaglewire capture, speculators, SpecForge)
    dump_ids: list[int] | None = None  # the layer ids a peer's dump was written with, in its own numbering
    dump_config: Path | None = None  # speculators' run.yaml (its target_layer_ids)
    device: str = "cpu"
    dtype: str = "float32"  # what drafter (and target) compute in; auto = as the target is stored
    sampling: Sampling | None = None  # temperature > 0: walk sampled continuations (measured over seeds)


@dataclass
class StandaloneReport:
    drafter: str
    wiring: Wiring
    basis: str
    num_layers: int
    evaluations: dict[str, Evaluation]
    recorded: dict | None  # held-out metrics recorded at training time (provenance)
    search: SearchResult | None = None
    data: dict | None = None  # the dump tested on (`dumps.describe`)
    target_reads: list[tuple[str, int]] | None = None  # tensors read from a partial target (name, bytes)
    sampling: Sampling | None = None

    def to_dict(self) -> dict:
        out = {
            "taps": str(self.wiring),
            "basis": self.basis,
            "decoding": "greedy" if self.sampling is None else self.sampling.describe(),
            "evaluations": {k: v.to_dict() for k, v in self.evaluations.items()},
            "recorded_training_metrics": self.recorded,
        }
        if self.data is not None:
            out["dump"] = self.data
            out["target_tensors_read"] = [{"name": n, "bytes": b} for n, b in self.target_reads or []]
        if self.search is not None:
            out["search"] = self.search.to_dict()
        return out


def on_dump(pair, opts: StandaloneOptions, what: str = "the drafter's wiring"):
    """The first `opts.samples` samples of the dump `opts.dump`, the source, and its target head; refuses a
    wiring the dump does not hold."""
    src = open_dump(opts.dump, pair.target, opts.dump_ids, opts.dump_config)
    require_taps(src, pair.wiring, what)
    items = [src[i] for i in range(min(opts.samples, len(src)))]
    return src, items, src.target_head()


def standalone_test(
    drafter: Path | str, target: Path | str, opts: StandaloneOptions, data: SampleLoader | None = None
) -> StandaloneReport:
    """The drafter outside any serving stack: chain acceptance on the target's greedy continuations (plus
    simulated SGLang trees) and teacher-forced acc on the data; or teacher-forced on a dump, where the target is
    partial (its layers are never loaded; only its lm_head, final norm and, if the drafter lacks one, embedding
    are read by name)."""
    pair = load_pair(
        target, drafter, opts.taps, opts.engine, opts.dtype, opts.device, partial=opts.dump is not None,
        platform=opts.platform, runner=opts.runner,
    )  # fmt: skip
    tgt, model, wiring = pair.target, pair.drafter, pair.wiring
    L = tgt.info.num_layers
    ckpt = pair.checkpoint
    recorded = (ckpt.provenance.training or {}).get("held_out") if ckpt.provenance else None
    evals: dict[str, Evaluation] = {}
    head, dump = None, None
    if opts.dump is not None:
        src, items, head = on_dump(pair, opts)
        evals["teacher"] = evaluate(model, items, wiring, opts.steps, "teacher", head=head)
        dump = describe(src)
    else:
        base = samples_for_test(tgt, data, opts.samples, max(512, opts.prompt_len + opts.new_tokens))
        extra = max([opts.steps, *(t.steps for t in opts.trees)]) + 1
        items = chain_data(
            tgt, base, list(range(L + 1)), opts.prompt_len, opts.new_tokens, extra, opts.sampling
        )
        evals["chain"] = evaluate(model, items, wiring, opts.steps, "chain", trees=opts.trees, gate=pair.gate)
        if opts.teacher:
            evals["teacher"] = evaluate(
                model, captured(tgt, base, wiring.indices), wiring, opts.steps, "teacher"
            )
    found = search(model, items, L, [wiring, default_wiring(L)], head=head) if opts.search else None
    if found is not None and opts.dump is None and found.best.wiring != wiring:
        # the accept length the engine would measure if it fed the search's best wiring
        evals["search-best"] = evaluate(model, items, found.best.wiring, opts.steps, "chain", gate=pair.gate)
    reads = getattr(tgt, "tensors_read", None)
    return StandaloneReport(
        str(drafter), wiring, pair.basis, L, evals, recorded, found, dump, reads, opts.sampling
    )
