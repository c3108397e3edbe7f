"""Decoding benchmarks: tokens/s and accept length of plain greedy decoding, eaglewire chain and tree settings,
transformers' assisted generation with a small draft LM, and prompt-lookup decoding, on the same target and
prompts, runs interleaved (method order rotates per prompt), warm-up excluded, medians reported.

tau convention everywhere: tokens produced per target verify step, bonus token included; the prefill's token is
excluded (SGLang's completion_tokens / verify_ct counts it, slightly overstating tau on short outputs).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from eaglewire.data import SampleLoader
from eaglewire.drafter import Eagle3Drafter
from eaglewire.errors import InputError
from eaglewire.jobs.decode import DecodeConfig, DecodeStats, SpeculativeDecoder, greedy_reference
from eaglewire.metrics import repetition
from eaglewire.taps import Wiring


@dataclass
class Run:
    prompt: int
    tokens: int
    seconds: float
    verify_steps: int | None = None  # None for plain decoding (one target forward per token)
    same_as_plain: bool | None = None  # output identical to the plain greedy loop's on this prompt

    @property
    def tau(self) -> float | None:
        return None if not self.verify_steps else (self.tokens - 1) / self.verify_steps


@dataclass
class Method:
    name: str
    kind: str  # plain | eaglewire | assisted | prompt-lookup
    settings: dict
    runs: list[Run] = field(default_factory=list)

    def tokens_per_second(self, prompts: set[int] | None = None) -> float:
        rs = [r for r in self.runs if prompts is None or r.prompt in prompts]
        return statistics.median(r.tokens / r.seconds for r in rs) if rs else 0.0

    def tau(self, prompts: set[int] | None = None) -> float | None:
        rs = [r for r in self.runs if r.tau is not None and (prompts is None or r.prompt in prompts)]
        return statistics.median(r.tau for r in rs) if rs else None


@dataclass
class BenchResult:
    methods: list[Method]
    prompts: int
    loop_prompts: list[int]  # prompts whose greedy continuation is a repetition loop
    max_new_tokens: int
    baseline: str
    threads: int

    def to_dict(self) -> dict:
        base = next(m for m in self.methods if m.name == self.baseline)
        clean = set(range(self.prompts)) - set(self.loop_prompts)
        rows = []
        for m in self.methods:
            tps = m.tokens_per_second()
            speed = tps / base.tokens_per_second() if base.tokens_per_second() else 0.0
            tau = m.tau()
            row = {
                "method": m.name,
                "kind": m.kind,
                "settings": m.settings,
                "tokens_per_second_median": round(tps, 2),
                "speedup": round(speed, 3),
                "tau_median": None if tau is None else round(tau, 3),
                "efficiency_speedup_per_tau": None if not tau else round(speed / tau, 3),
                "outputs_identical_to_plain_greedy": f"{sum(r.same_as_plain for r in m.runs)}/{len(m.runs)}",
                "disturbed": disturbed(speed, tau),
                "non_loop_prompts": {
                    "tokens_per_second_median": round(m.tokens_per_second(clean), 2),
                    "speedup": round(m.tokens_per_second(clean) / base.tokens_per_second(clean), 3)
                    if clean
                    else None,
                    "tau_median": None if m.tau(clean) is None else round(m.tau(clean), 3),
                },
            }
            rows.append(row)
        bad = [r for r in rows if r["disturbed"]]
        best = max(
            (r for r in rows if r["kind"] == "eaglewire" and not r["disturbed"]),
            key=lambda r: r["speedup"],
            default=None,
        )
        return {
            "baseline": self.baseline,
            "prompts": self.prompts,
            "loop_prompts": self.loop_prompts,
            "max_new_tokens": self.max_new_tokens,
            "threads": self.threads,
            "methods": rows,
            "best_eaglewire": best,
            "disturbed": [r["method"] for r in bad],
            "disturbed_note": disturbed_note(bad),
            "tau_convention": "tokens per target verify step, bonus included, prefill token excluded",
        }


def disturbed(speedup: float, tau: float | None) -> bool:
    """A speed-up above the accept length is impossible: each verify step is at least one target forward and
    yields tau tokens, so even free drafts give at most tau x plain decoding. Measuring more means the timings
    were disturbed (another load on the machine slowed the baseline's runs, or sped up none of the others')."""
    return tau is not None and speedup > tau


def disturbed_note(rows: list[dict]) -> str | None:
    """What the report says of disturbed methods (None when there are none)."""
    if not rows:
        return None
    said = ", ".join(f"{r['method']} {r['speedup']:.2f}x at tau {r['tau_median']:.2f}" for r in rows)
    return (
        f"disturbed run: {said}: a speed-up above tau is impossible, so the timings were disturbed (a busy "
        "machine?); these methods are not ranked and every speed-up of this run is suspect: run make bench again "
        "on an idle machine"
    )


def _timed(fn: Callable[[], tuple[list[int], int | None]]) -> tuple[list[int], float, int | None]:
    t0 = time.perf_counter()
    out, verifies = fn()
    return out, time.perf_counter() - t0, verifies


class _CountingStreamer:
    """Counts transformers' streamer chunks: after the prompt, one `put` per verify step (assisted/lookup)."""

    def __init__(self):
        self.puts = -1  # the first put is the prompt

    def put(self, value):
        self.puts += 1

    def end(self):
        pass


