"""`eaglewire advise`: which (steps, top-k, draft tokens) to launch SGLang and vLLM with.

Accept lengths come from the standalone test on the target's greedy continuations, walked as an engine walks
(drafts only at the position after each verify: metrics.walk): chain settings from the drafter's chain, tree
settings from SGLang's tree simulated on the same rows. Costs are measured
here: a target forward over n new tokens after a cached context, a draft step over K rows, the draft-extend over
the accepted rows. Predicted speed-up = tau * t(plain token) / (t_verify(D) + (N-1) t_draft(K) + t_extend(tau) + t_overhead), where
t(plain token) and t_overhead come from running the real loops once (`calibrate`). The same arithmetic prices
a real serving engine only up to its own overheads; the ranking is what transfers.
"""

from __future__ import annotations

import itertools
import json
import shlex
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from eaglewire.capture import CapturedSample
from eaglewire.data import SampleLoader
from eaglewire.drafter import DraftCache, Eagle3Drafter
from eaglewire.jobs.evaluate import TreeSetting, evaluate, simulate_tree
from eaglewire.jobs.lint import lint
from eaglewire.metrics import WalkCounts, walk_lengths, walk_span
from eaglewire.taps import Wiring
from eaglewire.targets import TargetRunner


@dataclass
class Costs:
    plain_ms: float  # one target forward of 1 token (plain decoding's cost per token)
    verify_ms: dict[int, float]  # n new tokens
    draft_ms: dict[int, float]  # one draft step over K rows
    extend_ms: dict[int, float]  # draft-extend over n rows
    overhead_ms: float = 0.0  # per chain round, measured by `calibrate`
    tree_overhead_ms: float = 0.0  # per tree round (tree mask, top-k bookkeeping), measured by `calibrate`


@dataclass
class Prediction:
    steps: int
    topk: int
    draft_tokens: int
    tau: float
    speedup: float


