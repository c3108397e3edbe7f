"""Real published drafter configs (the fields that matter, as their publishers wrote them), on their targets, with
weights of the true shapes as sparse files: none is refused as bad input; every pairing its publisher documents
as working is ok or unverified-with-a-reason, never a mismatch; every documented mis-wiring is caught.

Sources: SpecForge configs/*.json (sgl-project/SpecForge), EAGLE eagle/traineagle3/config.json, AngelSlim
train/configs/*.json, speculators conversions (speculators PR #53, #142), modelopt's export template."""

from __future__ import annotations

import subprocess
import sys

import pytest
import sparse_checkpoints as sparse

from eaglewire.formats.inspection import inspect_drafter
from eaglewire.jobs.check import check

LLAMA31_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32,
              "hidden_size": 4096, "vocab_size": 128256, "max_position_embeddings": 131072, "rope_theta": 500000.0,
              "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}  # fmt: skip
LLAMA33_70B = LLAMA31_8B | {"num_hidden_layers": 80, "hidden_size": 8192}
SCOUT = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
         "text_config": {"model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 5120,
                         "vocab_size": 202048}}  # fmt: skip
QWEN3_235B = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 94,
              "hidden_size": 4096, "vocab_size": 151936, "rope_theta": 1000000.0}  # fmt: skip
QWEN3_06B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 28,
             "hidden_size": 1024, "vocab_size": 151936, "rope_theta": 1000000}  # fmt: skip
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61,
               "hidden_size": 7168, "vocab_size": 129280}  # fmt: skip
KIMI_K25 = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
            "text_config": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2",
                            "num_hidden_layers": 61, "hidden_size": 7168, "vocab_size": 163840}}  # fmt: skip
KIMI_K2 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "num_hidden_layers": 61,
           "hidden_size": 7168, "vocab_size": 163840}  # fmt: skip
GPT_OSS = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": 36,
           "hidden_size": 2880, "vocab_size": 201088}  # fmt: skip
QWEN3_30B = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 48,
             "hidden_size": 2048, "vocab_size": 151936}  # fmt: skip


def eagle3(hidden, inter, heads, kv, vocab, draft=32000, **extra):
    return {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": hidden,
            "intermediate_size": inter, "num_hidden_layers": 1, "num_attention_heads": heads,
            "num_key_value_heads": kv, "vocab_size": vocab, "draft_vocab_size": draft, "tie_word_embeddings": False,
            **extra}  # fmt: skip


NESTED = lambda ids: {"eagle_config": {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}}  # noqa: E731

