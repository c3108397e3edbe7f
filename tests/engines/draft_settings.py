"""Draft-settings records: what each vLLM release's own config and loader code give the draft model.

    cd tests && python -m engines.draft_settings --python VENV/bin/python [--release V ...] [--out DIR] [--force]

For each release (default: every vLLM release from 0.8.5 in the ledger with EAGLE-3), install that release's wheel
without dependencies into the model-code venv (model_code.install) and run draft_probe.py there over launches that
differ in what the draft's settings depend on: a target checkpoint quantized each way users serve (FP8, GPTQ, AWQ,
compressed-tensors W8A8, modelopt NVFP4; config files only, no weights), `--quantization fp8` on an unquantized
checkpoint, the draft's own quantization, tensor parallel size, dtype and context length flags; each for the
EAGLE-3 head and for DeepSeek's MTP layers. One record per release,
`engines/vllm/data/draft-settings/vllm-V.json` (level `model-code`): per case, the engine config the
release built (target's and draft's quantization, dtype, context length, TP) and the draft's decoder layer as its
proposer built it (the quantization config its code passed, the TP it was built under), or the engine's error.
tests/test_draft_settings_records.py replays every record against lint's and check's rows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from packaging.version import Version

from eaglewire.rules import ENGINES_DIR
from engines.capture_probe import YARN
from engines.model_code import install, releases

PROBE = Path(__file__).with_name("draft_probe.py")
# beside the observed records, not among them: a record of the draft's settings, not of capture
OUT = ENGINES_DIR / "vllm" / "data" / "draft-settings"
# errors of what the CPU venv lacks (CUDA), not of what the release decides: such a case makes no claim
ARTEFACTS = ("Torch not compiled with CUDA", "libcudart", "_OpNamespace")
FIRST = "0.8.5"

_LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
          "intermediate_size": 512, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "vocab_size": 1024, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
          "torch_dtype": "bfloat16", "tie_word_embeddings": False}  # fmt: skip
# the EAGLE-3 head as EAGLE's own checkpoints name it (every release resolves it; SpecForge's
# LlamaForCausalLMEagle3 only from the release that registers that name: the table's draft-architecture rows)
_EAGLE3 = {**_LLAMA, "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 1, "draft_vocab_size": 512,
           "target_hidden_size": 256}  # fmt: skip
_DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 256,
         "intermediate_size": 512, "moe_intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
         "num_key_value_heads": 4, "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
         "first_k_dense_replace": 1, "moe_layer_freq": 1, "kv_lora_rank": 64, "q_lora_rank": 96,
         "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "vocab_size": 1024,
         "max_position_embeddings": 16384, "rms_norm_eps": 1e-6, "n_group": 2, "topk_group": 1,
         "routed_scaling_factor": 2.5, "norm_topk_prob": True, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
         "num_nextn_predict_layers": 1, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
         # DeepSeek-V3's own (config.json): releases whose attention forces deepseek_yarn read its factor
         "rope_scaling": YARN}  # fmt: skip
# a target of each family the table says vLLM's eagle3 model_type gate refused before the release that serves it
# (taps.GROUPS, `refused_at="config"`), its config.json as its checkpoints name it, the Llama target's sizes: the
# case `eagle3/gate <model_type>` runs the release's own gate (SpeculativeConfig, in create_engine_config), which
# reads only the target's (text) model_type; the capture records take its answer for those families
# (model_code.gate_answer)
_TEXT = {k: v for k, v in _LLAMA.items() if k not in ("architectures", "torch_dtype")}
GATED = {
    "qwen3": {**_LLAMA, "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 64},
    "mistral": {**_LLAMA, "architectures": ["MistralForCausalLM"], "model_type": "mistral"},
    "gpt_oss": {**_LLAMA, "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "head_dim": 64,
                "num_local_experts": 4, "num_experts_per_tok": 2},
    "mistral3": {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
                 "text_config": {**_TEXT, "model_type": "mistral"}, "torch_dtype": "bfloat16"},
}  # fmt: skip
# V0 (the only engine a CPU runs before 0.9.1, CUDA's EAGLE default before 0.9.0, gone at 0.10.0): a target of each
# other family the table lists, launched on V0 (case `eagle3/V0 target <family>`, VLLM_USE_V1=0), its config.json
# as its checkpoints name it (its text model_type is what the gate reads), the Llama target's sizes. The gate
# (`"llama" not in hf_text_config.model_type`, config.py:2588-2592 @0.8.5.post1) refuses it at the config check,
# or lets it through to V0's draft build, which refuses the EAGLE-3 head's fc at load as for Llama (`record`
# covers V0 for the families either answer decides). Kimi-K2's model_type needs its checkpoint's remote code.
_QWEN_MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128, "head_dim": 64}
V0_TARGETS = {
    "qwen2": {**_LLAMA, "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"},
    "qwen3": GATED["qwen3"],
    "qwen3_moe": {**_LLAMA, "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", **_QWEN_MOE},
    "mistral": GATED["mistral"],
    "mistral3": GATED["mistral3"],
    "gpt_oss": GATED["gpt_oss"],
    "qwen2_vl": {"architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl",
                 "text_config": {**_TEXT, "model_type": "qwen2_vl_text"}, "torch_dtype": "bfloat16"},
    "qwen2_5_vl": {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
                   "text_config": {**_TEXT, "model_type": "qwen2_5_vl_text"}, "torch_dtype": "bfloat16"},
    "llama4": {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
               "text_config": {**_TEXT, "model_type": "llama4_text"}, "torch_dtype": "bfloat16"},
    "deepseek_v2": {**_DSV3, "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2"},
    "deepseek_v3": _DSV3,
    # as Kimi-K2's checkpoints are: DeepSeek-V3's architecture under model_type `kimi_k2`, whose config class is the
    # checkpoint's own code (`REMOTE_CODE`: its class, with the type; a launch passes --trust-remote-code)
    "kimi_k2": {**_DSV3, "model_type": "kimi_k2",
                "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}},
}  # fmt: skip
# the config code a checkpoint ships (`auto_map`): Kimi-K2's configuration_deepseek.py, its class and model_type,
# its __init__ keeping each DeepSeek-V3 key of config.json as an attribute (the checkpoint's own names them one by one)
_DSV3_KEYS = tuple(k for k in _DSV3 if k not in ("architectures", "model_type", "torch_dtype"))
REMOTE_CODE = {"v0-kimi_k2": {"configuration_deepseek.py": (
    "from transformers import PretrainedConfig\n\n\n"
    "class DeepseekV3Config(PretrainedConfig):\n"
    "    model_type = \"kimi_k2\"\n\n"
    "    def __init__(self, **kwargs):\n"
    f"        for key in {_DSV3_KEYS!r}:\n"
    "            setattr(self, key, kwargs.pop(key, None))\n"
    "        super().__init__(**kwargs)\n"
)}}  # fmt: skip
# a target checkpoint's quantization_config, as each producer writes it (config.json); modelopt also writes
# hf_quant_config.json, which older releases read
QUANT: dict[str, dict] = {
    "fp8": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True,
             "damp_percent": 0.01, "static_groups": False, "true_sequential": True, "lm_head": False},
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
    "compressed-tensors": {
        "quant_method": "compressed-tensors", "format": "int-quantized", "quantization_status": "compressed",
        "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"],
                                      "weights": {"num_bits": 8, "type": "int", "symmetric": True,
                                                  "strategy": "channel", "dynamic": False},
                                      "input_activations": {"num_bits": 8, "type": "int", "symmetric": True,
                                                            "strategy": "token", "dynamic": True}}}},
}  # fmt: skip
# modelopt's hf_quant_config.json; checkpoints copy it into config.json's quantization_config, newer ones with the
# algorithm also at the top level (releases read one form or the other: both are there)
MODELOPT_FILE = {"producer": {"name": "modelopt", "version": "0.29.0"},
                 "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                                  "exclude_modules": ["lm_head"]}}  # fmt: skip
QUANT["modelopt-nvfp4"] = {"quant_method": "modelopt", **MODELOPT_FILE, **MODELOPT_FILE["quantization"]}


def write_models(root: Path) -> Path:
    """Config files of every target and drafter the cases load (no weights: the loader stops before them)."""
    models = {"llama": _LLAMA, "eagle3": _EAGLE3, "eagle3-short": {**_EAGLE3, "max_position_embeddings": 2048},
              "eagle3-fp16": {**_EAGLE3, "torch_dtype": "float16"}, "deepseek_v3": _DSV3}  # fmt: skip
    models |= {f"llama-{q}": {**_LLAMA, "quantization_config": c} for q, c in QUANT.items()}
    models |= {f"gate-{model_type}": config for model_type, config in GATED.items()}
    models |= {f"v0-{family}": config for family, config in V0_TARGETS.items()}
    for q in ("gptq", "awq"):  # their kernels take float16 activations (the dtype such checkpoints carry)
        models[f"llama-{q}"]["torch_dtype"] = "float16"
    models["deepseek_v3-fp8"] = {
        **_DSV3,
        "quantization_config": {**QUANT["fp8"], "weight_block_size": [128, 128]},
    }
    for name, config in models.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "config.json").write_text(json.dumps(config, indent=1))
    (root / "llama-modelopt-nvfp4" / "hf_quant_config.json").write_text(json.dumps(MODELOPT_FILE, indent=1))
    for name, files in REMOTE_CODE.items():
        for file, text in files.items():
            (root / name / file).write_text(text)
    return root


def cases(root: Path, release: str) -> list[dict]:
    """Every launch, as EngineArgs keyword arguments: what the draft's settings depend on, one change at a time."""
    # the method name the release takes ("mtp" from 0.11.0: 0.10.2's SpeculativeConfig refuses it)
    mtp = "deepseek_mtp" if Version(release) < Version("0.11.0") else "mtp"
    # the loader users run (DefaultModelLoader): the build stops before any weight is read. Not "dummy": 0.9.0's
    # DummyModelLoader.load_model calls initialize_model(vllm_config) without the draft's model_config, so it
    # builds the target in the draft's place (model_loader/dummy_loader.py:31 @0.9.0)
    base = {"load_format": "auto", "skip_tokenizer_init": True, "max_model_len": 4096, "enforce_eager": True}

    def eagle3(target: str, drafter: str = "eagle3", spec: dict | None = None, **extra) -> dict:
        return (
            base
            | {
                "model": str(root / target),
                "speculative_config": {
                    "method": "eagle3",
                    "model": str(root / drafter),
                    "num_speculative_tokens": 3,
                    **(spec or {}),
                },
            }
            | extra
        )

    def nextn(target: str, spec: dict | None = None, **extra) -> dict:
        return (
            base
            | {
                "model": str(root / target),
                "speculative_config": {"method": mtp, "num_speculative_tokens": 1, **(spec or {})},
            }
            | extra
        )

    out = [("eagle3", eagle3("llama"))]
    out += [(f"eagle3/target-{q}", eagle3(f"llama-{q}")) for q in QUANT]
    out += [
        ("eagle3/--quantization fp8", eagle3("llama", quantization="fp8")),
        ("eagle3/target-fp8/draft quantization fp8", eagle3("llama-fp8", spec={"quantization": "fp8"})),
        ("eagle3/-tp 2, draft_tensor_parallel_size 1",
         eagle3("llama", spec={"draft_tensor_parallel_size": 1}, tensor_parallel_size=2)),
        ("eagle3/--dtype float16", eagle3("llama", dtype="float16")),
        ("eagle3/drafter float16", eagle3("llama", "eagle3-fp16")),
        ("eagle3/drafter context 2048", eagle3("llama", "eagle3-short")),
        ("eagle3/draft max_model_len 1024", eagle3("llama", spec={"max_model_len": 1024})),
        ("mtp", nextn("deepseek_v3")),
        ("mtp/--quantization fp8", nextn("deepseek_v3", quantization="fp8")),
        ("mtp/target-fp8", nextn("deepseek_v3-fp8")),
        ("mtp/target-fp8/draft quantization none", nextn("deepseek_v3-fp8", {"quantization": None})),
        ("mtp/-tp 2, draft_tensor_parallel_size 1",
         nextn("deepseek_v3", {"draft_tensor_parallel_size": 1}, tensor_parallel_size=2)),
    ]  # fmt: skip
    out += [(f"eagle3/gate {model_type}", eagle3(f"gate-{model_type}")) for model_type in GATED]
    envs: dict[str, dict] = {}
    if Version(release) < Version("0.10.0"):  # the engine (V0 or V1) is chosen per launch, VLLM_USE_V1 first
        for value in ("1", "0"):
            name = f"eagle3/VLLM_USE_V1={value}"
            out.append((name, eagle3("llama")))
            envs[name] = {"VLLM_USE_V1": value}
        for family in V0_TARGETS:  # every other family on V0
            name = f"eagle3/V0 target {family}"
            remote = {"trust_remote_code": True} if f"v0-{family}" in REMOTE_CODE else {}
            out.append((name, eagle3(f"v0-{family}", **remote)))
            envs[name] = {"VLLM_USE_V1": "0"}
    # the EAGLE-3 head's fc (3 target states in, one hidden out): the weight a V0 build is handed (draft_probe)
    fc = [_EAGLE3["hidden_size"], 3 * _EAGLE3["target_hidden_size"]]
    return [{"name": name, "engine_args": args}
            | ({"head_weights": {"fc.weight": fc}} if name.startswith("eagle3") else {})
            | ({"env": envs[name]} if name in envs else {}) for name, args in out]  # fmt: skip


