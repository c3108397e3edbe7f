"""Generated launch commands for the engine oracle and for the no-exit-2 property test (no engine needed).

A case is a launch command whose model paths are `{models}/<family>` placeholders, filled in with a folder of
config.json-only model directories (`write_models`). The strategies cover what the engines' argument code reads:
algorithms and methods (EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM; eagle, eagle3, draft_model, ngram, suffix, mtp,
upper case, absent), the three sizes present or absent, page size, attention backend, TP/DP, max running requests,
`--speculative-adaptive`, and vLLM's `--speculative-config` as JSON, dotted keys or `--spec-*` flags.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import eaglewire

PLACEHOLDER = "{models}"

_LLAMA = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "torch_dtype": "bfloat16",
}
_DSV3 = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "max_position_embeddings": 163840,
    "rms_norm_eps": 1e-6,
    "n_group": 8,
    "topk_group": 4,
    "routed_scaling_factor": 2.5,
    "norm_topk_prob": True,
    "scoring_func": "sigmoid",
    "topk_method": "noaux_tc",
    "num_nextn_predict_layers": 1,
    "rope_theta": 10000.0,
    "torch_dtype": "bfloat16",
}
MODELS: dict[str, dict] = {
    "llama": {"architectures": ["LlamaForCausalLM"], **_LLAMA},
    "qwen3": {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
              "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32,
              "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
              "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "torch_dtype": "bfloat16"},
    "deepseek_v3": {"architectures": ["DeepseekV3ForCausalLM"], **_DSV3},
    "deepseek_v3_no_mtp": {"architectures": ["DeepseekV3ForCausalLM"], **_DSV3, "num_nextn_predict_layers": 0},
    # Drafters
    "eagle3_llama": {"architectures": ["LlamaForCausalLMEagle3"], **_LLAMA, "num_hidden_layers": 1,
                     "draft_vocab_size": 32000, "target_hidden_size": 4096},
    "small_llama": {"architectures": ["LlamaForCausalLM"], **_LLAMA, "hidden_size": 2048,
                    "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32},
    "small_qwen3": {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
                    "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
                    "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
                    "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "torch_dtype": "bfloat16"},
}  # fmt: skip
# Kimi-K2.5 (a wrapper whose text model is DeepSeek-V3) as the example ships it.
MODELS["kimi_k25"] = json.loads(
    (Path(eaglewire.__file__).parent / "examples" / "kimi-k25" / "target" / "config.json").read_text()
)
TARGETS = ("llama", "qwen3", "deepseek_v3", "kimi_k25")
MLA = {"deepseek_v3", "deepseek_v3_no_mtp", "kimi_k25"}


def write_models(root: Path) -> Path:
    """Write every model directory (config.json only) under `root`; returns `root`."""
    for name, config in MODELS.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "config.json").write_text(json.dumps(config, indent=1))
    return root


def fill(argv: list[str], models: Path | str) -> list[str]:
    return [a.replace(PLACEHOLDER, str(models)) for a in argv]


def _m(name: str) -> str:
    return f"{PLACEHOLDER}/{name}"


def _maybe(value: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), value)


@st.composite
def sglang_commands(draw) -> list[str]:
    """`python -m sglang.launch_server ...` with model paths as placeholders."""
    target = draw(st.sampled_from(TARGETS))
    argv = ["python", "-m", "sglang.launch_server", "--model-path", _m(target)]
    algorithm = draw(
        st.sampled_from(["EAGLE3", "EAGLE3", "EAGLE", "NEXTN", "STANDALONE", "NGRAM", "eagle3", None])
    )
    if algorithm is not None:
        argv += ["--speculative-algorithm", algorithm]
    draft = {"EAGLE3": "eagle3_llama", "STANDALONE": "small_llama"}.get((algorithm or "").upper())
    if algorithm is not None and algorithm.upper() in ("EAGLE", "NEXTN") and target not in MLA:
        draft = "eagle3_llama"  # an EAGLE-3 head run as EAGLE: starts, and lint says why it is wrong
    if draft is not None and draw(st.integers(0, 9)) > 0:
        argv += ["--speculative-draft-model-path", _m(draft)]
    sizes = (("--speculative-num-steps", 1, 6), ("--speculative-eagle-topk", 1, 4),
             ("--speculative-num-draft-tokens", 2, 16))  # fmt: skip
    shape = draw(st.sampled_from(["all", "all", "none", "some"]))
    for flag, lo, hi in sizes:
        if shape == "all" or (shape == "some" and draw(st.booleans())):
            argv += [flag, str(draw(st.integers(lo, hi)))]
    if draw(st.integers(0, 5)) == 0:
        argv.append("--speculative-adaptive")
    page = draw(_maybe(st.sampled_from([1, 16, 64])))
    if page is not None:
        argv += ["--page-size", str(page)]
    backends = [
        "flashinfer",
        "fa3",
        "triton",
        *(["flashmla", "trtllm_mla"] if target in MLA else ["trtllm_mha"]),
    ]
    backend = draw(_maybe(st.sampled_from(backends)))
    if backend is not None:
        argv += ["--attention-backend", backend]
    tp = draw(_maybe(st.sampled_from([1, 2, 8])))
    if tp is not None:
        argv += ["--tp-size", str(tp)]
        if tp > 1 and draw(st.integers(0, 4)) == 0:
            argv += ["--dp-size", str(tp), "--enable-dp-attention"]
    mrr = draw(_maybe(st.sampled_from([16, 128])))
    if mrr is not None:
        argv += ["--max-running-requests", str(mrr)]
    return _spelled(draw, argv, start=3)


@st.composite
def vllm_commands(draw) -> list[str]:
    """`vllm serve MODEL --speculative-config ...` (or dotted keys, or --spec-*), placeholders for paths."""
    target = draw(st.sampled_from(["llama", "qwen3", "deepseek_v3", "deepseek_v3_no_mtp"]))
    argv = ["vllm", "serve", _m(target)]
    method = draw(st.sampled_from(["eagle3", "eagle3", "eagle", "EAGLE3", "draft_model", "ngram", "suffix", "mtp",
                                   None]))  # fmt: skip
    spec: dict = {}
    if method is not None:
        spec["method"] = method
    model_choices = {
        "eagle3": ["eagle3_llama"], "EAGLE3": ["eagle3_llama"], "eagle": ["eagle3_llama"],
        "draft_model": ["small_llama", "small_qwen3"], "mtp": [None, target], "ngram": [None, "ngram"],
        "suffix": [None], None: ["eagle3_llama", "small_llama", "ngram", None],
    }[method]  # fmt: skip
    model = draw(st.sampled_from(model_choices))
    if model is not None:
        spec["model"] = model if model == "ngram" else _m(model)
    k = draw(_maybe(st.integers(1, 5)))
    if k is not None or draw(st.integers(0, 3)) > 0:
        spec["num_speculative_tokens"] = k if k is not None else draw(st.integers(1, 5))
    tp = draw(st.sampled_from([1, 1, 2, 4]))
    draft_tp = draw(_maybe(st.sampled_from([1, 2, 4])))
    if draft_tp is not None and spec.get("model") not in (None, "ngram"):
        spec["draft_tensor_parallel_size"] = draft_tp
    if method == "ngram" and draw(st.booleans()):
        spec["prompt_lookup_max"] = draw(st.integers(2, 6))
    if spec.get("model") == _m("eagle3_llama") and draw(st.integers(0, 2)) == 0:
        spec |= draw(_verify_keys(spec.get("num_speculative_tokens")))
    form = draw(st.sampled_from(["json", "json", "dotted", "short"]))
    if form == "short" and set(spec) <= {"method", "model", "num_speculative_tokens"} and spec:
        names = {
            "method": "--spec-method",
            "model": "--spec-model",
            "num_speculative_tokens": "--spec-tokens",
        }
        for key, value in spec.items():
            argv += [names[key], str(value)]
    elif form == "dotted" and spec:
        for key, value in spec.items():
            argv += [f"--speculative-config.{key}", str(value)]
    elif spec:
        argv += ["--speculative-config", json.dumps(spec)]
    if tp > 1:
        argv += ["--tensor-parallel-size", str(tp)]
    return _spelled(draw, argv, start=3)


@st.composite
def _verify_keys(draw, k: int | None) -> dict:
    """How a verify accepts drafts: every release's names for it (0.18.0-0.34.0), the synthetic verify's rates
    (mostly valid for `k` drafts, sometimes not) and FLy's window (engines/vllm/sampling.py)."""
    keys: dict = {}
    method = draw(st.sampled_from(["standard", "strict", "probabilistic", "synthetic", "synthetic", "block", "fly",
                                   "fly", "Standard", None]))  # fmt: skip
    if method is not None:
        keys["rejection_sample_method"] = method
    sample = draw(st.sampled_from(["greedy", "probabilistic", "gumbel", None, None, None]))
    if sample is not None:
        keys["draft_sample_method"] = sample
    n = k or 1
    if method == "synthetic" or draw(st.integers(0, 5)) == 0:
        rates = [round(0.9 ** (i + 1), 3) for i in range(n)]
        keys |= draw(st.sampled_from([
            {"synthetic_acceptance_length": 1 + n / 2}, {"synthetic_acceptance_rates": rates}, {},
            {"synthetic_acceptance_length": n + 2.0}, {"synthetic_acceptance_rates": [*rates[::-1], 0.5]},
            {"synthetic_acceptance_rates": rates, "synthetic_acceptance_length": 2.0},
        ]))  # fmt: skip
    if method == "fly" or draw(st.integers(0, 7)) == 0:
        window = draw(st.sampled_from([None, None, 1, n - 1, n, 0]))
        if window is not None:
            keys["fly_window_size"] = window
    return keys


def _spelled(draw, argv: list[str], start: int) -> list[str]:
    """Flags as users also write them: one cut to a prefix (argparse takes a prefix of one flag as that flag and
    stops at a prefix of several), now and then a flag the release does not define (it stops at that too)."""
    flags = [i for i in range(start, len(argv)) if argv[i].startswith("--") and "." not in argv[i]]
    if flags and draw(st.integers(0, 3)) == 0:
        i = draw(st.sampled_from(flags))
        name = argv[i]
        argv = [*argv[:i], name[: draw(st.integers(min(len(name), 8), len(name)))], *argv[i + 1 :]]
    if draw(st.integers(0, 15)) == 0:
        argv = [*argv, "--speculative-not-a-flag", "1"]
    return argv


def draw_commands(strategy: st.SearchStrategy, n: int) -> list[list[str]]:
    """`n` distinct commands from `strategy`, the same on every run (derandomized hypothesis)."""
    seen: dict[str, list[str]] = {}

    @settings(max_examples=4 * n, derandomize=True, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(strategy)
    def collect(argv: list[str]) -> None:
        if len(seen) < n:
            seen.setdefault(json.dumps(argv), argv)

    collect()
    return list(seen.values())
