"""Runs inside vLLM's CPU venv (never imported by eaglewire): serves cases offline and writes what the engine did.

    python vllm_side.py SPEC.json OUT.json

SPEC: {"target": DIR, "cases": [{"name", "drafter" (DIR or null: no speculation), "k", "prompts" ([[token ids]]),
"max_tokens", optionally "temperature", "top_p", "seeds" (requests per prompt, seeded 0..seeds-1)}]}. Per case OUT holds the stage it failed at ("load", "warm-up", "first request") with the engine's
error, or the taps the target captures (its `aux_hidden_state_layers`, read through collective_rpc from the model
the engine runs), the tokens of each request, and the spec-decode counters from `LLM.get_metrics()`. Each case is a
new engine; the engines run one after another in one child process (the engine core in-process: no second
import of vLLM per case), and a case that kills that process is recorded as a crash and the next case gets a new one.
"""

from __future__ import annotations

import gc
import json
import multiprocessing as mp
import os
import sys
import traceback

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # the engine core in this process: fast restarts
os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")  # collective_rpc with a function
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

WARMUP_FRAMES = ("profile_run", "_dummy_run", "_dummy_sampler_run", "determine_available_memory", "warmup",
                 "warming_up", "compile_or_warm_up_model", "capture_model")  # fmt: skip


def _aux_layers(worker) -> list[int] | None:
    """The ids the target's capture loop tests (EagleModelMixin.aux_hidden_state_layers)."""
    model = worker.model_runner.model
    parent = model.get_language_model() if hasattr(model, "get_language_model") else model
    holder = getattr(parent, "model", parent)
    layers = getattr(holder, "aux_hidden_state_layers", None)
    return None if layers is None else [int(x) for x in layers]


def _stage(exc: BaseException, default: str) -> str:
    frames = [f.name for f in traceback.extract_tb(exc.__traceback__)]
    text = "".join(traceback.format_exception(exc))
    if any(f in WARMUP_FRAMES for f in frames) or any(f"in {w}" in text for w in WARMUP_FRAMES):
        return "warm-up"
    return default


def _error(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(exc))
    causes = [line for line in text.splitlines() if "Error" in line and not line.startswith(" ")]
    return (causes[-1] if causes else repr(exc))[:500]


def _metrics(llm) -> dict:
    out: dict = {}
    for m in llm.get_metrics():
        if not m.name.startswith("vllm:spec_decode"):
            continue
        name = m.name.removeprefix("vllm:spec_decode_")
        out[name] = list(m.values) if hasattr(m, "values") else m.value
    return out


def run_case(target: str, case: dict) -> dict:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    result: dict = {"name": case["name"]}
    kwargs = dict(model=target, dtype="float32", max_model_len=1024, enforce_eager=True, seed=0,
                  disable_log_stats=False, max_num_seqs=16)  # fmt: skip
    if case.get("drafter"):
        kwargs["speculative_config"] = {"method": "eagle3", "model": case["drafter"],
                                        "num_speculative_tokens": case["k"]}  # fmt: skip
    try:
        llm = LLM(**kwargs)
    except BaseException as exc:  # the engine refused the checkpoint: where, and why
        return result | {"stage": _stage(exc, "load"), "error": _error(exc)}
    try:
        taps = llm.collective_rpc(_aux_layers)
        result["aux_hidden_state_layers"] = taps[0]
    except BaseException as exc:
        result["aux_hidden_state_layers_error"] = _error(exc)
    temp, seeds = case.get("temperature", 0.0), case.get("seeds", 1)
    prompts, params = [], []
    for p in case["prompts"]:
        for seed in range(seeds):
            prompts.append(TokensPrompt(prompt_token_ids=p))
            params.append(SamplingParams(temperature=temp, top_p=case.get("top_p", 1.0), max_tokens=case["max_tokens"],
                                         ignore_eos=True, seed=seed if temp > 0 else None))  # fmt: skip
    try:
        outs = llm.generate(prompts, params, use_tqdm=False)
    except BaseException as exc:
        return result | {"stage": "first request", "error": _error(exc)}
    result["tokens"] = [list(o.outputs[0].token_ids) for o in outs]
    result["metrics"] = _metrics(llm)
    result["stage"] = None
    del llm
    gc.collect()
    return result


def worker(target: str, cases: list[dict], conn) -> None:
    for case in cases:
        conn.send(run_case(target, case))
        gc.collect()


def main() -> None:
    spec = json.load(open(sys.argv[1]))
    ctx = mp.get_context("spawn")
    results: list[dict] = []
    pending = list(spec["cases"])
    while pending:
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=worker, args=(spec["target"], pending, child))
        proc.start()
        child.close()
        while pending:
            case = pending[0]
            try:
                res = parent.recv() if parent.poll(case.get("timeout", 600)) else None
            except EOFError:
                res = None
            if res is None:  # the process died (or hung) in this case: record it, go on in a new process
                proc.kill()
                proc.join()
                res = {
                    "name": case["name"],
                    "stage": "crash",
                    "error": f"engine process exit code {proc.exitcode}",
                }
            pending.pop(0)
            results.append(res)
            print(json.dumps({k: v for k, v in res.items() if k != "tokens"}), flush=True)
            if res.get("stage") == "crash":
                break
        proc.join(60)
        if proc.is_alive():
            proc.kill()
            proc.join()
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