def v0_decided(results: list[dict]) -> tuple[list[str], list[str]]:
    """The families whose V0 launch (`eagle3/V0 target <family>`) the release decided: (those its eagle3 gate
    refused at the config check, those it let through to V0's draft build, which refused the EAGLE-3 head's fc at
    load)."""
    gated, through = [], []
    for case in results:
        family = case["name"].removeprefix("eagle3/V0 target ")
        if family == case["name"]:
            continue
        if case["error"] is not None and "is only supported for" in case["error"]["message"]:
            gated.append(family)
        elif ((case["built"] or {}).get("head_load") or {}).get("loaded") is False:
            through.append(family)
    return gated, through


def probe(python: str, cases_: list[dict], engine: str = "vllm", script: Path = PROBE) -> dict:
    """Run an engine's draft probe (a script run by the engine venv's python) over the cases; its result."""
    with tempfile.TemporaryDirectory() as tmp:
        req, res = Path(tmp) / "req.json", Path(tmp) / "res.json"
        req.write_text(json.dumps({"engine": engine, "cases": cases_}))
        proc = subprocess.run([python, str(script), str(req), str(res)], capture_output=True, text=True,
                              timeout=1800)  # fmt: skip
        if not res.is_file():
            raise RuntimeError(f"draft probe failed: {proc.stderr.strip().splitlines()[-3:]}")
        return json.loads(res.read_text())


