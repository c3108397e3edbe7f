"""Real user-reported failures, reproduced from the configs and flags quoted in their threads, each a class the
static check must catch (or refuse to call ok). Weights are written at their true shapes as sparse files."""

from __future__ import annotations

import pytest
import sparse_checkpoints as sparse
import torch

from eaglewire.jobs.check import check, check_job


def verdicts(rep):
    return {v.engine: v.status for v in rep.verdicts}


def codes(rep):
    return {f.code for v in rep.verdicts for f in v.findings if f.severity == "problem"}


LLAMA_70B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 80,
             "hidden_size": 8192, "vocab_size": 128256, "max_position_embeddings": 131072,
             "rope_scaling": {"rope_type": "llama3", "factor": 8.0}, "rope_theta": 500000.0}  # fmt: skip
GPT_OSS_120B = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": 36,
                "hidden_size": 2880, "vocab_size": 201088, "max_position_embeddings": 131072, "rope_theta": 150000,
                "rope_scaling": {"rope_type": "yarn", "factor": 32.0}}  # fmt: skip
QWEN3_235B = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 94,
              "hidden_size": 4096, "vocab_size": 151936}  # fmt: skip
QWEN3_4B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 36,
            "hidden_size": 2560, "vocab_size": 151936}  # fmt: skip
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61,
               "hidden_size": 7168, "vocab_size": 129280}  # fmt: skip


def eagle_config(hidden, vocab, draft_vocab=32000, layers=1, **extra):
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": hidden,
           "intermediate_size": 4 * hidden, "num_hidden_layers": layers, "num_attention_heads": 32,
           "num_key_value_heads": 8, "vocab_size": vocab, "draft_vocab_size": draft_vocab,
           "tie_word_embeddings": False}  # fmt: skip
    cfg.update(extra)
    return cfg


def speculators_config(hidden, vocab, ids, version, layer_type="llama", **extra):
    layer = {"model_type": layer_type, "hidden_size": hidden, "intermediate_size": 4 * hidden,
             "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": hidden // 32,
             "vocab_size": vocab, "max_position_embeddings": 40960}  # fmt: skip
    layer.update(extra.pop("layer", {}))
    cfg = {"architectures": ["Eagle3DraftModel"], "speculators_model_type": "eagle3", "speculators_version": version,
           "draft_vocab_size": 32000, "eagle_aux_hidden_state_layer_ids": ids, "transformer_layer_config": layer,
           "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                                  "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                                  "verifier": {"name_or_path": None, "architectures": []}}}  # fmt: skip
    cfg.update(extra)
    return cfg


def test_sglang_32226_gpt_oss_boundary_ids_and_norm_before_fc(tmp_path):
    """gpt-oss-120b + nvidia/gpt-oss-120b-Eagle3-v3: ids [24, 30, 36] (36 = L) and nested norm_before_fc.
    SGLang <= 0.5.16 adds 1 (37 is never captured: 2 states of 3) and ignores norm_before_fc; 0.5.17 reads them as
    boundary indices and honours the norm (sglang PR #32334)."""
    t = sparse.target(tmp_path / "t", GPT_OSS_120B)
    cfg = eagle_config(2880, 201088, eagle_config={"eagle_aux_hidden_state_layer_ids": [24, 30, 36],
                                                   "norm_before_fc": True})  # fmt: skip
    d = sparse.drafter(tmp_path / "d", cfg, target_hidden=2880)
    _add_input_norm(d, 3 * 2880)
    old = check(d, t, ["sglang==0.5.16"], trained_on=_wiring("h24,h30,h36"))
    assert verdicts(old) == {"sglang==0.5.16": "fails"}
    assert "never captures" in old.verdicts[0].served.failure and "norm-before-fc" in codes(old)
    new = check(d, t, ["sglang==0.5.17"], trained_on=_wiring("h24,h30,h36"))
    assert verdicts(new) == {"sglang==0.5.17": "ok"} and not new.has_problem


MODELOPT_EAGLE_CONFIG = {"use_aux_hidden_state": True, "use_input_layernorm_in_first_layer": True,
                         "use_last_layernorm": True, "use_mtp_layernorm": False, "next_layer_regular": True}  # fmt: skip


def test_vllm_40551_mrv2_feeds_aux_states_to_a_head_that_takes_none(tmp_path):
    """nvidia/gpt-oss-120b-Eagle3-v2 sets eagle_config.use_aux_hidden_state false and has no fc: an EAGLE-1-style
    head on the target's final state. vLLM's Model Runner V2 asks for aux states for every eagle3 drafter until
    0.33.0 (model_runner.py:176 @0.20.0) and hands their concatenation, 3 x hidden wide, through the head's
    combine_hidden_states (unchanged without an fc) into a buffer one hidden state wide (vllm#40551, PR #40656).
    `check` said ok on MRV2 at every release. Now: fails on MRV2 0.17.0-0.32.0 with no id-list fix (the head takes
    no taps), ok on MRV2 0.33.0 and on V1 (reads the flag from 0.14.0); a runner not given is decided under the
    default and MRV2 named; the head's training is the final state, never a default tap list."""
    t = sparse.target(tmp_path / "t", GPT_OSS_120B)
    cfg = eagle_config(2880, 201088, eagle_config={"use_aux_hidden_state": False})
    d = sparse.drafter(tmp_path / "d", cfg, target_hidden=2880, fc=False)
    for version in ("0.17.0", "0.25.0", "0.32.0"):
        rep = check(d, t, [f"vllm=={version}"], runner="mrv2")
        assert verdicts(rep) == {f"vllm=={version} mrv2": "fails"} and codes(rep) == {"aux-disabled"}
        (v,) = rep.verdicts
        assert v.fix is None and v.served.taps is None and "ignored" in v.served.notes[0]
        assert "VLLM_USE_V2_MODEL_RUNNER=0" in v.findings[0].message
        # the verdict rests on the runner's flag rule, read at source: not on the capture record of the V1 runner
        assert v.evidence["level"] == "read" and v.evidence["decided_by"] == "aux-disabled"
        assert "the taps: observed" in v.evidence["basis"]
    assert rep.trained.final_state and rep.trained.wiring is None and rep.to_dict()["trained"]["final_state"]
    assert verdicts(check(d, t, ["vllm==0.33.0"], runner="mrv2")) == {"vllm==0.33.0 mrv2": "ok"}
    rep = check(d, t, ["vllm==0.25.0"], runner="v1")
    assert verdicts(rep) == {"vllm==0.25.0 v1": "ok"} and rep.verdicts[0].evidence["level"] == "model-code"
    rep = check(d, t, ["vllm==0.25.0", "sglang==0.5.23"])
    assert verdicts(rep) == {"vllm==0.25.0 v1": "ok", "sglang==0.5.23": "ok"}
    assert [a.status for a in rep.verdicts[0].alternatives] == ["fails"]
    assert any("MRV2" in a for a in rep.verdicts[0].assumptions)


