"""`make bench`: every speed target as a measured number in JSON (never a timed unit test).

- train.json: training and capture throughput on the zoo target (tokens/s);
- search.json: the wiring search's cost on a 61-layer target as a multiple of one standalone evaluation of the
  same samples (goal <= 10x), and the evaluation's throughput against the speculators library's own forward on
  the same drafter and inputs (goal >= 1.0x);
- decode.json + decode.png: plain greedy vs eaglewire chain/tree vs assisted generation vs prompt lookup; a
  speed-up above the method's accept length (impossible) marks the run disturbed: said, and never ranked best;
- walk.json: the cost of `eaglewire test`'s accept-length prediction (the engine's walk: the target's greedy
  continuation, one capture forward, K drafter steps over every row) against the target's own greedy decoding of
  the same tokens (goal <= 2x), and of the whole default `test` (SGLang trees and the teacher-forced acc too);
- scale.json: `eaglewire test` on a dump of a Kimi-K2.5-shaped partial target (163,840 x 7,168, 61 layers
  declared, sparse files; `bench/scale.py`): wall time and peak RSS against the bytes of the three tensors it reads
  (goal <= 1.5x).
"""

from __future__ import annotations

import json
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from eaglewire import __version__


def _machine() -> dict:
    return {
        "eaglewire": __version__,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def _timeit(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_train_capture(zoo_target: Path, steps: int = 6, samples: int = 16) -> dict:
    from eaglewire import zoo
    from eaglewire.capture import OnlineSource, capture
    from eaglewire.jobs.train import TrainConfig, train_drafter
    from eaglewire.taps import Wiring
    from eaglewire.targets import load_target

    tgt = load_target(zoo_target)
    windows = zoo.held_out_samples(tgt.tokenizer, 512, limit=samples)
    tokens = sum(s.input_ids.numel() for s in windows)
    with tempfile.TemporaryDirectory() as tmp:
        cap_s = _timeit(lambda: capture(tgt, windows, Path(tmp) / "cap", None, samples_per_shard=8))
        cap3_s = _timeit(
            lambda: capture(tgt, windows, Path(tmp) / "cap3", Wiring.parse("h2,h4,h5"), samples_per_shard=8)
        )
        out = {}
        for bf16 in (False, True):
            cfg = TrainConfig(
                taps="h2,h4,h5",
                draft_vocab_size=2048,
                ttt_steps=5,
                steps=steps,
                batch_size=4,
                eval_every=10**6,
                checkpoint_every=10**6,
                bf16=bf16,
            )
            src = OnlineSource(tgt, windows, Wiring.parse("h2,h4,h5"))
            res = train_drafter(tgt, src, Path(tmp) / f"d{bf16}", cfg, val_fraction=0.0)
            out["bf16" if bf16 else "fp32"] = round(res.tokens_per_second, 1)
    return {
        "target": str(zoo_target),
        "machine": _machine(),
        "capture_all_taps_tokens_per_second": round(tokens / cap_s, 1),
        "capture_3_taps_tokens_per_second": round(tokens / cap3_s, 1),
        "train_tokens_per_second": out,
        "train_note": "online capture (target forward included), TTT 5 steps, batch 4 x 512 tokens, 1 drafter layer",
    }


def bench_search(
    layers: int = 61, hidden: int = 96, samples: int = 8, seq: int = 160, steps: int = 5
) -> dict:
    """Search cost on a 61-layer (random-weight) Llama: speed is what is measured here, not recovery."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from eaglewire.data import Sample
    from eaglewire.drafter import Eagle3Drafter, init_weights
    from eaglewire.formats import DrafterArch
    from eaglewire.jobs.evaluate import captured, evaluate
    from eaglewire.jobs.search import search
    from eaglewire.taps import default_wiring
    from eaglewire.targets import LoadedTarget, read_target

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=512,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    model = LlamaForCausalLM(cfg).eval()
    with tempfile.TemporaryDirectory() as tmp:
        model.config.save_pretrained(tmp)
        tgt = LoadedTarget(model, None, read_target(tmp), Path(tmp))
    arch = DrafterArch(
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_layers=1,
        num_heads=4,
        num_kv_heads=2,
        head_dim=hidden // 4,
        rms_norm_eps=1e-6,
        vocab_size=512,
        draft_vocab_size=256,
        target_hidden_size=hidden,
        n_aux=3,
    )
    drafter = init_weights(Eagle3Drafter(arch)).eval()
    g = torch.Generator().manual_seed(0)
    data = [
        Sample(torch.randint(0, 512, (seq,), generator=g), torch.ones(seq, dtype=torch.bool))
        for _ in range(samples)
    ]
    wiring = default_wiring(layers)
    t_cap3 = _timeit(lambda: captured(tgt, data, list(wiring.indices)))
    items3 = captured(tgt, data, list(wiring.indices))
    t_eval = _timeit(lambda: evaluate(drafter, items3, wiring, steps, "chain"))
    t_cap_all = _timeit(lambda: captured(tgt, data, list(range(layers + 1))))
    items = captured(tgt, data, list(range(layers + 1)))
    res = {}
    t_search = _timeit(lambda: res.setdefault("r", search(drafter, items, layers, [wiring])))
    one_eval = t_cap3 + t_eval
    return {
        "target": f"random Llama, {layers} layers, hidden {hidden}",
        "samples": samples,
        "tokens_per_sample": seq,
        "standalone_eval_seconds": round(one_eval, 3),
        "standalone_eval_parts": {
            "capture_3_taps": round(t_cap3, 3),
            "drafter_chain_5_steps": round(t_eval, 3),
        },
        "search_seconds": round(t_cap_all + t_search, 3),
        "search_parts": {
            "capture_all_taps": round(t_cap_all, 3),
            "candidates": round(t_search, 3),
            "candidates_scored": res["r"].evaluated,
        },
        "search_cost_multiple": round((t_cap_all + t_search) / one_eval, 2),
        "goal_multiple": 10.0,
        "machine": _machine(),
    }


def bench_eval_vs_speculators(steps: int = 3, seq: int = 256, repeats: int = 5) -> dict:
    """Our drafter's unrolled forward vs speculators' Eagle3DraftModel forward, same weights and inputs."""
    from eaglewire.drafter import Eagle3Drafter
    from eaglewire.formats import read_drafter

    try:
        from speculators.config import SpeculatorsConfig, VerifierConfig
        from speculators.models.eagle3 import Eagle3DraftModel, Eagle3SpeculatorConfig
        from speculators.proposals.greedy import GreedyTokenProposalConfig
    except ImportError:
        return {"skipped": "the speculators library is not installed (make installs it as the test oracle)"}
    from transformers import LlamaConfig

    hidden = 384
    tl = LlamaConfig(
        vocab_size=4096,
        hidden_size=hidden,
        intermediate_size=1024,
        num_hidden_layers=1,
        num_attention_heads=6,
        num_key_value_heads=2,
        max_position_embeddings=2048,
    )
    tl._attn_implementation = "eager"
    cfg = Eagle3SpeculatorConfig(
        transformer_layer_config=tl,
        draft_vocab_size=2048,
        eagle_aux_hidden_state_layer_ids=[2, 4, 5],
        speculators_config=SpeculatorsConfig(
            algorithm="eagle3",
            proposal_methods=[GreedyTokenProposalConfig()],
            default_proposal_method="greedy",
            verifier=VerifierConfig(name_or_path=None, architectures=[]),
        ),
    )
    torch.manual_seed(0)
    ref = Eagle3DraftModel(cfg).eval()
    with torch.no_grad():
        for _name, p in ref.named_parameters():
            if p.isnan().any():
                p.normal_(0, 0.02)
        chosen = torch.sort(torch.randperm(4096)[:2048]).values
        ref.d2t.copy_(chosen - torch.arange(2048))
        ref.t2d.zero_()
        ref.t2d[chosen] = True
    with tempfile.TemporaryDirectory() as tmp:
        ref.save_pretrained(tmp)
        ours = Eagle3Drafter.from_checkpoint(read_drafter(tmp)).eval()
    aux = torch.randn(1, seq, 3 * hidden)
    ids = torch.randint(0, 4096, (1, seq))

    def run_ref():
        with torch.no_grad():
            ref(hidden_states=aux, input_ids=ids, document_ids=torch.zeros_like(ids), ttt_steps=steps)

    def run_ours():
        with torch.no_grad():
            ours.unroll(aux, ids, steps, feed="teacher")

    run_ref(), run_ours()
    t_ref = sorted(_timeit(run_ref) for _ in range(repeats))[repeats // 2]
    t_ours = sorted(_timeit(run_ours) for _ in range(repeats))[repeats // 2]
    return {
        "drafter": "1 layer, hidden 384, draft vocab 2048",
        "tokens": seq,
        "ttt_steps": steps,
        "speculators_tokens_per_second": round(seq / t_ref, 1),
        "eaglewire_tokens_per_second": round(seq / t_ours, 1),
        "ratio": round(t_ref / t_ours, 3),
        "goal_ratio": 1.0,
        "note": "speculators 0.9.0 with eager attention (its flex-attention default is for GPUs)",
    }


def _sparse_safetensors(path: Path, shapes: dict[str, tuple[list[int], str]]) -> None:
    """A safetensors file whose header is real and whose data is a hole (zeros, no disk, no memory)."""
    import struct

    size = {"BF16": 2, "I64": 8, "BOOL": 1}
    header, offset = {}, 0
    for name, (shape, dtype) in shapes.items():
        n = size[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        f.truncate(8 + len(blob) + offset)


def bench_static_check() -> dict:
    """`eaglewire check` on a Llama-3.3-70B-shaped drafter (fc 8192 x 24576, lm_head 32000 x 8192, embed 128256 x
    8192: 2.9 GB of bf16 as sparse files): it reads headers and the small tensors only. Measured in a fresh
    process: peak RSS and the check's own time (the interpreter and torch import are reported apart)."""
    import subprocess
    import sys

    h, inter, heads, kv, vocab, dv = 8192, 28672, 64, 8, 128256, 32000
    hd = h // heads
    with tempfile.TemporaryDirectory() as tmp:
        d, t = Path(tmp) / "drafter", Path(tmp) / "target"
        d.mkdir(), t.mkdir()
        (t / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                                   "num_hidden_layers": 80, "hidden_size": h, "vocab_size": vocab}))  # fmt: skip
        (d / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
            "hidden_size": h, "intermediate_size": inter, "num_hidden_layers": 1, "num_attention_heads": heads,
            "num_key_value_heads": kv, "vocab_size": vocab, "draft_vocab_size": dv,
            "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 39, 76]}}))  # fmt: skip
        bf = "BF16"
        shapes = {
            "midlayer.self_attn.q_proj.weight": ([heads * hd, 2 * h], bf), "midlayer.self_attn.k_proj.weight": ([kv * hd, 2 * h], bf),
            "midlayer.self_attn.v_proj.weight": ([kv * hd, 2 * h], bf), "midlayer.self_attn.o_proj.weight": ([h, heads * hd], bf),
            "midlayer.mlp.gate_proj.weight": ([inter, h], bf), "midlayer.mlp.up_proj.weight": ([inter, h], bf),
            "midlayer.mlp.down_proj.weight": ([h, inter], bf), "midlayer.input_layernorm.weight": ([h], bf),
            "midlayer.hidden_norm.weight": ([h], bf), "midlayer.post_attention_layernorm.weight": ([h], bf),
            "fc.weight": ([h, 3 * h], bf), "norm.weight": ([h], bf), "lm_head.weight": ([dv, h], bf),
            "embed_tokens.weight": ([vocab, h], bf), "d2t": ([dv], "I64"), "t2d": ([vocab], "BOOL"),
        }  # fmt: skip
        _sparse_safetensors(d / "model.safetensors", shapes)
        nbytes = (d / "model.safetensors").stat().st_size
        code = (
            "import json, resource, sys, time; t0 = time.perf_counter()\n"
            "from eaglewire.jobs.check import check\n"
            "t1 = time.perf_counter(); rep = check(sys.argv[1], sys.argv[2], ['sglang==0.5.23', 'vllm==0.33.0'],"
            " trained_with='specforge==0.2.0'); t2 = time.perf_counter()\n"
            "print(json.dumps({'import_s': t1 - t0, 'check_s': t2 - t1, 'verdict': rep.verdict,"
            " 'peak_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))"
        )
        r = subprocess.run(
            [sys.executable, "-c", code, str(d), str(t)], capture_output=True, text=True, check=True
        )
        m = json.loads(r.stdout.strip().splitlines()[-1])
    return {
        "drafter": "Llama-3.3-70B-shaped EAGLE-3 drafter (bf16, sparse file)",
        "checkpoint_bytes": nbytes,
        "check_seconds": round(m["check_s"], 3),
        "import_seconds": round(m["import_s"], 3),
        "peak_rss_mb": round(m["peak_rss_mb"], 1),
        "verdict": m["verdict"],
        "note": "the file's data are holes: its zero d2t/t2d are (rightly) flagged, which is the verdict above",
        "goal": {"check_seconds": 1.0, "peak_rss_mb": 300},
        "machine": _machine(),
    }


def bench_partial_target() -> dict:
    """The partial-target test at Kimi-K2.5's real vocabulary and hidden size (see `bench/scale.py`)."""
    from eaglewire.bench.scale import measure, write_case

    with tempfile.TemporaryDirectory() as tmp:
        res = measure(write_case(Path(tmp)))
    res["note"] = (
        "safetensors memory-maps each tensor: the embedding pages in only the rows of the tokens used, the "
        "lm_head pages in whole (every row scores); the 61 layer shards are never opened"
    )
    return res


def bench_walk_cost(zoo_target: Path, samples: int = 8, prompt_len: int = 256, new_tokens: int = 128) -> dict:
    """Seconds of the walk prediction vs the target's greedy decoding of the same prompts and tokens (fp32, one
    process, after loading), for K = 5; and of the whole default `test` on the same prompts."""
    from eaglewire import zoo
    from eaglewire.jobs.decode import greedy_reference
    from eaglewire.jobs.evaluate import DEFAULT_TREES, StandaloneOptions, standalone_test
    from eaglewire.jobs.pair import load_pair

    pair = load_pair(zoo_target, zoo.drafter_dir("default"))
    tgt = pair.target
    windows = zoo.held_out_samples(tgt.tokenizer, 512, limit=samples)
    prompts = [w.input_ids[:prompt_len] for w in windows]
    plain = _timeit(lambda: [greedy_reference(tgt.model, p, new_tokens) for p in prompts])
    hf = _timeit(
        lambda: [tgt.model.generate(p[None], max_new_tokens=new_tokens, do_sample=False) for p in prompts]
    )
    base = dict(samples=samples, prompt_len=prompt_len, new_tokens=new_tokens, steps=5)
    walk = _timeit(lambda: standalone_test(zoo.drafter_dir("default"), zoo_target,
                                           StandaloneOptions(**base, trees=(), teacher=False), zoo.held_out_samples))  # fmt: skip
    full = _timeit(lambda: standalone_test(zoo.drafter_dir("default"), zoo_target,
                                           StandaloneOptions(**base, trees=DEFAULT_TREES), zoo.held_out_samples))  # fmt: skip
    load = _timeit(lambda: load_pair(zoo_target, zoo.drafter_dir("default")))
    greedy = min(plain, hf)
    return {
        "prompts": samples, "prompt_len": prompt_len, "new_tokens": new_tokens, "draft_steps": 5,
        "greedy_decode_s": {"own_loop": round(plain, 2), "transformers_generate": round(hf, 2)},
        "walk_prediction_s": round(walk - load, 2), "full_test_s": round(full - load, 2), "load_s": round(load, 2),
        "walk_over_greedy": round((walk - load) / greedy, 3), "full_test_over_greedy": round((full - load) / greedy, 3),
        "goal": {"walk_over_greedy": 2.0, "full_test_over_greedy": 2.0},
        "note": "greedy = the faster of eaglewire's plain KV-cache loop and transformers' generate, same tokens; "
                "test times exclude loading the pair (measured separately)",
        "machine": _machine(),
    }  # fmt: skip


def run_all(out: Path, progress: Callable[[str], None] | None = None, decode: bool = True) -> dict:
    """Every benchmark; JSON results are written to `out`; `results["decode"]` is the decoding BenchReport."""
    from eaglewire import zoo
    from eaglewire.bench.decode import bench_decoding

    say = progress or (lambda _: None)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    if zoo.is_built():
        say("training and capture throughput")
        results["train"] = bench_train_capture(zoo.target_dir())
    say("static check on a 70B-shaped drafter")
    results["static_check"] = bench_static_check()
    say("wiring search cost on a 61-layer target")
    results["search"] = bench_search()
    say("evaluation throughput vs speculators")
    results["search"]["eval_vs_speculators"] = bench_eval_vs_speculators()
    if zoo.is_built():
        say("the walk prediction's cost against greedy decoding")
        results["walk"] = bench_walk_cost(zoo.target_dir())
    say("partial-target test at Kimi-K2.5 scale (peak RSS, time)")
    results["scale"] = bench_partial_target()
    for name, data in results.items():
        (out / f"{name}.json").write_text(json.dumps(data, indent=2))
    if decode and zoo.is_built() and (zoo.drafter_dir("default") / "config.json").exists():
        say("decoding benchmark")
        results["decode"] = bench_decoding(
            zoo.target_dir(),
            zoo.drafter_dir("default"),
            zoo.held_out_samples,
            assistant=zoo.zoo_dir() / "assistant",
        )
        note = results["decode"].to_dict()["disturbed_note"]
        if note:  # a speed-up above tau: said, and never ranked best (decode.json marks it)
            say(f"decoding benchmark: {note}")
    return results