def record(python: str, release: str) -> dict:
    """One release's record (the release installed in `python`'s venv)."""
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        root = write_models(Path(tmp) / "models")
        wanted = cases(root, release)
        got = probe(python, wanted)
    assert got["version"] == release, (got["version"], release)
    results = got["results"]
    for case, result in zip(wanted, results, strict=True):
        args = dict(case["engine_args"])
        args["model"] = Path(args["model"]).name
        spec = dict(args.get("speculative_config") or {})
        if "model" in spec:
            spec["model"] = Path(spec["model"]).name
        result["engine_args"] = args | ({"speculative_config": spec} if spec else {})
        if case.get("env"):
            result["env"] = case["env"]
    # the V0 engine's build of an EAGLE-3 head ran (and its loader refused the fc): the v0 row's claim for the
    # families V0 serves EAGLE-3 for (Llama; the config check refuses every other before 0.10.1), on CUDA and on a
    # CPU (both reach spec_decode_worker.create_spec_worker)
    v0 = any(c["name"].startswith("eagle3") and "head_load" in (c["built"] or {}) for c in results)
    covers = []
    if v0:
        gated, through = v0_decided(results)
        covers = [
            {"platform": p, "runner": "v0", "families": ["llama", *through, *gated]} for p in ("cuda", "cpu")
        ]
        # the gate is the config check, before any runner: its refusals hold for V1 too
        covers += [{"platform": p, "runner": "v1", "families": gated} for p in ("cuda", "cpu") if gated]
    return {"engine": f"vllm=={release}", "platform": "cuda", "level": "model-code",
            **({"covers": covers} if covers else {}),
            "what": "the release's own engine config (EngineArgs.create_engine_config) and its proposer's draft "
                    "build, up to the draft's first decoder projection (no weights)",
            "answered": got["answered"], "models": {"targets": "tests/engines/draft_settings.py write_models",
                                                     "quantization_configs": QUANT},
            "cases": results,
            "provenance": {"probe": "tests/engines/draft_probe.py", "vllm": got["version"],
                           "seconds": round(time.time() - t0, 1)}}  # fmt: skip