def test_vllm_50170_modelopt_export_without_ids_is_never_ok(tmp_path):
    """nvidia/Llama-3.3-70B-Instruct-Eagle3, a modelopt export, omits the id list; vLLM silently feeds (2, 40, 77)
    and measured accept length 1.04. An id-less modelopt export is a known exception class: unverified on every
    engine, naming what settles it, never ok."""
    t = sparse.target(tmp_path / "t", LLAMA_70B)
    cfg = eagle_config(8192, 128256, eagle_config=MODELOPT_EAGLE_CONFIG)
    d = sparse.drafter(tmp_path / "d", cfg, target_hidden=8192, prefix="layers.0.")
    rep = check(d, t, ["vllm==0.33.0", "sglang==0.5.23"])
    assert rep.format == "modelopt"
    assert set(verdicts(rep).values()) == {"unverified"} and rep.verdict == "unverified"
    assert any("PR #50170" in u and "--trained-on" in u and "doctor" in u for u in rep.unknowns)
    assert any("h2,h40,h77" in str(v.served.taps) for v in rep.verdicts)
    assert not rep.trained.known and rep.trained.confidence == "low"


def test_idless_eagle_format_is_ok_assuming_the_default(tmp_path):
    """The same config without modelopt's fingerprint is what SpecForge writes for Llama-3.3-70B (no ids; served
    at accept length 2.96 on SGLang): ok on the default taps, with the assumption and the known exception that
    would break it named; --strict makes it unverified."""
    t = sparse.target(tmp_path / "t", LLAMA_70B)
    d = sparse.drafter(tmp_path / "d", eagle_config(8192, 128256), target_hidden=8192)
    rep = check(d, t, ["vllm==0.33.0", "sglang==0.5.23"])
    assert set(verdicts(rep).values()) == {"ok"} and str(rep.trained.wiring) == "h2,h40,h77"
    assert any("PR #50170" in a and "SpecForge" in a for a in rep.assumptions), rep.assumptions
    strict = check(d, t, ["vllm==0.33.0", "sglang==0.5.23"], strict=True)
    assert set(verdicts(strict).values()) == {"unverified"} and not strict.assumptions
    assert any("--strict" in u for u in strict.unknowns)