# name: (target, drafter config, target hidden, trainer, {engine: allowed statuses})
OK_OR_UNVERIFIED = {"ok", "unverified"}
CASES = {
    "specforge llama3-8B": (LLAMA31_8B, eagle3(4096, 14336, 32, 8, 128256, max_position_embeddings=2048), 4096,
                            "specforge==0.2.0", {"sglang==0.5.23": {"ok"}, "vllm==0.33.0": {"ok"}}),
    "specforge llama3-70B": (LLAMA33_70B, eagle3(8192, 28672, 64, 8, 128256, head_dim=128, rope_theta=500000.0,
                             rope_scaling={"rope_type": "llama3", "factor": 8.0}), 8192, "specforge==0.2.0",
                             {"sglang==0.5.23": {"ok"}, "vllm==0.33.0": {"ok"}}),
    "specforge llama4-scout": (SCOUT, eagle3(5120, 32768, 40, 8, 202048), 5120, "specforge==0.2.0",
                               {"sglang==0.5.23": {"ok"}, "vllm==0.33.0": {"ok"}}),
    "specforge qwen3-235B": (QWEN3_235B, eagle3(4096, 24576, 64, 4, 151936, head_dim=128, rope_theta=1000000.0,
                             **NESTED([1, 46, 90])), 4096, "specforge==0.2.0",
                             {"sglang==0.5.23": {"ok"}, "vllm==0.33.0 mrv2": {"ok"}, "vllm==0.33.0 v1": {"mismatch"}}),
    "specforge deepseek-v3": (DEEPSEEK_V3, eagle3(7168, 29568, 32, 8, 129280, **NESTED([1, 29, 57])), 7168,
                              "specforge==0.2.0", {"sglang==0.5.23": {"ok"}, "vllm==0.33.0 v1": {"mismatch"}}),
    "specforge kimi-k2.5": (KIMI_K25, eagle3(7168, 18432, 64, 64, 163840, head_dim=128, **NESTED([2, 30, 58])),
                            7168, "specforge", {"sglang==0.5.23": {"unverified"}}),
    "specforge gpt-oss-120b": (GPT_OSS, eagle3(2880, 11520, 32, 8, 201088, **NESTED([1, 17, 33])), 2880,
                               "specforge==0.2.0", {"sglang==0.5.23": {"ok"}, "vllm==0.33.0 mrv2": {"mismatch"}}),
    "specforge qwen3-30B eagle3.1": (QWEN3_30B, eagle3(2048, 12288, 32, 4, 151936, head_dim=128, fc_norm=True,
                                     norm_output=True), 2048, "specforge==0.2.0", {"sglang==0.5.23": {"mismatch",
                                     "ok", "unverified", "fails"}}),
    "specforge qwen3-30B moe draft": (QWEN3_30B, eagle3(2048, 6144, 32, 4, 151936, head_dim=128, model_type="qwen3_moe",
                                      architectures=["Qwen3MoEForCausalLMEagle3"], **NESTED([1, 23, 44])), 2048,
                                      "specforge==0.2.0", {"vllm==0.33.0": OK_OR_UNVERIFIED | {"mismatch"}}),
    "specforge kimi-k2 nextn": (KIMI_K2, {"architectures": ["DeepseekV3ForCausalLMNextN"], "model_type": "kimi_k2",
                                "hidden_size": 7168, "intermediate_size": 18432, "num_hidden_layers": 1,
                                "num_attention_heads": 64, "num_key_value_heads": 64, "vocab_size": 163840,
                                "tie_word_embeddings": False}, 7168, None, {"sglang==0.5.23": OK_OR_UNVERIFIED}),
    "eagle traineagle3 template": (LLAMA31_8B, {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                   "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 1,
                                   "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
                                   "draft_vocab_size": 32000, "max_position_embeddings": 2048,
                                   "tie_word_embeddings": False}, 4096, "eagle", {"vllm==0.33.0": {"ok"}}),
    "angelslim qwen3-0.6b": (QWEN3_06B, eagle3(1024, 3072, 16, 8, 151936, head_dim=128, tie_word_embeddings=True,
                             architectures=["Eagle3LlamaForCausalLM"], rope_theta=1000000, target_model_type="qwen3"),
                             1024, "angelslim", {"vllm==0.33.0": {"ok"}}),
}  # fmt: skip

# Documented mis-wirings: the pairing the thread reports as broken must not pass.
BROKEN = {
    "specforge gpt-oss-120b": "vllm==0.33.0 mrv2",  # nested ids ignored: default h2,h18,h33, trained h2,h18,h34
    "specforge qwen3-235B": "vllm==0.33.0 v1",  # nested read raw: h1,h46,h90 vs h2,h47,h91
    "specforge deepseek-v3": "vllm==0.33.0 v1",
    "specforge kimi-k2 nextn": "sglang==0.5.23",  # not an EAGLE-3 head
    "angelslim qwen3-0.6b": "sglang==0.5.23",  # Eagle3LlamaForCausalLM unroutable, tied 32000-row head
}


def _build(tmp_path, name):
    tcfg, dcfg, th, trainer, _ = CASES[name]
    t = sparse.target(tmp_path / "t", tcfg)
    d = sparse.drafter(tmp_path / "d", dcfg, target_hidden=th, embed="embed" in name)
    return t, d, trainer