@dataclass
class Advice:
    options: list[Prediction]
    costs: Costs
    best_sglang: Prediction
    best_chain: Prediction
    sglang_flags: str
    vllm_config: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "best_sglang": self.best_sglang.__dict__,
            "best_chain": self.best_chain.__dict__,
            "sglang_flags": self.sglang_flags,
            "vllm_speculative_config": self.vllm_config,
            "options": [o.__dict__ for o in sorted(self.options, key=lambda o: -o.speedup)],
            "costs_ms": self.costs.__dict__,
            "notes": self.notes,
            "tau_convention": "tokens per target verify step, bonus included",
        }


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _sync(device: torch.device) -> None:
    """Wait for queued GPU work, so a timing measures the work and not its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def measure_costs(
    target_model,
    drafter: Eagle3Drafter,
    wiring: Wiring,
    context: int = 256,
    max_n: int = 32,
    ks: tuple[int, ...] = (1, 2, 4, 8),
    repeats: int = 15,
) -> Costs:
    vocab = target_model.config.vocab_size
    runner = TargetRunner(target_model, wiring.served().indices)
    dev = next(drafter.parameters()).device
    ctx = torch.randint(0, vocab, (1, context), device=dev)

    def verify(n: int) -> float:
        def once():
            runner.reset()
            runner.forward(ctx, torch.arange(context)[None])
            t0 = time.perf_counter()
            runner.forward(torch.randint(0, vocab, (1, n)), torch.arange(context, context + n)[None])
            _sync(dev)
            return (time.perf_counter() - t0) * 1000

        once()
        return statistics.median(once() for _ in range(repeats))

    ns = sorted({1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 24, 32} & set(range(1, max_n + 1)))
    verify_ms = {n: verify(n) for n in ns}
    runner.reset()
    _, taps = runner.forward(ctx, torch.arange(context)[None])
    runner.close()
    H, dtype = drafter.arch.hidden_size, next(drafter.parameters()).dtype
    cache = DraftCache.empty(len(drafter.layers))
    drafter.step(
        ctx[:, 1:],
        drafter.project(taps[None, :-1].to(dev, dtype)),
        torch.arange(context - 1, device=dev)[None],
        cache,
    )
    base = cache.length

    def draft(k: int) -> float:
        def once():
            cache.crop(base)
            drafter.step(
                torch.randint(0, vocab, (1, k), device=dev),
                torch.randn(1, k, H, dtype=dtype, device=dev),
                torch.full((1, k), base, device=dev),
                cache,
                torch.ones(1, 1, k, base + k, dtype=torch.bool, device=dev),
            )
            _sync(dev)

        once()
        return _median_ms(once, repeats)

    def extend(n: int) -> float:
        def once():
            cache.crop(base)
            drafter.step(
                torch.randint(0, vocab, (1, n), device=dev),
                drafter.project(taps[None, :n].to(dev, dtype)),
                base + torch.arange(n, device=dev)[None],
                cache,
            )
            _sync(dev)

        once()
        return _median_ms(once, repeats)

    costs = Costs(
        verify_ms[1], verify_ms, {k: draft(k) for k in ks}, {n: extend(n) for n in (1, 2, 3, 4, 6, 8)}
    )
    return calibrate(costs, target_model, drafter, wiring, ctx[0, :64])


def calibrate(
    costs: Costs, target_model, drafter: Eagle3Drafter, wiring: Wiring, prompt: torch.Tensor, new: int = 48
) -> Costs:
    """Price what isolated timings miss: run the real loops once (plain greedy, and a 4-step chain with the
    reference decoder), take plain decoding's real cost per token, and charge every speculative round the gap
    between its measured and its modelled cost (Python bookkeeping, drafter and target evicting each other's
    weights from the CPU caches)."""
    from eaglewire.jobs.decode import DecodeConfig, DecodeStats, SpeculativeDecoder, greedy_reference

    greedy_reference(target_model, prompt, 4)
    t0 = time.perf_counter()
    greedy_reference(target_model, prompt, 1)
    t1 = time.perf_counter()
    greedy_reference(target_model, prompt, new + 1)
    plain = ((time.perf_counter() - t1) - (t1 - t0)) * 1000 / new
    dec = SpeculativeDecoder(target_model, drafter, wiring)

    def gap(cfg: DecodeConfig) -> float:
        dec.generate(prompt, cfg)
        stats = DecodeStats()
        dec.generate(prompt, cfg, stats)
        measured = (stats.seconds - stats.prefill_seconds) * 1000 / max(1, stats.verify_steps)
        return max(0.0, measured - _round_ms(costs, cfg.steps, cfg.topk, cfg.num_draft_tokens, stats.tau))

    costs.plain_ms = plain
    costs.overhead_ms = gap(DecodeConfig(steps=4, max_new_tokens=new))
    costs.tree_overhead_ms = gap(DecodeConfig(steps=4, topk=2, draft_tokens=8, max_new_tokens=new))
    dec.target.close()
    return costs


def _interp(table: dict[int, float], n: float) -> float:
    keys = sorted(table)
    if n <= keys[0]:
        return table[keys[0]]
    for a, b in itertools.pairwise(keys):
        if a <= n <= b:
            return table[a] + (table[b] - table[a]) * (n - a) / (b - a)
    return table[keys[-1]] * n / keys[-1]


def _round_ms(costs: Costs, steps: int, topk: int, draft_tokens: int, tau: float) -> float:
    return (
        _interp(costs.verify_ms, draft_tokens)
        + (steps - 1) * _interp(costs.draft_ms, topk)
        + _interp(costs.extend_ms, tau)
    )


def predicted_speedup(costs: Costs, steps: int, topk: int, draft_tokens: int, tau: float) -> float:
    overhead = costs.overhead_ms if topk == 1 else costs.tree_overhead_ms
    return tau * costs.plain_ms / (_round_ms(costs, steps, topk, draft_tokens, tau) + overhead)


@torch.no_grad()
def advise(
    model: Eagle3Drafter,
    data: list[CapturedSample],
    wiring: Wiring,
    costs: Costs,
    max_steps: int = 8,
    topks: tuple[int, ...] = (1, 2, 4, 8),
    draft_path: str = "DRAFTER",
    target_path: str = "TARGET",
) -> Advice:
    ev = evaluate(model, data, wiring, max_steps, "chain")
    options = [
        Prediction(k, 1, k + 1, ev.tau[k - 1], predicted_speedup(costs, k, 1, k + 1, ev.tau[k - 1]))
        for k in range(1, max_steps + 1)
    ]
    for steps in range(2, max_steps + 1):
        for k in topks:
            if k == 1:
                continue
            pool = k + (steps - 1) * k * k
            ds = sorted({d for d in (4, 6, 8, 12, 16, 24, 32) if d - 1 <= pool and d > steps + 1})
            if not ds:
                continue
            walked = {d: WalkCounts(steps) for d in ds}
            for s in data:
                T = s.input_ids.numel()
                aux = s.aux(wiring)[: T - 1][None].float()
                g = s.logits[1:T].argmax(-1)
                acc, _ = simulate_tree(
                    model,
                    aux,
                    s.input_ids[1:T],
                    g,
                    s.loss_mask[2:T],
                    TreeSetting(steps, k, ds[0]),
                    tuple(ds[1:]),
                )
                span = walk_span(s.loss_mask)
                for d in ds if span is not None else ():
                    walked[d] = walked[d] + walk_lengths(acc[d].tolist(), span, steps)
            for d in ds:
                tau = walked[d].tau
                options.append(Prediction(steps, k, d, tau, predicted_speedup(costs, steps, k, d, tau)))
    best = max(options, key=lambda o: o.speedup)
    chain = max((o for o in options if o.topk == 1), key=lambda o: o.speedup)
    flags = f"--speculative-algorithm EAGLE3 --speculative-num-steps {best.steps} --speculative-eagle-topk {best.topk} --speculative-num-draft-tokens {best.draft_tokens}"
    vllm = json.dumps({"method": "eagle3", "model": draft_path, "num_speculative_tokens": chain.steps})
    notes = [
        f"SGLang: with --speculative-eagle-topk 1 the draft tokens are forced to steps + 1 ({chain.steps + 1} here)",
        "vLLM drafts EAGLE-3 as a chain: num_speculative_tokens = SGLang steps with topk 1",
    ]
    launch = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        target_path,
        "--speculative-draft-model-path",
        draft_path,
        *shlex.split(flags),
    ]
    rep = lint(launch, engine="sglang")
    if rep.has_problem:
        notes.append(
            "the recommended SGLang flags trip a rule: " + "; ".join(c.message for c in rep.problems)
        )
    return Advice(options, costs, best, chain, flags, vllm, notes)


def advise_drafter(
    drafter: Path | str,
    target: Path | str,
    data: SampleLoader | None,
    samples: int = 8,
    max_steps: int = 7,
    dtype: str = "auto",
    context: int = 256,
    repeats: int = 15,
    device: str = "cpu",
) -> Advice:
    """The `eaglewire advise` job: acceptance measured in fp32 on the target's greedy continuations, costs
    measured in the dtype the pair would be served in, on `device`."""
    import copy

    from eaglewire.jobs.evaluate import chain_data, samples_for_test
    from eaglewire.jobs.pair import load_pair
    from eaglewire.targets import resolve_dtype

    pair = load_pair(target, drafter, device=device)
    tgt, model, wiring = pair.target, pair.drafter, pair.wiring
    items = chain_data(
        tgt, samples_for_test(tgt, data, samples, 512), list(wiring.indices), 64, 96, max_steps + 1
    )
    run_dtype = resolve_dtype(target, dtype)
    served = (tgt.model, model)
    if run_dtype != torch.float32:
        served = (copy.deepcopy(tgt.model).to(run_dtype), copy.deepcopy(model).to(run_dtype))
    costs = measure_costs(*served, wiring, context=context, repeats=repeats)
    return advise(model, items, wiring, costs, max_steps, draft_path=str(drafter), target_path=str(target))
