"""Real published drafter configs (the fields that matter, as their publishers wrote them), on their targets, with
weights of the true shapes as sparse files, checked as a new user would: no --trained-with, no --trained-on.

The acceptance table of issue 17: every engine pairing with a documented outcome, the outcome, its source, and
the verdict `check` must give. Documented working: `ok` (with or without assumptions). Documented mis-wiring:
`mismatch` or `fails`, never `unverified`, with one class excepted by design: an id-less modelopt export, whose
published heads are measured to be trained on other taps (vLLM PR #50170), is `unverified` on every engine.
"Open": the documentation itself says the outcome depends on a fact the checkpoint does not carry (the training
date, the source of a conversion): `unverified`, naming what settles it.

Sources: SpecForge configs/*.json (sgl-project/SpecForge), EAGLE eagle/traineagle3/config.json, AngelSlim
train/configs/*.json, speculators conversions (speculators PR #53, #142), modelopt's export template, and the
pairings of docs/versions.md section 5 (5.1 SpecForge configs, 5.2 documented SpecForge/SGLang pairings, 5.3
speculators-format drafts, 5.4 nvidia exports), sections 2.9 and 4.

Two lists, counted apart. `OUTSIDE_EVIDENCE` (13 of 39 pairings): the outcome is reported by someone else, on the
engine: a thread (vLLM PR #22333, #25961, #50170, issues #20780/#26191; SGLang issue #32226, PR #32334), a model card
(the nm-testing conversion), or SpecForge's published benchmark data (data.json: lmsys heads measured on SGLang).
Caveat: those heads' hub configs were not read (docs/versions.md 5), so a row ties a published head's outcome to the
config its trainer ships. `READING_ONLY` (26 of 39): the outcome is eaglewire's own reading of engine and trainer
source (docs/versions.md), the same reading the convention table is built from: such a row catches a table that
drifts from the reading, never a wrong reading. An observed engine run of a published config would move a row to
the first list; the real-engine tier (tests/real_engine) runs only the zoo."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import sparse_checkpoints as sparse

from eaglewire.cli.app import main
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
QWEN3_8B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 36,
            "hidden_size": 4096, "vocab_size": 151936, "rope_theta": 1000000}  # fmt: skip
QWEN3_VL_8B = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
               "text_config": {"model_type": "qwen3_vl_text", "num_hidden_layers": 36, "hidden_size": 4096,
                               "vocab_size": 151936}}  # fmt: skip
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61,
               "hidden_size": 7168, "vocab_size": 129280}  # fmt: skip
KIMI_K25 = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
            "text_config": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2",
                            "num_hidden_layers": 61, "hidden_size": 7168, "vocab_size": 163840}}  # fmt: skip
KIMI_K2 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "num_hidden_layers": 61,
           "hidden_size": 7168, "vocab_size": 163840}  # fmt: skip
GPT_OSS = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": 36,
           "hidden_size": 2880, "vocab_size": 201088}  # fmt: skip
GPT_OSS_20B = GPT_OSS | {"num_hidden_layers": 24}
QWEN3_30B = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 48,
             "hidden_size": 2048, "vocab_size": 151936}  # fmt: skip


def eagle3(hidden, inter, heads, kv, vocab, draft=32000, **extra):
    return {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": hidden,
            "intermediate_size": inter, "num_hidden_layers": 1, "num_attention_heads": heads,
            "num_key_value_heads": kv, "vocab_size": vocab, "draft_vocab_size": draft, "tie_word_embeddings": False,
            **extra}  # fmt: skip


def nested(ids, **more) -> dict:
    return {"eagle_config": {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True, **more}}


MODELOPT = {"eagle_config": {"use_aux_hidden_state": True, "use_input_layernorm_in_first_layer": True,
                             "use_last_layernorm": True, "use_mtp_layernorm": False, "next_layer_regular": True}}  # fmt: skip


def speculators_conversion(version, ids, hidden, inter, heads, kv, vocab, draft_vocab):
    """A published speculators-format conversion (a Llama-style layer in `transformer_layer_config`)."""
    layer = {"hidden_size": hidden, "intermediate_size": inter, "num_attention_heads": heads,
             "num_key_value_heads": kv, "head_dim": 128, "vocab_size": vocab}  # fmt: skip
    cfg = {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3", "speculators_version": version,
           "draft_vocab_size": draft_vocab, "eagle_aux_hidden_state_layer_ids": ids, "norm_before_residual": False,
           "transformer_layer_config": {"model_type": "llama", "num_hidden_layers": 1, **layer},
           "speculators_config": {"algorithm": "eagle3", "proposal_methods": [{"proposal_type": "greedy",
                                  "speculative_tokens": 3}], "default_proposal_method": "greedy",
                                  "verifier": {"name_or_path": None, "architectures": []}}}  # fmt: skip
    return cfg | layer


SPECULATORS = {"embed": True, "prefix": "layers.0."}
# name: (target config, drafter config, target hidden size, sparse.drafter options)
CASES = {
    "specforge llama3-8B": (LLAMA31_8B, eagle3(4096, 14336, 32, 8, 128256, max_position_embeddings=2048), 4096, {}),
    "specforge llama3-70B": (LLAMA33_70B, eagle3(8192, 28672, 64, 8, 128256, head_dim=128, rope_theta=500000.0,
                             rope_scaling={"rope_type": "llama3", "factor": 8.0}), 8192, {}),
    "specforge llama4-scout": (SCOUT, eagle3(5120, 32768, 40, 8, 202048), 5120, {}),
    "specforge qwen3-8B": (QWEN3_8B, eagle3(4096, 12288, 32, 8, 151936, head_dim=128, rope_theta=1000000), 4096, {}),
    "specforge qwen3-30B-A3B": (QWEN3_30B, eagle3(2048, 12288, 32, 4, 151936, head_dim=128), 2048, {}),
    "specforge qwen3-235B": (QWEN3_235B, eagle3(4096, 24576, 64, 4, 151936, head_dim=128, rope_theta=1000000.0,
                             **nested([1, 46, 90])), 4096, {}),
    "specforge deepseek-v3": (DEEPSEEK_V3, eagle3(7168, 29568, 32, 8, 129280, **nested([1, 29, 57])), 7168, {}),
    "specforge gpt-oss-120b": (GPT_OSS, eagle3(2880, 11520, 32, 8, 201088, **nested([1, 17, 33])), 2880, {}),
    "specforge gpt-oss-20b": (GPT_OSS_20B, eagle3(2880, 11520, 32, 8, 201088, **nested([1, 11, 21])), 2880, {}),
    "specforge qwen3-vl-8b": (QWEN3_VL_8B, eagle3(4096, 12288, 32, 8, 151936, head_dim=128, **nested([3, 17, 32])),
                              4096, {}),
    "specforge kimi-k2.5": (KIMI_K25, eagle3(7168, 18432, 64, 64, 163840, head_dim=128, **nested([2, 30, 58])),
                            7168, {}),
    "specforge qwen3-30B eagle3.1": (QWEN3_30B, eagle3(2048, 12288, 32, 4, 151936, head_dim=128, fc_norm=True,
                                     norm_output=True), 2048, {}),
    "specforge qwen3-30B moe draft": (QWEN3_30B, eagle3(2048, 6144, 32, 4, 151936, head_dim=128, model_type="qwen3_moe",
                                      architectures=["Qwen3MoEForCausalLMEagle3"], **nested([1, 23, 44])), 2048, {}),
    "specforge kimi-k2 nextn": (KIMI_K2, {"architectures": ["DeepseekV3ForCausalLMNextN"], "model_type": "kimi_k2",
                                "hidden_size": 7168, "intermediate_size": 18432, "num_hidden_layers": 1,
                                "num_attention_heads": 64, "num_key_value_heads": 64, "vocab_size": 163840,
                                "tie_word_embeddings": False}, 7168, {}),
    "eagle traineagle3 template": (LLAMA31_8B, {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                   "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 1,
                                   "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
                                   "draft_vocab_size": 32000, "max_position_embeddings": 2048,
                                   "tie_word_embeddings": False}, 4096, {}),
    "angelslim qwen3-0.6b": (QWEN3_06B, eagle3(1024, 3072, 16, 8, 151936, head_dim=128, tie_word_embeddings=True,
                             architectures=["Eagle3LlamaForCausalLM"], rope_theta=1000000, target_model_type="qwen3"),
                             1024, {}),
    "nvidia llama3.3-70B modelopt export": (LLAMA33_70B, eagle3(8192, 28672, 64, 8, 128256, head_dim=128, **MODELOPT),
                                            8192, {"prefix": "layers.0."}),
    "nvidia gpt-oss-120b eagle3-v3": (GPT_OSS, eagle3(2880, 11520, 32, 8, 201088, **nested([24, 30, 36],
                                      norm_before_fc=True)), 2880, {}),
    "speculators qwen3-235B conversion": (QWEN3_235B, speculators_conversion("0.9.0", [1, 46, 90], 4096, 24576, 64, 4,
                                          151936, 32000), 4096, SPECULATORS),
    "speculators maverick conversion": (SCOUT, speculators_conversion("0.2.0", [1, 23, 44], 5120, 32768, 40, 8,
                                        202048, 202048), 5120, SPECULATORS),
}  # fmt: skip

S51 = "docs/versions.md 5.1 (served = trained)"
S51W = "docs/versions.md 5.1 (served != trained)"
DATA_JSON = "SpecForge data.json (spec_bundle/public/raw_data @a6b6b023; MT-bench, steps 3, topk 1, ndt 4)"
WORKS, MISWIRED, OPEN = "works", "mis-wired", "open"
# (case, engine, vLLM runner or None, documented outcome, where it is documented, the verdict check must give)
# Rows whose outcome an outside source reports (a thread, a model card, a published benchmark), first named:
OUTSIDE_EVIDENCE = [
    ("specforge llama3-8B", "sglang==0.5.23", None, WORKS, f"{DATA_JSON}: lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B "
     "2.93, lmsys/SGLang-EAGLE3-Llama-3.1-Instruct-8B-SpecForge 2.90 on SGLang (docs/versions.md 5.2)", "fails"),
    ("specforge llama3-70B", "sglang==0.5.23", None, WORKS, f"{DATA_JSON}: lmsys/sglang-EAGLE3-LLaMA3.3-Instruct-70B "
     "2.92, lmsys/SGLang-EAGLE3-Llama-3.3-70B-Instruct-Specforge 2.96 on SGLang (docs/versions.md 5.2)", "ok"),
    ("specforge llama4-scout", "sglang==0.5.23", None, WORKS, f"{DATA_JSON}: the lmsys Llama-4-Scout heads 2.35 "
     "and 2.49 on SGLang (docs/versions.md 5.2)", "ok"),
    ("specforge qwen3-8B", "vllm==0.33.0", None, WORKS, "vLLM PR #22333: Qwen3-8B EAGLE-3 heads (AngelSlim, "
     "Tengyunw) at mean accept length 2.93 on vLLM, default taps like this config (docs/versions.md 5.1, 5.5)",
     "ok"),
    ("specforge qwen3-30B-A3B", "sglang==0.5.23", None, WORKS, f"{DATA_JSON}: lmsys/SGLang-EAGLE3-Qwen3-30B-A3B-"
     "Instruct-2507-SpecForge 2.50 (bs 8) on SGLang (docs/versions.md 5.2)", "ok"),
    ("specforge qwen3-235B", "sglang==0.5.23", None, WORKS, f"{DATA_JSON}: lmsys/Qwen3-235B-A22B-EAGLE3 1.87, "
     "lmsys/SGLang-EAGLE3-Qwen3-235B-A22B-Instruct-2507-SpecForge 2.35 on SGLang (docs/versions.md 5.2)", "ok"),
    ("eagle traineagle3 template", "vllm==0.33.0", None, WORKS, "vLLM issue #26191 and #20780: yuhuili/EAGLE3-"
     "LLaMA3.1-Instruct-8B (the EAGLE reference's head; its hub config not read here) on vLLM, MT-bench accept "
     "length 3.53 at K = 7, 3.08 at K = 4 (docs/engine-facts.md; docs/versions.md 4.7: renamed to "
     "Eagle3LlamaForCausalLM, default taps h2,h16,h29)", "ok"),
    ("angelslim qwen3-0.6b", "vllm==0.33.0", None, WORKS, "vLLM PR #22333: AngelSlim Qwen3 heads served by vLLM, "
     "accept length 2.93 on Qwen3-8B (docs/versions.md 4.4, 5.5)", "ok"),
    ("nvidia llama3.3-70B modelopt export", "vllm==0.33.0", None, MISWIRED, "vLLM PR #50170: accept length 1.036 "
     "under vLLM's default taps (docs/versions.md 2.9): the known exception class, unverified by design",
     "unverified"),
    ("nvidia gpt-oss-120b eagle3-v3", "sglang==0.5.16", None, MISWIRED, "sglang issue #32226: warm-up crash 8640 "
     "vs 5760 (docs/versions.md 1.6)", "fails"),
    ("nvidia gpt-oss-120b eagle3-v3", "sglang==0.5.23", None, WORKS, "sglang PR #32334: accept length 2.680 "
     "(MT-bench, TP2) once SGLang reads the nested ids (docs/versions.md 1.6, 5.4)", "ok"),
    ("speculators qwen3-235B conversion", "vllm==0.33.0", None, OPEN, "model card of nm-testing/Qwen3-235B-A22B-"
     "EAGLE3-converted-speculators-lmsys: ids [1, 46, 90] lifted from eagle_config to the top level, off by one "
     "per the card only (docs/versions.md 5.3; UNVERIFIED: the source's numbering decides)", "unverified"),
    ("speculators maverick conversion", "vllm==0.33.0", None, OPEN, "vLLM PR #25961: accept length 2.53 with "
     "layers 1, 23, 44 (speculators PR #142 conversion; docs/versions.md 5.3; training taps UNVERIFIED: the "
     "source's numbering decides)", "unverified"),
]  # fmt: skip
# Rows that rest only on eaglewire's own reading of engine and trainer source (docs/versions.md, the reading the
# convention table is built from): they cannot catch a wrong reading, only a table that drifts from it.
READING_ONLY = [
    ("specforge llama3-8B", "vllm==0.33.0", None, WORKS, S51, "ok"),
    ("specforge llama3-70B", "vllm==0.33.0", None, WORKS, S51, "ok"),
    ("specforge llama4-scout", "vllm==0.33.0", None, WORKS, S51, "ok"),
    ("specforge qwen3-8B", "sglang==0.5.23", None, WORKS, S51, "ok"),
    ("specforge qwen3-30B-A3B", "vllm==0.33.0", None, WORKS, S51, "ok"),
    ("specforge qwen3-235B", "vllm==0.33.0", "mrv2", WORKS, f"{S51}: MRV2 ignores the nested ids, the default "
     "is right by chance", "ok"),
    ("specforge qwen3-235B", "vllm==0.33.0", "v1", MISWIRED, f"{S51W}: V1 reads the nested ids raw, h1,h46,h90",
     "mismatch"),
    ("specforge deepseek-v3", "sglang==0.5.23", None, WORKS, "docs/versions.md 4.2 (first id 1: +1 on both sides "
     "of the check SGLang PR #25454 added, read at source)", "ok"),
    ("specforge deepseek-v3", "vllm==0.33.0", "mrv2", WORKS, "docs/versions.md 4.2 (MRV2 ignores nested: default)",
     "ok"),
    ("specforge deepseek-v3", "vllm==0.33.0", "v1", MISWIRED, "docs/versions.md 4.2 (V1 reads nested raw: "
     "h1,h29,h57)", "mismatch"),
    ("specforge gpt-oss-120b", "sglang==0.5.23", None, WORKS, "docs/versions.md 5.1 (gpt_oss rule: max != L, +1)",
     "ok"),
    ("specforge gpt-oss-120b", "vllm==0.33.0", "mrv2", MISWIRED, f"{S51W}: last tap h33 for h34", "mismatch"),
    ("specforge gpt-oss-120b", "vllm==0.33.0", "v1", MISWIRED, f"{S51W}: h1,h17,h33", "mismatch"),
    ("specforge gpt-oss-20b", "sglang==0.5.23", None, WORKS, "docs/versions.md 5.1 (gpt_oss rule: max != L, +1)",
     "ok"),
    ("specforge gpt-oss-20b", "vllm==0.33.0", "mrv2", MISWIRED, f"{S51W}: last tap h21 for h22", "mismatch"),
    ("specforge gpt-oss-20b", "vllm==0.33.0", "v1", MISWIRED, f"{S51W}: h1,h11,h21", "mismatch"),
    ("specforge qwen3-vl-8b", "sglang==0.5.23", None, WORKS, "docs/versions.md 5.1 ('only SGLang matches')", "ok"),
    ("specforge qwen3-vl-8b", "vllm==0.33.0", None, MISWIRED, f"{S51W}: MRV2 h2,h18,h33, V1 h3,h17,h32",
     "mismatch"),
    ("specforge kimi-k2.5", "sglang==0.5.23", None, OPEN, "docs/versions.md 4.2 (the training date decides: "
     "h3,h31,h59 before SpecForge pinned SGLang 0.5.14, h2,h30,h58 after)", "unverified"),
    ("specforge qwen3-30B eagle3.1", "sglang==0.5.23", None, OPEN, "docs/conventions.md (c) 2 (inferred: SpecForge "
     "feeds the pre-norm state back, SGLang the post-norm one under norm_output)", "unverified"),
    ("specforge qwen3-30B moe draft", "vllm==0.33.0", None, MISWIRED, "docs/versions.md 5.1 (architecture "
     "Qwen3MoEForCausalLMEagle3 not routable in vLLM)", "fails"),
    ("specforge kimi-k2 nextn", "sglang==0.5.23", None, MISWIRED, "docs/versions.md 5.1 (a NextN/MTP draft, not an "
     "EAGLE-3 head)", "fails"),
    ("eagle traineagle3 template", "sglang==0.5.23", None, MISWIRED, "docs/versions.md 1.5.1, 4.7 (SGLang builds "
     "it as a plain target class)", "fails"),
    ("angelslim qwen3-0.6b", "sglang==0.5.23", None, MISWIRED, "docs/versions.md 4.4 (Eagle3LlamaForCausalLM not "
     "routed by SGLang; tied 32000-row head)", "fails"),
    ("nvidia gpt-oss-120b eagle3-v3", "vllm==0.33.0", "mrv2", MISWIRED, "docs/versions.md 2.9, 5.4 (MRV2 ignores "
     "the nested ids: h2,h18,h33)", "mismatch"),
    ("nvidia gpt-oss-120b eagle3-v3", "vllm==0.33.0", "v1", WORKS, "docs/versions.md 2.9 (V1 reads them raw: "
     "h24,h30,h36, the taps the head needs per sglang PR #32334; no vLLM run reported)", "ok"),
]  # fmt: skip
PAIRINGS = OUTSIDE_EVIDENCE + READING_ONLY
OUTSIDE_SOURCE = re.compile(r"\b(PR|issue) #\d+|model card of |data\.json|release note")
EXCEPTED = {
    "nvidia llama3.3-70B modelopt export"
}  # the known exception class: a mis-wiring reported unverified
# Wired right (the published runs measured it), but a plain launch of this release refuses the drafter: its context
# (max_position_embeddings 2048) is below the target's 131,072, which SGLang >= 0.5.1 refuses at load unless
# SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 or --context-length says otherwise (configs/model_config.py
# _derive_context_length @0.5.23; sgl-project/sglang#18220: SGLang's own docs CI hit it). check's draft-context.
REFUSED_AT_DEFAULT_LAUNCH = {("specforge llama3-8B", "sglang==0.5.23")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every case written once (sparse weights: a few KB of real data each)."""
    root = tmp_path_factory.mktemp("published")
    out = {}
    for name, (tcfg, dcfg, th, opts) in CASES.items():
        d = root / name.replace(" ", "_")
        out[name] = (sparse.target(d / "t", tcfg), sparse.drafter(d / "d", dcfg, target_hidden=th, **opts))
    return out