def test_speculators_1065_four_ids_on_vllm_0_28(tmp_path):
    """A speculators 0.8 drafter with 4 top-level ids: vLLM's llama drafter builds fc for 3 (vllm#54526)."""
    t = sparse.target(tmp_path / "t", QWEN3_235B)
    cfg = speculators_config(4096, 151936, [2, 46, 91, 93], "0.8.0.dev0", norm_before_fc=True,
                             norm_before_residual=True, norm_output=True, fc_norm=False)  # fmt: skip
    d = sparse.drafter(tmp_path / "d", cfg | {"hidden_size": 4096, "intermediate_size": 16384,
                                             "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                                             "vocab_size": 151936}, target_hidden=4096, n_aux=4,
                       embed=True, prefix="layers.0.")  # fmt: skip
    _add_input_norm(d, 4 * 4096)
    rep = check(d, t, ["vllm==0.28.0"])
    assert rep.trained.known and str(rep.trained.wiring) == "h2,h46,h91,h93"
    assert "fc-width" in codes(rep), [f.message for v in rep.verdicts for f in v.findings]
    # a qwen3-type drafter class reads the top-level list for its width (vllm qwen3_eagle3.py)
    cfg["transformer_layer_config"]["model_type"] = "qwen3"
    d2 = sparse.drafter(tmp_path / "d2", cfg | {"hidden_size": 4096, "intermediate_size": 16384,
                                               "num_attention_heads": 32, "num_key_value_heads": 8,
                                               "head_dim": 128, "vocab_size": 151936}, target_hidden=4096,
                        n_aux=4, embed=True, prefix="layers.0.")  # fmt: skip
    _add_input_norm(d2, 4 * 4096)
    assert "fc-width" not in codes(check(d2, t, ["vllm==0.28.0"]))


def test_vllm_46788_deepseek_id_L_unreachable_before_0_25(tmp_path):
    t = sparse.target(tmp_path / "t", DEEPSEEK_V3)
    cfg = eagle_config(7168, 129280, eagle_aux_hidden_state_layer_ids=[2, 30, 61])
    d = sparse.drafter(tmp_path / "d", cfg, target_hidden=7168)
    rep = check(d, t, ["vllm==0.24.0"], trained_on=_wiring("h2,h30,h61"))
    assert set(verdicts(rep).values()) == {"fails"}
    assert all("never captures" in v.served.failure for v in rep.verdicts)
    rep = check(d, t, ["vllm==0.25.0"], trained_on=_wiring("h2,h30,h61"))
    assert set(verdicts(rep).values()) == {"ok"}


def test_vllm_22152_eagle3_only_for_llama_on_0_10(tmp_path):
    t = sparse.target(tmp_path / "t", QWEN3_4B)
    cfg = eagle_config(
        2560, 151936, architectures=["Eagle3LlamaForCausalLM"]
    )  # routed by every vLLM >= 0.8.5
    d = sparse.drafter(tmp_path / "d", cfg, target_hidden=2560)
    rep = check(d, t, ["vllm==0.10.0"], trained_on=_wiring("h2,h18,h33"))
    assert verdicts(rep) == {"vllm==0.10.0 v1": "fails"}
    assert "only supported for Llama" in rep.verdicts[0].served.failure
    assert verdicts(check(d, t, ["vllm==0.10.1"], trained_on=_wiring("h2,h18,h33"))) == {
        "vllm==0.10.1 v1": "ok"
    }


def test_specforge_139_tied_embeddings_with_reduced_vocab(tmp_path):
    t = sparse.target(tmp_path / "t", QWEN3_4B)
    cfg = eagle_config(2560, 151936, tie_word_embeddings=True)
    d = sparse.drafter(tmp_path / "d", cfg, target_hidden=2560)
    rep = check(d, t, ["sglang==0.5.23", "vllm==0.33.0"], trained_on=_wiring("h2,h18,h33"))
    sg = next(v for v in rep.verdicts if v.engine.startswith("sglang"))
    assert any(f.code == "tied-reduced-vocab" and f.severity == "problem" for f in sg.findings)
    assert not any(f.code == "tied-reduced-vocab" for v in rep.verdicts if v.engine.startswith("vllm")
                   for f in v.findings)  # fmt: skip
    assert "garbage drafts" in _said(rep, "tied-reduced-vocab")
    # AngelSlim#16, sglang#8230 (AngelSlim/Qwen3-1.7B_eagle3 at 0.4.9): before 0.5.5 the draft scores the whole
    # vocabulary and its top-k ids index the 32000-long d2t map: index out of bounds while CUDA graphs are captured
    old = check(d, t, ["sglang==0.4.9"], trained_on=_wiring("h2,h18,h33"))
    assert verdicts(old) == {"sglang==0.4.9": "fails"} and "out of bounds" in _said(old, "tied-reduced-vocab")


def test_specforge_310_qwen_vl_on_sglang_0_5_5(tmp_path):
    """Qwen2.5-VL: accept length ~1.0 on 0.5.5 (cause not established): never ok. Qwen3-VL: no EAGLE-3 there."""
    vl = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
          "text_config": {"model_type": "qwen2_5_vl_text", "num_hidden_layers": 28, "hidden_size": 3584,
                          "vocab_size": 152064}}  # fmt: skip
    t = sparse.target(tmp_path / "t", vl)
    d = sparse.drafter(tmp_path / "d", eagle_config(3584, 152064), target_hidden=3584)
    rep = check(d, t, ["sglang==0.5.5"], trained_on=_wiring("h2,h14,h25"))
    assert rep.verdict == "unverified" and any("0.5.5" in u for u in rep.unknowns)
    assert check(d, t, ["sglang==0.5.4"], trained_on=_wiring("h2,h14,h25")).verdict == "ok"
    q3 = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
          "text_config": {"model_type": "qwen3_vl_text", "num_hidden_layers": 36, "hidden_size": 4096,
                          "vocab_size": 151936}}  # fmt: skip
    t3 = sparse.target(tmp_path / "t3", q3)
    d3 = sparse.drafter(tmp_path / "d3", eagle_config(4096, 151936), target_hidden=4096)
    assert verdicts(check(d3, t3, ["sglang==0.5.5"], trained_on=_wiring("h2,h18,h33"))) == {
        "sglang==0.5.5": "fails"
    }


def test_vllm_38111_norm_before_fc_dropped_for_speculators_in_0_18(tmp_path):
    t = sparse.target(tmp_path / "t", QWEN3_4B)
    cfg = speculators_config(2560, 151936, [2, 18, 33], "0.9.0", norm_before_fc=True)
    d = sparse.drafter(tmp_path / "d", cfg | {"hidden_size": 2560, "intermediate_size": 10240,
                                             "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 80,
                                             "vocab_size": 151936}, target_hidden=2560, embed=True,
                       prefix="layers.0.")  # fmt: skip
    _add_input_norm(d, 3 * 2560)
    assert "norm-before-fc" in codes(check(d, t, ["vllm==0.18.0"]))
    assert "norm-before-fc" not in codes(check(d, t, ["vllm==0.19.0"]))


def test_speculators_684_sliding_window_not_applied(tmp_path):
    t = sparse.target(tmp_path / "t", QWEN3_4B)
    layer = {"sliding_window": 2048, "layer_types": ["sliding_attention"]}
    cfg = speculators_config(2560, 151936, [2, 18, 33], "0.9.0", layer_type="qwen3", layer=layer)
    d = sparse.drafter(tmp_path / "d", cfg | {"hidden_size": 2560, "intermediate_size": 10240,
                                             "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 80,
                                             "vocab_size": 151936}, target_hidden=2560, embed=True,
                       prefix="layers.0.")  # fmt: skip
    warned = lambda rep: any(f.code == "sliding-window-ignored" for v in rep.verdicts for f in v.findings)  # noqa: E731
    assert warned(check(d, t, ["vllm==0.25.0"]))
    assert not warned(check(d, t, ["vllm==0.26.0"]))


