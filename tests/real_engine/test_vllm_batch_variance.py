"""The walk predicts each request; a batch's scheduling moves a few drafts (real_engine/serial.py). vLLM's CPU build
serves the default drafter at K = 3 on the tier's 16 prompts with a small token budget (`max_num_batched_tokens`
1024: the prefill is split and the requests share steps differently), batched and one request at a time. One request
at a time its counters equal the walk's as integers, request by request; batched they stay within BATCH_VARIANCE
of it. The record (`vllm-V-cpu-batch-variance.json`) is written where the tier writes its results."""

from __future__ import annotations

import pytest

from eaglewire import __version__, zoo
from eaglewire.jobs.evaluate import evaluate
from eaglewire.jobs.pair import load_pair
from eaglewire.targets import load_target

from .cases import chain, engine_counters, walk_counters
from .engine import NEW_TOKENS, PROMPT_LEN, prompts, run_vllm, sha256_json, write_result
from .serial import BATCH_VARIANCE, equal, serial_runs, within_batch_variance

pytestmark = pytest.mark.real_engine

K, BUDGET = 3, 1024


def test_one_request_at_a_time_equals_the_walk(vllm_python, vllm_version, tmp_path):
    engine = f"vllm=={vllm_version}"
    target = load_target(zoo.target_dir())
    ids = prompts(target.tokenizer)
    drafter = zoo.drafter_dir("default")
    case = {"name": "batched", "drafter": str(drafter), "k": K, "prompts": ids, "max_tokens": NEW_TOKENS,
            "engine_args": {"max_num_batched_tokens": BUDGET}}  # fmt: skip
    batched = run_vllm(vllm_python, [case], tmp_path, "batch-variance", vllm_version)["batched"]
    serial = serial_runs(vllm_python, vllm_version, {"serial": (drafter, K)}, ids, tmp_path / "serial")[
        "serial"
    ]
    pair = load_pair(zoo.target_dir(), drafter, None, engine, "float32", "cpu", platform="cpu")
    w = evaluate(
        pair.drafter, chain(target, ids, PROMPT_LEN, NEW_TOKENS, steps=K), pair.wiring, K, "chain"
    ).walks[K - 1]
    walk = walk_counters(w)
    got = engine_counters(batched["metrics"])
    write_result(f"vllm-{vllm_version}-cpu-batch-variance.json", {
        "engine": engine, "k": K, "max_num_batched_tokens": BUDGET, "prompts": len(ids), "prompt_len": PROMPT_LEN,
        "new_tokens": NEW_TOKENS, "batched": got, "serial": serial, "walk": walk,
        "walk_per_request": [list(x) for x in w.per_sample], "batch_variance_bound": BATCH_VARIANCE,
        "provenance": {"eaglewire": __version__, "prompts_sha256": sha256_json(ids)},
    })  # fmt: skip
    assert equal(serial["counters"], walk) and serial["per_request"] == [list(x) for x in w.per_sample], (
        serial
    )
    assert within_batch_variance(got, walk), (got, walk)