def verdict_of(built, case, engine, runner):
    t, d = built[case]
    rep = check(d, t, [engine], runner=runner)
    (v,) = rep.verdicts
    return rep, v


def test_outside_evidence_is_counted_apart_from_reading():
    """13 pairings rest on outside evidence, 26 on eaglewire's own reading of source (module docstring): each outside
    row names its source first (a thread, a model card, a published benchmark file), and each reading-only row cites
    eaglewire's own documents."""
    assert (len(OUTSIDE_EVIDENCE), len(READING_ONLY)) == (13, 26)
    for case, engine, runner, _, source, _ in OUTSIDE_EVIDENCE:
        found, ours = OUTSIDE_SOURCE.search(source), source.find("docs/")
        assert found and (ours < 0 or found.start() < ours), (case, engine, runner, source)
    for case, engine, runner, _, source, _ in READING_ONLY:
        assert source.startswith("docs/"), (case, engine, runner, source)
    assert not {(c, e, r) for c, e, r, *_ in OUTSIDE_EVIDENCE} & {(c, e, r) for c, e, r, *_ in READING_ONLY}


def test_the_table_agrees_with_the_documentation():
    """The expected verdicts follow the rule: works -> ok, mis-wired -> mismatch/fails (but the known exception
    class), open -> unverified."""
    assert len(PAIRINGS) == len({(c, e, r) for c, e, r, *_ in PAIRINGS}) and {c for c, *_ in PAIRINGS} == set(
        CASES
    )
    for case, engine, _, outcome, _, want in PAIRINGS:
        if outcome == WORKS:
            assert want == ("fails" if (case, engine) in REFUSED_AT_DEFAULT_LAUNCH else "ok"), case
        elif outcome == MISWIRED:
            assert want in ("mismatch", "fails") or (case in EXCEPTED and want == "unverified"), case
        else:
            assert want == "unverified", case