def test_automodel_2399_yarn_target_with_a_default_rope_draft(tmp_path):
    t = sparse.target(tmp_path / "t", GPT_OSS_120B)
    d = sparse.drafter(tmp_path / "d", eagle_config(2880, 201088, rope_theta=10000.0), target_hidden=2880)
    rep = check(d, t, ["sglang==0.5.23"], trained_on=_wiring("h2,h18,h33"))
    assert any(f.code == "rope-differs" for v in rep.verdicts for f in v.findings)


def test_verl_speco_67_arange_d2t(tmp_path):
    t = sparse.target(tmp_path / "t", QWEN3_4B)
    first = torch.zeros(151936, dtype=torch.bool)
    first[:32000] = True  # verl-SpeCo's t2d: the first draft_vocab_size target ids
    d = sparse.drafter(tmp_path / "d", eagle_config(2560, 151936), target_hidden=2560, d2t=torch.arange(32000),
                       t2d=first)  # fmt: skip
    rep = check(d, t, ["sglang==0.5.23"], trained_on=_wiring("h2,h18,h33"))
    assert rep.has_problem and any(f.code == "absolute-ids-as-offsets" for f in rep.findings)
    # the same d2t with a t2d that agrees is still flagged as suspicious
    d = sparse.drafter(
        tmp_path / "d2", eagle_config(2560, 151936), target_hidden=2560, d2t=torch.arange(32000)
    )
    rep = check(d, t, ["sglang==0.5.23"], trained_on=_wiring("h2,h18,h33"))
    assert any(f.code == "arange-d2t" for f in rep.findings)


@pytest.mark.parametrize("version", ["0.33.0", "0.28.0"])
def test_specforge_nested_ids_on_vllm_runners(tmp_path, version):
    """SpecForge's Qwen3-235B config: nested [1, 46, 90]. Trained on h2,h47,h91 (SpecForge 0.2 through SGLang +1).
    vLLM's V1 runner reads them raw (off by one), the V2 runner ignores them (the default, right by chance). The
    runner is a fact: --runner settles it, CPU means V1, and without either check assumes the CUDA default and
    says what the other runner would feed."""
    t = sparse.target(tmp_path / "t", QWEN3_235B)
    cfg = eagle_config(4096, 151936, eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 46, 90]})
    d = sparse.drafter(tmp_path / "d", cfg, target_hidden=4096)
    engine = [f"vllm=={version}"]
    got = {
        runner: check(d, t, engine, trained_with="specforge==0.2.0", runner=runner).verdicts
        for runner in ("v1", "mrv2")
    }
    assert {r: [(v.served.row.runner, v.status) for v in vs] for r, vs in got.items()} == {
        "v1": [("v1", "mismatch")], "mrv2": [("mrv2", "ok")]
    }  # fmt: skip
    cpu = check(d, t, engine, trained_with="specforge==0.2.0", platform="cpu")
    assert [(v.served.row.runner, v.status) for v in cpu.verdicts] == [("v1", "mismatch")]
    plain = check(d, t, engine, trained_with="specforge==0.2.0")
    (v,) = plain.verdicts
    default = "mrv2" if version == "0.33.0" else "v1"  # Qwen3-MoE stays on V1 on CUDA until 0.29
    assert v.served.row.runner == default and v.status == {"mrv2": "ok", "v1": "mismatch"}[default]
    assert [a.status for a in v.alternatives] == [{"mrv2": "mismatch", "v1": "ok"}[default]]
    if default == "mrv2":
        assert any("CUDA assumed" in a and "--platform" in a and "h1,h46,h90" in a for a in v.assumptions)


def test_doctor_and_test_engine_pick_the_runner_check_picks(tmp_path):
    """issue 15: on CPU vLLM runs V1 in every version. `doctor` and `test --engine` choose the row through the same
    function as `check` (conventions.select_rows), so --platform cpu feeds V1's taps everywhere, and without it
    the assumed CUDA runner is said."""
    from eaglewire.formats import read_drafter
    from eaglewire.jobs.doctor import DoctorOptions, doctor
    from eaglewire.jobs.pair import feed_wiring
    from eaglewire.partial import load_partial_target

    t = sparse.target(
        tmp_path / "t", QWEN3_235B | {"hidden_size": 64, "vocab_size": 300}
    )  # small: doctor reads it
    cfg = eagle_config(64, 300, 100, eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 46, 90]})
    d = sparse.drafter(tmp_path / "d", cfg, target_hidden=64)
    ckpt, partial = read_drafter(d, weights="lazy"), load_partial_target(t)
    for platform, runner, taps in (("cpu", None, "h1,h46,h90"), (None, "v1", "h1,h46,h90"),
                                   ("cuda", None, "h2,h47,h91"), (None, None, "h2,h47,h91")):  # fmt: skip
        (v,) = check(d, t, ["vllm==0.33.0"], platform=platform, runner=runner).verdicts
        rep = doctor(d, t, DoctorOptions(engine="vllm==0.33.0", platform=platform, runner=runner))
        wiring, basis = feed_wiring(ckpt, partial, engine="vllm==0.33.0", platform=platform, runner=runner)
        assert str(v.served.taps) == str(rep.served) == str(wiring) == taps, (platform, runner)
        assert ("CUDA assumed" in basis) == (platform is None and runner is None), basis
    rep = doctor(d, t, DoctorOptions(engine="vllm==0.33.0"))
    assert any("CUDA assumed" in a for a in rep.assumptions) and rep.verdict == "ok"
    strict = doctor(d, t, DoctorOptions(engine="vllm==0.33.0", strict=True))
    assert strict.verdict == "unverified" and any("--strict" in u for u in strict.unknowns)