def _layer(case: dict | None) -> str:
    """The draft's decoder projection as built: the quantization config its code passed ("-": none), or why no
    answer."""
    if case is None:
        return "not asked"
    if case["error"] is not None:
        words = f"{case['error']['type']}: {case['error']['message']}"
        if any(a in words for a in ARTEFACTS):
            return "not decided here (a CUDA-only check)"
        return f"refused: `{words[:70]}`"
    built = case["built"] or {}
    if not (built.get("head_load") or {"loaded": True})["loaded"]:
        return "V0: head refused at load"
    layer = built.get("decoder_projection")
    if layer is None:
        return f"no build: `{(built.get('error') or {}).get('message', '')[:60]}`"
    quant = layer["quant_config"]
    return quant["name"] if quant else "-"


def _row(rec: dict) -> str:
    cases = {c["name"]: c for c in rec["cases"]}
    schemes = [q for q in QUANT if f"eagle3/target-{q}" in cases]
    head = sorted({_layer(cases[f"eagle3/target-{q}"]) for q in schemes})
    head_text = (
        "-" if head == ["-"] else ", ".join(f"{q}: {_layer(cases[f'eagle3/target-{q}'])}" for q in schemes)
    )

    def tp(name: str) -> str:
        layer = ((cases.get(name) or {}).get("built") or {}).get("decoder_projection")
        return "-" if layer is None else str(layer["built_under_tensor_parallel_size"])

    def draft(name: str, key: str) -> str:
        config = ((cases.get(name) or {}).get("config") or {}).get("draft") or {}
        return str(config.get(key, "-"))

    release = rec["engine"].split("==")[1]
    return (f"| {release} | {head_text} | {_layer(cases.get('eagle3/--quantization fp8'))} | "
            f"{_layer(cases.get('mtp/--quantization fp8'))} (config: {draft('mtp/--quantization fp8', 'quantization')}) | "
            f"{tp('eagle3/-tp 2, draft_tensor_parallel_size 1')} / {tp('mtp/-tp 2, draft_tensor_parallel_size 1')} | "
            f"{draft('eagle3/--dtype float16', 'dtype')} / {draft('eagle3/drafter float16', 'dtype')} | "
            f"{draft('eagle3/drafter context 2048', 'max_model_len')} "
            f"(rotary {draft('eagle3/drafter context 2048', 'max_position_embeddings')}) / "
            f"{draft('eagle3/draft max_model_len 1024', 'max_model_len')} |")  # fmt: skip