@pytest.mark.parametrize(("case", "engine", "runner", "outcome", "source", "want"), PAIRINGS,
                         ids=[f"{c}|{e}|{r or 'default'}" for c, e, r, *_ in PAIRINGS])  # fmt: skip
def test_published_pairing(built, case, engine, runner, outcome, source, want):
    rep, v = verdict_of(built, case, engine, runner)
    assert v.status == want, (
        case,
        engine,
        runner,
        v.status,
        v.unknowns,
        v.assumptions,
        [f.message for f in v.findings],
    )
    if v.status == "unverified":
        assert v.unknowns and any(
            "--trained-on" in u or "doctor" in u or "--runner" in u or "--platform" in u for u in v.unknowns
        ), v.unknowns  # unverified always names what settles it
        assert (
            len(set(v.outcomes.values())) != 1
            or v.outcomes == {}
            or rep.trained.blocked
            or any(f.severity == "unverified" for f in v.findings)
        ), v.outcomes  # never unverified where every candidate gives the same verdict
    if v.status == "ok" and not rep.trained.known:
        raise AssertionError(f"{case}: ok on unknown training taps")
    if v.status in ("mismatch", "fails"):
        assert rep.verdict == "problem"


def test_strict_turns_every_assumption_into_unverified(built):
    for case, engine, runner, *_ in PAIRINGS:
        t, d = built[case]
        plain = check(d, t, [engine], runner=runner)
        strict = check(d, t, [engine], runner=runner, strict=True)
        for a, b in zip(plain.verdicts, strict.verdicts, strict=True):
            assert b.status == ("unverified" if a.assumptions else a.status), (case, engine)
            assert not b.assumptions