def _wiring(text):
    from eaglewire.taps import Wiring

    return Wiring.parse(text)


def _add_input_norm(directory, width):
    """Give a sparse drafter the input_norm.weight its norm_before_fc declares (rewrites the file)."""
    from safetensors import safe_open

    path = directory / "model.safetensors"
    with safe_open(str(path), "pt") as f:
        names = list(f.keys())
        shapes = {n: (list(f.get_slice(n).get_shape()), f.get_slice(n).get_dtype()) for n in names}
        small = {n: f.get_tensor(n).clone() for n in names if torch.Size(shapes[n][0]).numel() <= 1 << 20}
    shapes["input_norm.weight"] = ([width], "BF16")
    small["input_norm.weight"] = torch.ones(width)
    sparse.write_sparse(path, shapes, small)


@pytest.mark.parametrize(("version", "dp", "given", "per", "starts"), [
    ("0.5.14", 8, None, 6, True),  # the speculative default 48 over 8 DP workers
    ("0.5.23", 8, 64, 8, True),
    ("0.5.14", 64, 32, 0, False),  # 32 // 64 = 0: `max_running_request is zero`
    ("0.5.23", 64, 32, 1, True),  # 0.5.23 rounds up to 1
])  # fmt: skip
def test_sglang_34290_max_running_requests_per_dp_worker(version, dp, given, per, starts):
    """sglang PR #34290 (open) / #20063: with attention DP, --max-running-requests (or the speculative default 48)
    is the total over the DP workers, so dp 8 leaves 6 running requests per worker."""
    from eaglewire.jobs.lint import lint

    argv = ["python", "-m", "sglang.launch_server", "--model-path", "m", "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", "d", "--tp-size", "8", "--dp-size", str(dp), "--enable-dp-attention"]  # fmt: skip
    if given is not None:
        argv += ["--max-running-requests", str(given)]
    rep = lint(argv, engine_version=version, gpu="h200")
    (change,) = [c for c in rep.changes if c.rule == "sglang.max_running_per_dp_worker"]
    assert change.effective == per and change.given == (given or 48)
    assert rep.starts is starts
    no_dp = lint(argv[: argv.index("--dp-size")], engine_version=version, gpu="h200")
    assert not [c for c in no_dp.changes if c.rule == "sglang.max_running_per_dp_worker"]


def test_specforge_129_a_drafter_of_several_layers(tmp_path):
    """SpecForge#129: a Qwen3-30B-A3B head whose config.json says num_hidden_layers 48 (the target's, copied) was
    refused by SGLang at load, "EAGLE3 currently only supports 1 layer"; `check` said ok. SGLang builds one layer and
    refuses any other count before 0.5.12 (llama_eagle3.py:212-213 @0.5.11), and in its MLA class at every release
    (kimi_k25_eagle3.py:243 @0.5.23); vLLM builds one before 0.11.1 and fails on the first tensor of layers.1. A head
    that really has two layers is served from those releases; a config-only head with the target's layer count is
    unverified where the engine builds them all (one layer of weights leaves the rest uninitialised, no error)."""
    t = sparse.target(tmp_path / "t", QWEN3_235B | {"num_hidden_layers": 48, "hidden_size": 2048})
    cfg = eagle_config(2048, 151936, layers=48)
    d = tmp_path / "d"
    d.mkdir()
    (d / "config.json").write_text(__import__("json").dumps(cfg))
    engines = ["sglang==0.4.10.post2", "sglang==0.5.11", "sglang==0.5.23", "vllm==0.33.0"]
    rep = check(d, t, engines, runner="v1")
    assert verdicts(rep) == {"sglang==0.4.10.post2": "fails", "sglang==0.5.11": "fails",
                             "sglang==0.5.23": "unverified", "vllm==0.33.0 v1": "unverified"}  # fmt: skip
    old = rep.verdicts[0]
    said = next(f.message for f in old.findings if f.code == "draft-layers")
    assert "only supports 1 layer" in said and "set num_hidden_layers to 1" in said
    assert old.evidence["decided_by"] == "draft-layers" and old.evidence["level"] == "read"
    assert any("uninitialised" in u for u in rep.verdicts[2].unknowns)
    # two layers, weights and all: refused by the releases that build one, served by the others
    two = sparse.drafter(tmp_path / "two", eagle_config(8192, 128256, layers=2), target_hidden=8192)
    tl = sparse.target(tmp_path / "llama", LLAMA_70B)
    rep = check(two, tl, ["sglang==0.5.11", "sglang==0.5.12", "vllm==0.11.0", "vllm==0.11.1"], runner="v1")
    got = verdicts(rep)
    assert got["sglang==0.5.11"] == got["vllm==0.11.0 v1"] == "fails", got
    assert "draft-layers" not in {f.code for v in rep.verdicts[1::2] for f in v.findings}
    mla = sparse.drafter(tmp_path / "mla", eagle_config(7168, 129280, layers=2,
                                                       architectures=["Eagle3DeepseekV2ForCausalLM"]),
                         target_hidden=7168)  # fmt: skip
    rep = check(mla, sparse.target(tmp_path / "ds", DEEPSEEK_V3), ["sglang==0.5.23"])
    assert "draft-layers" in codes(rep) and verdicts(rep) == {"sglang==0.5.23": "fails"}