def newest_first(folder: Path, engine: str) -> list[dict]:
    """An engine's draft-settings records in `folder`, newest release first (the pages' row order)."""
    recs = [json.loads(p.read_text()) for p in folder.glob(f"{engine}-*.json")]
    return sorted(recs, key=lambda r: Version(r["engine"].split("==")[1]), reverse=True)


def render(folder: Path | None = None) -> str:
    """docs/draft-settings.md: one row per release record."""
    recs = newest_first(folder or OUT, "vllm")
    head = """# What each vLLM release gives the draft model

Generated from the draft-settings records (`make draft-settings`: tests/engines/draft_settings.py), one per vLLM
release. Each release's own code ran: its engine config (`EngineArgs.create_engine_config`) and its proposer's
build of the draft, up to the draft's first decoder projection (no weights). The targets are config files only
(tiny Llama and DeepSeek-V3 shapes; the quantized ones carry each producer's `quantization_config`). The draft's
layer says which quantization config the release's model code passed to it: `-` none (the head computes in its
own dtype), or the method's name. `make test` replays every record against lint's and check's rows
(tests/test_draft_settings_records.py). Evidence level: model code, executed.

Columns:

- **EAGLE-3 head beside a quantized checkpoint**: the head's layer, per scheme of the target's checkpoint (FP8,
  GPTQ, AWQ, compressed-tensors W8A8, modelopt NVFP4). A scheme named here means the head is built for that
  scheme's parameters, which an unquantized EAGLE-3 checkpoint does not have: it fails at load.
- **EAGLE-3 head, `--quantization fp8`**: the same with an unquantized target quantized at load.
- **MTP layers, `--quantization fp8`**: DeepSeek's MTP layers beside an unquantized DeepSeek checkpoint quantized
  at load, and the draft config's own `quantization` field (what reading the config code alone sees).
- **TP built under**: the tensor parallel size the draft was built under with `-tp 2` and
  `draft_tensor_parallel_size: 1` (EAGLE-3 / MTP): 2 means the key is ignored.
- **draft dtype**: with `--dtype float16` / with a float16 drafter checkpoint beside a bfloat16 target.
- **draft context**: the draft's `max_model_len` with a drafter whose `max_position_embeddings` is 2048 (and the
  `max_position_embeddings` the release leaves in the draft's config, which sizes its rotary table; `-`: not
  recorded) / with `max_model_len: 1024` in the speculative config, beside `--max-model-len 4096`. The V1 runner
  stops the drafter for the whole batch once its longest sequence + K passes that length (engines/vllm/draft.py
  `CONTEXT_ROWS`; check's `draft-context` row; observed at vLLM 0.32.0 and 0.26.0,
  tests/real_engine/records/vllm-V-cpu-draft-context.json).
- **V0: head refused at load**: the launch runs on the V0 engine (0.8.5 runs EAGLE on V0 unless
  `VLLM_USE_V1=1`; 0.9.x with `VLLM_USE_V1=0`), whose spec-decode worker builds the draft as EAGLE-1's
  `EAGLEModel` (fc of 2 x hidden): the probe builds it and hands it the EAGLE-3 head's fc, which its loader refuses
  (`Attempted to load weight (torch.Size([256, 768])) into parameter (torch.Size([256, 512]))`; check's
  `vllm-llama-v0` row, lint's `vllm.eagle3_on_v0`). MTP layers are built by V0 before 0.9.0 and their columns
  are V0's build.

| release | EAGLE-3 head beside a quantized checkpoint | EAGLE-3 head, `--quantization fp8` | MTP layers, `--quantization fp8` | TP built under | draft dtype | draft context |
|---|---|---|---|---|---|---|
"""
    return head + "\n".join(_row(r) for r in recs) + "\n"