@pytest.mark.parametrize("name", list(CASES))
def test_documented_pairing_is_never_a_mismatch(tmp_path, name):
    t, d, trainer = _build(tmp_path, name)
    engines = sorted({e.split()[0] for e in CASES[name][4]})
    rep = check(d, t, engines, trained_with=trainer)
    got = {v.engine: v.status for v in rep.verdicts}
    for engine, allowed in CASES[name][4].items():
        statuses = {s for e, s in got.items() if e == engine or e.startswith(engine + " ")}
        assert statuses and statuses <= allowed, (name, engine, got, rep.unknowns)
        for v in rep.verdicts:
            if v.status == "unverified" and v.engine.startswith(engine):
                assert v.unknowns, (name, engine)  # unverified always says why


@pytest.mark.parametrize("name", list(BROKEN))
def test_documented_miswiring_is_caught(tmp_path, name):
    t, d, trainer = _build(tmp_path, name)
    engine = BROKEN[name]
    rep = check(d, t, [engine.split()[0]], trained_with=trainer)
    v = next(v for v in rep.verdicts if v.engine == engine or v.engine.startswith(engine))
    assert v.problem or v.status == "unverified", (name, v.status, [f.message for f in v.findings])


def _speculators_conversion(
    tmp_path,
    target: dict,
    version: str,
    ids: list[int],
    hidden: int,
    inter: int,
    heads: int,
    kv: int,
    vocab: int,
    draft_vocab: int,
):
    """A published speculators-format conversion (a Llama-style layer in `transformer_layer_config`), weights of
    the true shapes as sparse files, beside its target's config."""
    t = sparse.target(tmp_path / "t", target)
    layer = {"hidden_size": hidden, "intermediate_size": inter, "num_attention_heads": heads,
             "num_key_value_heads": kv, "head_dim": 128, "vocab_size": vocab}  # fmt: skip
    cfg = {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3", "speculators_version": version,
           "draft_vocab_size": draft_vocab, "eagle_aux_hidden_state_layer_ids": ids, "norm_before_residual": False,
           "transformer_layer_config": {"model_type": "llama", "num_hidden_layers": 1, **layer},
           "speculators_config": {"algorithm": "eagle3", "proposal_methods": [{"proposal_type": "greedy",
                                  "speculative_tokens": 3}], "default_proposal_method": "greedy",
                                  "verifier": {"name_or_path": None, "architectures": []}}}  # fmt: skip
    d = sparse.drafter(tmp_path / "d", cfg | layer, target_hidden=hidden, embed=True, prefix="layers.0.")
    return d, t


def test_output_of_layer_ids_in_speculators_format_are_suspect(tmp_path):
    """nm-testing's Qwen3-235B conversion: SpecForge's [1, 46, 90] lifted to the top level of a speculators config."""
    d, t = _speculators_conversion(
        tmp_path, QWEN3_235B, "0.9.0", [1, 46, 90], 4096, 24576, 64, 4, 151936, 32000
    )
    rep = check(d, t, ["vllm==0.33.0"])
    assert rep.verdict == "unverified" and any("convert" in u for u in rep.unknowns)


def test_speculators_conversions_are_not_called_ok(tmp_path):
    """Converted checkpoints (speculators < 0.3 has no trainer; ids copied verbatim): never ok. nm-testing's
    Llama-4-Maverick conversion carries modelopt's output-of-layer ids [1, 23, 44], served as h1,h23,h44."""
    d, t = _speculators_conversion(tmp_path, SCOUT, "0.2.0", [1, 23, 44], 5120, 32768, 40, 8, 202048, 202048)
    rep = check(d, t, ["vllm==0.33.0"])
    assert rep.verdict == "unverified" and not rep.trained.known


def test_no_published_config_is_bad_input(tmp_path):
    """The CLI on every case exits 0 or 1 (a verdict), never 2."""
    for name in CASES:
        t, d, _ = _build(tmp_path / name.replace(" ", "_"), name)
        r = subprocess.run([sys.executable, "-m", "eaglewire.cli", "check", str(d), "--target", str(t), "--json"],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
        assert r.returncode in (0, 1), (name, r.stderr[-500:])
        assert inspect_drafter(d, t).served, name  # inspect reads it too, and shows what each engine feeds