def test_output_of_layer_ids_in_speculators_format_are_suspect(built):
    """nm-testing's Qwen3-235B conversion: SpecForge's [1, 46, 90] lifted to the top level of a speculators config:
    speculators 0.9's own numbering gives h1,h46,h90, a conversion of SpecForge's h2,h47,h91."""
    rep, v = verdict_of(built, "speculators qwen3-235B conversion", "vllm==0.33.0", None)
    assert rep.verdict == "unverified" and any("convert" in u for u in rep.unknowns)
    assert v.outcomes == {"h1,h46,h90": "ok", "h2,h47,h91": "mismatch"}


def test_speculators_conversions_are_not_called_ok(built):
    """Converted checkpoints (speculators < 0.3 has no trainer; ids copied verbatim): never ok. nm-testing's
    Llama-4-Maverick conversion carries modelopt's output-of-layer ids [1, 23, 44], served as h1,h23,h44."""
    rep, v = verdict_of(built, "speculators maverick conversion", "vllm==0.33.0", None)
    assert rep.verdict == "unverified" and not rep.trained.known and str(v.served.taps) == "h1,h23,h44"


def test_runner_assumption_is_said(built):
    """Without --runner or --platform, a verdict that the runner changes says which runner it assumed (CUDA's
    default) and what the other one feeds; --platform cpu gives V1's verdict."""
    t, d = built["specforge deepseek-v3"]
    (v,) = check(d, t, ["vllm==0.33.0"]).verdicts
    assert v.status == "ok" and v.served.row.runner == "mrv2"
    assert any("CUDA assumed" in a and "h1,h29,h57" in a and "--platform" in a for a in v.assumptions)
    (cpu,) = check(d, t, ["vllm==0.33.0"], platform="cpu").verdicts
    assert cpu.status == "mismatch" and cpu.served.row.runner == "v1" and not cpu.alternatives
    assert cpu.fix is not None and cpu.fix.value == [2, 30, 58]  # the top-level list both runners read
    # where both runners feed the same, nothing is assumed about the runner
    t, d = built["specforge qwen3-8B"]
    (v,) = check(d, t, ["vllm==0.33.0"]).verdicts
    assert v.status == "ok" and [a.status for a in v.alternatives] == ["ok"]
    assert not any("runs" in a for a in v.assumptions)
    # the same taps, but V1 stops drafting past the drafter's 2048 context (MRV2 drafts on): the runner is said
    t, d = built["specforge llama3-8B"]
    (v,) = check(d, t, ["vllm==0.33.0"]).verdicts
    assert v.status == "ok" and [a.status for a in v.alternatives] == ["fails"]
    assert any("CUDA assumed" in a for a in v.assumptions)