def test_specforge_129_the_copied_layer_count_with_one_layer_of_weights(tmp_path):
    """SpecForge#129 with the weights at hand: config.json says the target's 48 layers, the checkpoint holds one.
    `check` read it as an error (missing tensor layers.1...). The drafter is the layer it holds; an engine that
    builds one layer serves it (vLLM before 0.11.1), one that refuses other counts fails (SGLang before 0.5.12), and
    one that builds 48 leaves 47 unloaded with no error (vLLM 0.11.1+, SGLang 0.5.12+): a problem, fixed by
    num_hidden_layers 1, which `--fix-into` writes."""
    import json

    t = sparse.target(tmp_path / "t", LLAMA_70B | {"num_hidden_layers": 48})
    d = sparse.drafter(tmp_path / "d", eagle_config(8192, 128256), target_hidden=8192)
    (d / "config.json").write_text(json.dumps(eagle_config(8192, 128256, layers=48)))
    engines = ["sglang==0.5.11", "sglang==0.5.23", "vllm==0.11.0", "vllm==0.11.1", "vllm==0.33.0"]
    fixed = tmp_path / "fixed"
    rep = check_job(d, t, engines, fix_into=fixed, runner="v1")
    assert verdicts(rep) == {"sglang==0.5.11": "fails", "sglang==0.5.23": "fails", "vllm==0.11.0 v1": "ok",
                             "vllm==0.11.1 v1": "fails", "vllm==0.33.0 v1": "fails"}  # fmt: skip
    said = _said(rep, "draft-layers-unloaded")
    assert "builds 48 and loads 1" in said and "layers.1-47 keep uninitialised" in said
    assert "Set num_hidden_layers to 1" in said
    old = next(f.message for f in rep.verdicts[0].findings if f.code == "draft-layers")
    assert "the weights hold 1 layer(s): set num_hidden_layers to 1" in old and "later build" not in old
    assert any("weights hold 1 decoder layer" in f.message for f in rep.findings)
    assert json.loads((fixed / "config.json").read_text())["num_hidden_layers"] == 1
    again = check(fixed, t, engines, runner="v1")
    assert set(verdicts(again).values()) == {"ok"}, verdicts(again)
    # weights of two layers, config of three: the count held decides (one built before 0.11.1 fails on layers.1)
    two = sparse.drafter(tmp_path / "two", eagle_config(8192, 128256, layers=2), target_hidden=8192)
    (two / "config.json").write_text(json.dumps(eagle_config(8192, 128256, layers=3)))
    rep = check(two, t, ["vllm==0.11.0", "vllm==0.11.1"], runner="v1")
    assert verdicts(rep) == {"vllm==0.11.0 v1": "fails", "vllm==0.11.1 v1": "fails"}
    assert "layers.2 keeps uninitialised" in _said(rep, "draft-layers-unloaded")


def test_vllm_30987_a_drafter_config_without_architectures(tmp_path):
    """vllm PR #30987: an EAGLE-3 head whose config.json has no architectures ("Model architectures
    ['EagleLlamaModel'] are not supported for now"); `check` said ok. vLLM prefixes each architecture with Eagle3
    (TypeError on None before 0.10.1), finds none (ValueError, 0.10.1-0.11.0), or fills LlamaModel from model_type
    and serves no Eagle3LlamaModel (0.11.1+); SGLang tests names in None (model_config.py is_generation_model)."""
    import json

    t = sparse.target(tmp_path / "t", LLAMA_70B)
    cfg = eagle_config(8192, 128256)
    d = sparse.drafter(tmp_path / "d", cfg, target_hidden=8192)
    (d / "config.json").write_text(json.dumps({k: v for k, v in cfg.items() if k != "architectures"}))
    engines = ["sglang==0.4.5", "sglang==0.5.23", "vllm==0.9.2", "vllm==0.11.0", "vllm==0.33.0"]
    rep = check(d, t, engines, runner="v1")
    assert set(verdicts(rep).values()) == {"fails"}, verdicts(rep)
    said = {
        v.engine: next(f.message for f in v.findings if f.code == "architectures-missing")
        for v in rep.verdicts
    }
    assert "TypeError" in said["vllm==0.9.2 v1"] and "No model architectures" in said["vllm==0.11.0 v1"]
    assert "Eagle3LlamaModel" in said["vllm==0.33.0 v1"] and "TypeError" in said["sglang==0.5.23"]
    assert all('"architectures": ["LlamaForCausalLMEagle3"]' in m for m in said.values())
    ok = check(sparse.drafter(tmp_path / "ok", cfg, target_hidden=8192), t, engines, runner="v1")
    assert "architectures-missing" not in codes(ok)


