"""Mechanics of the decoding benchmark and the launch advice on a tiny random pair (numbers: make bench)."""

import torch
from test_decode import pair

from eaglewire.bench.advise import advise, measure_costs, predicted_speedup
from eaglewire.bench.decode import BenchResult, Method, Run, run_bench
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


def test_a_speed_up_above_tau_marks_the_run_disturbed_and_is_never_best():
    """make bench on a busy machine once printed chain 3 at 3.24x with tau 2.96 as the best result: impossible
    (each verify is at least one target forward and yields tau tokens), so the run is marked and not ranked."""
    plain = Method(
        "plain greedy (own loop)", "plain", {}, [Run(0, 100, 10.0, None, True), Run(1, 100, 10.0, None, True)]
    )
    # chain 3: 8 verifies for 24 tokens (tau (24-1)/8 = 2.875), yet 3.4x plain's tokens/s: disturbed
    fast = Method(
        "eaglewire chain 3",
        "eaglewire",
        {"steps": 3},
        [Run(0, 24, 0.706, 8, True), Run(1, 24, 0.706, 8, True)],
    )
    # chain 5: tau 3.5 and 2.0x: possible
    ok = Method(
        "eaglewire chain 5", "eaglewire", {"steps": 5}, [Run(0, 36, 1.8, 10, True), Run(1, 36, 1.8, 10, True)]
    )
    data = BenchResult([plain, fast, ok], 2, [], 128, plain.name, 1).to_dict()
    rows = {r["method"]: r for r in data["methods"]}
    assert rows["eaglewire chain 3"]["speedup"] > rows["eaglewire chain 3"]["tau_median"]
    assert rows["eaglewire chain 3"]["disturbed"] and not rows["eaglewire chain 5"]["disturbed"]
    assert data["best_eaglewire"]["method"] == "eaglewire chain 5"
    assert data["disturbed"] == ["eaglewire chain 3"]
    assert "3.40x at tau 2.88" in data["disturbed_note"] and "impossible" in data["disturbed_note"]
    assert not rows["plain greedy (own loop)"]["disturbed"]


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