def run_bench(
    target_model,
    drafter: Eagle3Drafter,
    wiring: Wiring,
    prompts: list[torch.Tensor],
    max_new_tokens: int = 128,
    settings: list[DecodeConfig] | None = None,
    assistant=None,
    assistant_tokens: tuple[int, ...] = (4,),
    lookup_tokens: tuple[int, ...] = (4,),
    warmup: int = 1,
    progress: Callable[[int, int, dict | None], None] | None = None,
) -> BenchResult:
    """Every method on every prompt, interleaved; the first `warmup` prompts run but are not recorded."""
    settings = settings or [DecodeConfig(steps=k, max_new_tokens=max_new_tokens) for k in (3, 4, 5)]
    model = target_model.eval()
    dec = SpeculativeDecoder(model, drafter, wiring)
    pad = model.config.eos_token_id if isinstance(model.config.eos_token_id, int) else 0
    methods: list[tuple[Method, Callable]] = []

    def plain_loop(ids):
        return greedy_reference(model, ids, max_new_tokens).tolist(), None

    def hf_generate(ids, **speculation):
        """transformers' generate with a speculation method: (new tokens, verify steps from its streamer)."""
        s = _CountingStreamer()
        out = model.generate(
            ids[None].to(model.device),
            max_new_tokens=max_new_tokens,
            min_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=pad,
            streamer=s,
            **speculation,
        )
        return out[0, ids.numel() :].tolist(), s.puts - 1

    def plain_generate(ids):
        return hf_generate(ids)[0], None

    methods.append((Method("plain greedy (own loop)", "plain", {}), plain_loop))
    methods.append((Method("plain greedy (transformers generate)", "plain", {}), plain_generate))
    for cfg in settings:
        cfg.max_new_tokens = max_new_tokens

        def spec(ids, cfg=cfg):
            stats = DecodeStats()
            out = dec.generate(ids, cfg, stats)
            return out.tolist(), stats.verify_steps

        name = (
            f"eaglewire chain {cfg.steps}"
            if cfg.topk == 1
            else f"eaglewire tree {cfg.steps},{cfg.topk},{cfg.num_draft_tokens}"
        )
        methods.append(
            (
                Method(
                    name,
                    "eaglewire",
                    {"steps": cfg.steps, "topk": cfg.topk, "draft_tokens": cfg.num_draft_tokens},
                ),
                spec,
            )
        )
    if assistant is not None:
        for k in assistant_tokens:

            def assisted(ids, k=k):
                assistant.generation_config.num_assistant_tokens = k
                assistant.generation_config.num_assistant_tokens_schedule = "constant"
                assistant.generation_config.assistant_confidence_threshold = 0.0
                return hf_generate(ids, assistant_model=assistant)

            methods.append(
                (Method(f"assisted generation k={k}", "assisted", {"num_assistant_tokens": k}), assisted)
            )
    for k in lookup_tokens:

        def lookup(ids, k=k):
            return hf_generate(ids, prompt_lookup_num_tokens=k)

        methods.append(
            (Method(f"prompt lookup k={k}", "prompt-lookup", {"prompt_lookup_num_tokens": k}), lookup)
        )

    loops = []
    total = len(prompts) + warmup
    with torch.no_grad():
        for i in range(total):
            ids = prompts[(i - warmup) % len(prompts)]
            order = methods[i % len(methods) :] + methods[: i % len(methods)]
            outs = {}
            for m, fn in order:
                outs[m.name], seconds, verifies = _timed(lambda fn=fn, ids=ids: fn(ids))
                if i >= warmup:
                    m.runs.append(Run(i - warmup, len(outs[m.name]), seconds, verifies))
            if i >= warmup:
                plain = outs[methods[0][0].name]
                for m, _ in methods:
                    m.runs[-1].same_as_plain = outs[m.name] == plain
                cont = greedy_reference(model, ids, min(64, max_new_tokens)).tolist()
                if repetition(cont) > 0.5:
                    loops.append(i - warmup)
            if progress:
                progress(i + 1, total, None)
    ms = [m for m, _ in methods]
    base = max((m for m in ms if m.kind == "plain"), key=lambda m: m.tokens_per_second())
    return BenchResult(ms, len(prompts), loops, max_new_tokens, base.name, torch.get_num_threads())