def test_vllm_norm_before_residual_read_from_0_10_1_at_the_top_level_only(tmp_path):
    """vLLM's EAGLE-3 heads have no norm_before_residual before 0.10.1 (llama_eagle3.py @0.10.0: the residual is the
    state before hidden_norm) and from 0.10.1 read it with getattr on the HF config, the top level only; `check` said
    ok for a head that sets it at 0.10.0, and for one that sets it under eagle_config at any release. A head
    converted for vLLM before 0.10.1 (`convert --to eagle`) carries it at the top level."""
    import json

    t = sparse.target(tmp_path / "t", LLAMA_70B)
    top = sparse.drafter(
        tmp_path / "top", eagle_config(8192, 128256, norm_before_residual=True), target_hidden=8192
    )
    nested = sparse.drafter(tmp_path / "nested", eagle_config(8192, 128256), target_hidden=8192)
    cfg = json.loads((nested / "config.json").read_text())
    (nested / "config.json").write_text(json.dumps(cfg | {"eagle_config": {"norm_before_residual": True}}))
    rep = check(top, t, ["vllm==0.8.5", "vllm==0.10.0", "vllm==0.10.2", "vllm==0.33.0"], runner="v1")
    got = {v.engine: "norm-before-residual" in {f.code for f in v.findings} for v in rep.verdicts}
    assert got == {"vllm==0.8.5 v1": True, "vllm==0.10.0 v1": True, "vllm==0.10.2 v1": False,
                   "vllm==0.33.0 v1": False}, got  # fmt: skip
    assert "serve it with vLLM 0.10.1 or later" in _said(rep, "norm-before-residual")
    rep = check(nested, t, ["vllm==0.10.2", "vllm==0.33.0"], runner="v1")
    assert set(verdicts(rep).values()) == {"fails"} and "at the top level" in _said(
        rep, "norm-before-residual"
    )


def test_vllm_23740_a_draft_kv_page_other_than_the_targets(tmp_path):
    """vllm PR #23740 / vllm#22432: AngelSlim/Qwen3-32B_eagle3 (head_dim 80 from 5120 / 64, the target's 128) fails
    KV-cache setup with a bare NotImplementedError before 0.11.0 (kv_cache_utils.py:1118-1133 @0.10.2: neither one
    spec nor one page size); `check` said ok. 0.11.0 groups full-attention layers of any page size; a target with
    sliding-window layers (gpt-oss) still raises at 0.11.x. A KV-head count that differs only below some TP size
    is unverified, the launch's TP settles it."""
    qwen = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 64,
            "hidden_size": 5120, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
            "vocab_size": 151936}  # fmt: skip
    t = sparse.target(tmp_path / "t", qwen)
    d = sparse.drafter(tmp_path / "d", eagle_config(5120, 151936, num_attention_heads=64, num_key_value_heads=8),
                       target_hidden=5120)  # fmt: skip
    rep = check(d, t, ["vllm==0.10.2", "vllm==0.11.0", "vllm==0.11.1", "vllm==0.33.0"], runner="v1")
    assert verdicts(rep) == {"vllm==0.10.2 v1": "fails", "vllm==0.11.0 v1": "fails", "vllm==0.11.1 v1": "ok",
                             "vllm==0.33.0 v1": "ok"}  # fmt: skip
    # 0.11.0 takes the page of another size and fails on the head size instead (test_vllm_28919_...)
    assert {f.code for f in rep.verdicts[1].findings if f.severity == "problem"} == {"draft-head-size"}
    said = _said(rep, "kv-page-size")
    assert "640 elements" in said and "1024" in said and "NotImplementedError" in said
    same = sparse.drafter(tmp_path / "same", eagle_config(5120, 151936, num_attention_heads=40, num_key_value_heads=8,
                                                          head_dim=128), target_hidden=5120)  # fmt: skip
    assert verdicts(check(same, t, ["vllm==0.10.2"], runner="v1")) == {"vllm==0.10.2 v1": "ok"}
    # 4 KV heads beside the target's 8: one per rank at TP 8 and 16, so the launch's TP decides
    fewer = sparse.drafter(tmp_path / "fewer", eagle_config(5120, 151936, num_attention_heads=64,
                                                            num_key_value_heads=4, head_dim=128), target_hidden=5120)  # fmt: skip
    rep = check(fewer, t, ["vllm==0.10.2"], runner="v1")
    assert verdicts(rep) == {"vllm==0.10.2 v1": "unverified"}
    assert any("tensor-parallel size 1, 2, 4" in u for u in rep.verdicts[0].unknowns), rep.verdicts[
        0
    ].unknowns
    oss = sparse.target(tmp_path / "oss", GPT_OSS_120B | {"num_attention_heads": 64, "num_key_value_heads": 8,
                                                          "head_dim": 64, "layer_types": ["sliding_attention"] * 36})  # fmt: skip
    small = sparse.drafter(tmp_path / "small", eagle_config(2880, 201088, num_attention_heads=32, num_key_value_heads=8,
                                                            head_dim=128), target_hidden=2880)  # fmt: skip
    got = verdicts(check(small, oss, ["vllm==0.11.0", "vllm==0.12.0"], runner="v1"))
    assert got["vllm==0.11.0 v1"] == "fails" and got["vllm==0.12.0 v1"] != "fails", got


