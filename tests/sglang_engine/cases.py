"""eaglewire's side of the SGLang accept tier, shared by the tier (test_sglang_accept.py) and by `make test`'s replay
of its committed record (tests/test_sglang_replay.py): the same pairs (bf16, fed the taps `check` names for
sglang==0.5.23), the same greedy continuation, the same walk and the same comparison with SGLang's own readings."""

from __future__ import annotations

from real_engine.engine import as_samples

from eaglewire import zoo
from eaglewire.errors import InputError
from eaglewire.jobs.evaluate import chain_data, evaluate
from eaglewire.jobs.pair import load_pair

from .conftest import ENGINE
from .cpu import has_avx512
from .engine import DTYPE, NEW_TOKENS, PROMPT_LEN

KS = (1, 3, 5)
EXTRA = max(KS) + 1  # the continuation runs on this far: the walk's last drafts are scored against its tokens
DRAFTERS = ("default", "custom-taps")
# bf16 on both sides with different kernels (SGLang's intel_amx attention and packed GEMM, transformers' torch
# ops): near-ties flip a few greedy tokens and drafts, so the readings agree within 2%, not to the integer. On a CPU
# without AVX-512 (SGLang's kernels built for x86-64-v3, cpu.py) both sides' bf16 matmuls round otherwise, and the
# walk's own reading moves with them: the draft-weights own-head copy walks to 2.0813 on an AVX-512 CPU and 2.0317 on
# an AVX2 one from the same inputs (2.4%), SGLang reading 2.0729 and 2.0813; 3% there
TOL = 0.02 if has_avx512() else 0.03


def pairs(dtype: str = DTYPE, engine: str = ENGINE) -> dict:
    """Target and each drafter the SGLang release serves, fed the taps eaglewire says it serves on the CPU; a
    drafter the release cannot serve (0.5.21 and older refuse a request for h0: `refused`) is left out."""
    out = {}
    for n in DRAFTERS:
        try:
            out[n] = load_pair(zoo.target_dir(), zoo.drafter_dir(n), None, engine, dtype, "cpu")
        except InputError:
            continue
    return out


def refused(engine: str = ENGINE) -> dict[str, str]:
    """The drafters the release cannot serve, each with eaglewire's one-line reason (the ids tier serves them and
    holds the engine's failure to it)."""
    out = {}
    for n in DRAFTERS:
        try:
            load_pair(zoo.target_dir(), zoo.drafter_dir(n), None, engine, DTYPE, "cpu", partial=True)
        except InputError as e:
            out[n] = str(e)
    return out


def own_chain(target, ids: list[list[int]]) -> list:
    """transformers' own bf16 greedy continuation of the prompts (what `eaglewire test --dtype bfloat16` walks)."""
    L = target.info.num_layers
    return chain_data(target, as_samples(ids), list(range(L + 1)), PROMPT_LEN, NEW_TOKENS, EXTRA)


def walks(pair, items) -> list:
    """The chain walk at K = 1..max(KS), from one walk of max(KS) drafts."""
    return evaluate(pair.drafter, items, pair.wiring, max(KS), "chain").walks


def sglang_reading(w, new_tokens: int = NEW_TOKENS) -> float:
    """SGLang's completion_tokens / spec_verify_ct for the walk's requests: each verify commits its accepted
    drafts plus one token, completion_tokens also holds each request's prefill token and stops at max_new_tokens,
    so per request (drafts d, accepted a) it is min(N, 1 + d + a) tokens over d verifies."""
    return sum(min(new_tokens, 1 + d + a) for d, a in w.per_sample) / sum(d for d, _ in w.per_sample)


def disagreements(name: str, k: int, measured: dict, w) -> list[tuple]:
    """SGLang's readings (`accept`'s keys, or a record row's) against the walk's, each beyond TOL."""
    checks = {
        "completion_tokens/verify_ct": (sglang_reading(w), measured["accept_length"]),
        "1+correct/verify_ct": (w.tau, measured["accept_length_drafts"]),
        "verify_ct": (w.drafts, measured["verify_ct"]),
    }
    return [(name, k, what, "predicted", round(p, 4), "measured", round(m, 4))
            for what, (p, m) in checks.items() if abs(p - m) > TOL * m]  # fmt: skip
