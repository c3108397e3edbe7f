"""Mechanics of the decoding benchmark and the launch advice on a tiny random pair (numbers: make bench)."""

import torch
from test_decode import pair

from eaglewire.bench.advise import advise, measure_costs, predicted_speedup
from eaglewire.bench.decode import run_bench
from eaglewire.capture import CapturedSample
from eaglewire.jobs.decode import DecodeConfig
from eaglewire.jobs.lint import lint
from eaglewire.targets import LoadedTarget, forward_taps, read_target


def test_bench_reports_every_method():
    target, drafter, wiring = pair(1, 12, 2, 12)
    prompts = [torch.tensor([1, 2, 3, 4]), torch.tensor([5, 6, 7])]
    res = run_bench(
        target,
        drafter,
        wiring,
        prompts,
        max_new_tokens=12,
        settings=[DecodeConfig(steps=2), DecodeConfig(steps=3, topk=2, draft_tokens=5)],
        lookup_tokens=(2,),
    )
    data = res.to_dict()
    names = [m["method"] for m in data["methods"]]
    assert names[:2] == ["plain greedy (own loop)", "plain greedy (transformers generate)"]
    assert "eaglewire chain 2" in names and "eaglewire tree 3,2,5" in names and "prompt lookup k=2" in names
    for m in data["methods"]:
        assert m["tokens_per_second_median"] > 0
        if m["kind"] in ("eaglewire", "prompt-lookup"):
            assert m["tau_median"] >= 1.0
        # fp32 greedy: eaglewire reproduces the plain loop token for token on every prompt (transformers'
        # methods run with min_new_tokens, which bans EOS, so they may differ where the target picks EOS)
        if m["kind"] == "eaglewire":
            assert m["outputs_identical_to_plain_greedy"] == "2/2", m
    assert data["best_eaglewire"]["kind"] == "eaglewire"


def test_advice_is_consistent_and_lints_clean(tmp_path):
    target, drafter, wiring = pair(3, 6, 3, 6)
    target.save_pretrained(tmp_path / "t")
    tgt = LoadedTarget(target, None, read_target(tmp_path / "t"), tmp_path / "t")
    seq = torch.tensor([1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 1, 1, 2, 0, 3, 4, 5, 2, 1, 0])
    hidden, logits = forward_taps(tgt, seq[None])
    data = [
        CapturedSample(
            seq, torch.ones_like(seq, dtype=torch.bool), {i: h[0] for i, h in enumerate(hidden)}, logits[0]
        )
    ]
    costs = measure_costs(target, drafter, wiring, context=32, max_n=16, ks=(1, 2, 4), repeats=3)
    assert costs.verify_ms[1] > 0 and set(costs.draft_ms) == {1, 2, 4}
    adv = advise(drafter, data, wiring, costs, max_steps=3, topks=(1, 2))
    assert adv.best_sglang.speedup == max(o.speedup for o in adv.options)
    o = adv.best_chain
    assert o.draft_tokens == o.steps + 1
    assert abs(predicted_speedup(costs, o.steps, 1, o.steps + 1, o.tau) - o.speedup) < 1e-9
    argv = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "x",
        "--speculative-draft-model-path",
        "d",
        *adv.sglang_flags.split(),
    ]
    assert not lint(argv, engine="sglang").has_problem