def test_vllm_28919_and_39775_draft_attention_on_the_targets_backend(tmp_path):
    """vllm#28919: AngelSlim/Qwen3-32B_eagle3 (head_dim 80) crashes vLLM 0.11.0 at the first request: FlashAttention
    lacks 80, the draft's layers get another backend, and their metadata comes from the target's builder. vllm PR
    #39775: Model Runner V2 before 0.29.0 plans FlashAttention-3's schedule for the target's geometry, so a draft
    of other heads fails on Hopper ('scheduler_metadata must have shape'): unverified, the GPU settles it. `check`
    said ok for both."""
    qwen = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 64,
            "hidden_size": 5120, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
            "vocab_size": 151936}  # fmt: skip
    t = sparse.target(tmp_path / "t", qwen)
    angel = sparse.drafter(tmp_path / "angel", eagle_config(5120, 151936, num_attention_heads=64,
                                                            num_key_value_heads=8), target_hidden=5120)  # fmt: skip
    rep = check(angel, t, ["vllm==0.11.0", "vllm==0.11.1"], runner="v1")
    assert verdicts(rep) == {"vllm==0.11.0 v1": "fails", "vllm==0.11.1 v1": "ok"}
    assert "head_dim is 80" in _said(rep, "draft-head-size") and "vllm#28919" in _said(rep, "draft-head-size")
    rep = check(angel, t, ["vllm==0.23.0", "vllm==0.29.0"], runner="mrv2")
    assert verdicts(rep) == {"vllm==0.23.0 mrv2": "unverified", "vllm==0.29.0 mrv2": "ok"}
    assert any("scheduler_metadata" in u for u in rep.verdicts[0].unknowns), rep.verdicts[0].unknowns
    assert verdicts(check(angel, t, ["vllm==0.23.0"], runner="v1")) == {"vllm==0.23.0 v1": "ok"}
    same = sparse.drafter(tmp_path / "same", eagle_config(5120, 151936, num_attention_heads=64, num_key_value_heads=8,
                                                          head_dim=128), target_hidden=5120)  # fmt: skip
    assert verdicts(check(same, t, ["vllm==0.23.0"], runner="mrv2")) == {"vllm==0.23.0 mrv2": "ok"}


def test_vllm_18906_a_drafter_narrower_than_its_target(tmp_path):
    """vllm#18906: a Llama-3.3-70B EAGLE-3 head of hidden_size 6144 (target 8192) on vLLM 0.9.0: KeyError on its
    embed_tokens, then `assert hidden_states.shape[-1] == input_embeds.shape[-1]`; `check` said ok. vLLM 0.9.0 builds
    the head without an embedding and always gives it the target's (eagle.py:330-336, llama_eagle3.py:98-103): any
    width other than the target's fails at startup, and a checkpoint embed_tokens at load. From 0.9.1 a head of its own
    width keeps its own embedding: served where the checkpoint carries it, uninitialised (V1) or the target's (MRV2,
    the width assert) where it does not."""
    t = sparse.target(tmp_path / "t", LLAMA_70B)
    cfg = eagle_config(
        6144, 128256, target_hidden_size=8192, num_attention_heads=48, architectures=["LlamaForCausalLM"]
    )
    bare = sparse.drafter(tmp_path / "bare", cfg, target_hidden=8192)
    own = sparse.drafter(tmp_path / "own", cfg, target_hidden=8192, embed=True)
    for d in (bare, own):
        rep = check(d, t, ["vllm==0.9.0"], runner="v1")
        assert verdicts(rep) == {"vllm==0.9.0 v1": "fails"} and "target-embedding-only" in codes(rep)
        assert "AssertionError" in _said(rep, "target-embedding-only")
    rep = check(bare, t, ["vllm==0.10.2", "vllm==0.25.0"], runner="v1")
    assert set(verdicts(rep).values()) == {"fails"} and codes(rep) == {"own-embedding-missing"}
    assert "uninitialised" in _said(rep, "own-embedding-missing")
    (v,) = check(bare, t, ["vllm==0.25.0"], runner="mrv2").verdicts
    assert v.status == "fails" and "width assert" in next(
        f.message for f in v.findings if f.code == "own-embedding-missing"
    )
    rep = check(own, t, ["vllm==0.10.2", "vllm==0.33.0"], runner="v1")
    assert set(verdicts(rep).values()) == {"ok"}, verdicts(rep)
    # a head as wide as its target: 0.9.0 serves it with the target's embedding, and refuses one of its own at load
    same = eagle_config(8192, 128256, architectures=["LlamaForCausalLM"])
    assert verdicts(check(sparse.drafter(tmp_path / "s", same, target_hidden=8192), t, ["vllm==0.9.0"])) == {
        "vllm==0.9.0 v1": "ok"
    }
    rep = check(sparse.drafter(tmp_path / "se", same, target_hidden=8192, embed=True), t, ["vllm==0.9.0"])
    assert verdicts(rep) == {"vllm==0.9.0 v1": "fails"} and "model.embed_tokens" in _said(
        rep, "target-embedding-only"
    )


def _said(rep, code: str) -> str:
    return next(f.message for v in rep.verdicts for f in v.findings if f.code == code)


def test_speculators_prerelease_of_a_release_read(tmp_path):
    """vllm#38893: RedHatAI's Gemma-4 speculators heads serve well from vLLM 0.19.1; their configs carry
    `speculators_version` pre-releases such as 0.5.0.dev163, which no row covers (PEP 440 puts it below 0.5.0), and
    `check` said unverified. A pre-release runs the code of the line before it or of the release it leads to; ids in
    the config rule out the 0.3-0.4 row, which never writes them, so the 0.5 row decides: ok, said as an assumption."""
    t = sparse.target(tmp_path / "t", LLAMA_70B)
    d = tmp_path / "d"
    d.mkdir()
    for version, want in (("0.5.0.dev163", "ok"), ("0.5.0", "ok"), ("0.4.0.1", "mismatch")):
        layer = {"num_attention_heads": 64, "max_position_embeddings": 131072}
        cfg = speculators_config(8192, 128256, [2, 40, 77], version, layer=layer)
        (d / "config.json").write_text(__import__("json").dumps(cfg))
        rep = check(d, t, ["vllm==0.20.0"], runner="v1")
        assert verdicts(rep) == {"vllm==0.20.0 v1": want}, (version, rep.verdicts[0].unknowns)
        if version.endswith("dev163"):
            assert any("pre-release" in a for v in rep.verdicts for a in v.assumptions) or any(
                "pre-release" in str(a) for a in rep.trained.assumptions
            )