def generate(engine: str, record_fn, out_default: Path, first: str, description: str, errors_fn) -> None:
    """The generator's command line, for either engine: install each release in turn (model_code.install), run
    `record_fn(python, release)`, write `<out>/<engine>-V.json`; resumable (a written record is kept unless
    --force). A release whose probe cannot run here (RuntimeError) gets no record, and the reason is printed."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument(
        "--python", required=True, help=f"the {engine} model-code venv's python (make model-code)"
    )
    ap.add_argument("--release", action="append", default=[])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--no-install", action="store_true", help="the release installed in the venv as it is")
    args = ap.parse_args()
    out = args.out or out_default
    todo = args.release or [v for v in releases(engine) if Version(v) >= Version(first)]
    for release in todo:
        path = out / f"{engine}-{release}.json"
        if path.exists() and not args.force:
            continue
        t0 = time.time()
        if not args.no_install:
            install(args.python, engine, release)
        try:
            rec = record_fn(args.python, release)
        except RuntimeError as exc:
            print(f"{engine} {release}: no record ({exc})", flush=True)
            continue
        rec["provenance"]["install_seconds"] = round(time.time() - t0 - rec["provenance"]["seconds"], 1)
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec, indent=1) + "\n")
        cases = rec["cases"] if "cases" in rec else list(rec["results"].values())
        errors = sum(1 for c in cases if errors_fn(c))
        print(f"{engine} {release}: {len(cases)} cases, {errors} with an error, {time.time() - t0:.0f} s",
              flush=True)  # fmt: skip
    sys.exit(0)


def main() -> None:
    generate("vllm", record, OUT, FIRST, __doc__.split("\n\n")[0],
             lambda c: c["error"] or (c["built"] or {}).get("error"))  # fmt: skip


if __name__ == "__main__":
    main()