def test_a_default_launch_that_refuses_the_drafter_still_names_its_taps(built):
    """Where the release refuses the drafter at a plain launch (its context), the served taps are still the trained
    ones, the finding names the context and its fix."""
    for case, engine in REFUSED_AT_DEFAULT_LAUNCH:
        rep, v = verdict_of(built, case, engine, None)
        assert (
            v.status == "fails" and v.served.taps is not None and v.served.taps.same_set(rep.trained.wiring)
        )
        (f,) = [f for f in v.findings if f.severity == "problem"]
        assert f.code == "draft-context" and "--context-length 2048" in f.message


def test_no_published_config_is_bad_input(built, capsys):
    """`check` and `inspect` on every case exit with a verdict (0, 1 or 3), never 2 and never a traceback; one
    through a real subprocess, the rest in-process."""
    for i, (name, (t, d)) in enumerate(built.items()):
        argv = ["check", str(d), "--target", str(t)]
        if i < 1:
            r = subprocess.run([sys.executable, "-m", "eaglewire.cli", *argv, "--json"], capture_output=True,
                               text=True, timeout=120)  # fmt: skip
            assert r.returncode in (0, 1, 3) and "Traceback" not in r.stderr, (name, r.stderr[-500:])
        else:
            assert main(argv) in (0, 1, 3), name
        capsys.readouterr()
        assert inspect_drafter(d, t).served, name  # inspect reads it too, and shows what each engine feeds