DEFAULT_SETTINGS = ("3", "4", "5", "6", "7", "5,2,12", "5,4,8")


def parse_setting(text: str) -> DecodeConfig:
    """`steps` (a chain) or `steps,topk,draft_tokens` (SGLang's tree)."""
    try:
        parts = [int(x) for x in text.split(",")]
    except ValueError:
        raise InputError(f"--setting {text!r}: write steps or steps,topk,draft_tokens") from None
    if not parts or len(parts) > 3:
        raise InputError(f"--setting {text!r}: write steps or steps,topk,draft_tokens")
    return DecodeConfig(
        steps=parts[0],
        topk=parts[1] if len(parts) > 1 else 1,
        draft_tokens=parts[2] if len(parts) > 2 else None,
    )


@dataclass
class BenchReport:
    result: BenchResult
    target: str
    target_dtype: str
    drafter_dtype: str

    def to_dict(self) -> dict:
        return {
            **self.result.to_dict(),
            "target_dtype": self.target_dtype,
            "drafter_dtype": self.drafter_dtype,
        }


def bench_decoding(
    target: Path | str,
    drafter: Path | str,
    data: SampleLoader | None,
    *,
    n_prompts: int = 8,
    prompt_len: int = 96,
    max_new_tokens: int = 128,
    settings: list[str] | None = None,
    assistant: Path | None = None,
    dtype: str = "auto",
    progress: Callable[[int, int, dict | None], None] | None = None,
    device: str = "cpu",
) -> BenchReport:
    """The decoding benchmark (`eaglewire bench`): the pair in its serving dtype on `device`, every method
    interleaved."""
    from transformers import AutoModelForCausalLM

    from eaglewire.jobs.evaluate import samples_for_test
    from eaglewire.jobs.pair import load_pair

    pair = load_pair(target, drafter, dtype=dtype, device=device)
    samples = samples_for_test(pair.target, data, n_prompts, prompt_len)
    ids = [s.input_ids[:prompt_len] for s in samples]
    configs = [parse_setting(t) for t in settings or DEFAULT_SETTINGS]
    run_dtype = next(pair.target.model.parameters()).dtype
    helper = None
    if assistant is not None and (Path(assistant) / "config.json").exists():
        helper = AutoModelForCausalLM.from_pretrained(str(assistant), local_files_only=True, dtype=run_dtype)
        helper.to(pair.target.device).eval()
    res = run_bench(
        pair.target.model, pair.drafter, pair.wiring, ids, max_new_tokens, configs, helper, progress=progress
    )
    drafter_dtype = next(pair.drafter.parameters()).dtype
    name = lambda d: str(d).removeprefix("torch.")  # noqa: E731
    return BenchReport(res, str(target), name(run_dtype), name(drafter_dtype))
