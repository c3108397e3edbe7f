"""Targets the table does not list (family `generic`): the model-code records run every text-generating target each
release's registry serves with EAGLE-3 (tests/engines/model_code.py), so `check` decides from the release's own
capture code where it ran, instead of assuming the generic capture: `ok` where it held in every case, `fails`
where the decoder captures nothing at all, and `unverified` naming the record where it captured otherwise."""

from __future__ import annotations

from dataclasses import replace

import pytest

from eaglewire.engines.observed import records
from eaglewire.jobs.check import _one_line, check
from eaglewire.jobs.coverage import GenericRun, generic_run
from eaglewire.taps import Wiring
from eaglewire.targets import TargetInfo

from fixtures import config_only_drafter

TRAINED = Wiring.of([2, 16, 29])


@pytest.fixture(scope="module")
def drafter(tmp_path_factory):
    """A default-ids drafter (no ids in its config: every engine feeds its own default, h2,h16,h29 at L=32)."""
    return config_only_drafter(tmp_path_factory.mktemp("drafter"))


def _target(arch: str, model_type: str = "x") -> TargetInfo:
    return TargetInfo(arch, arch, model_type, "generic", 32, 4096, 128256, source="test")


def _on_gpu(drafter, arch: str, spec: str, trained: Wiring = TRAINED):
    """check's one verdict for the drafter on a 32-layer target of that architecture, on a GPU."""
    (v,) = check(drafter, _target(arch), [spec], trained, platform="cuda").verdicts
    return v


def test_a_decoder_that_never_captures_fails_with_no_value_to_set(drafter):
    """vLLM 0.33.0's MiMoForCausalLM inherits Qwen2's EAGLE-3 interface but its own MiMoModel.forward (mimo.py)
    never calls `_maybe_add_hidden_state`: the record's forward captured nothing on every id list."""
    run = generic_run("vllm", "0.33.0", "MiMoForCausalLM", "mrv2")
    assert run is not None and run.captures_nothing and not run.holds
    rep = check(drafter, _target("MiMoForCausalLM"), ["vllm==0.33.0"], TRAINED, platform="cuda")
    (v,) = rep.verdicts
    assert v.status == "fails" and "never captures an aux hidden state" in v.served.failure
    assert v.fix is not None and v.fix.key is None and "no config value helps" in v.fix.reason
    assert v.evidence["level"] == "model-code" and "vllm-0.33.0-model-code.json" in v.evidence["basis"]
    assert not v.unknowns


def test_the_running_engine_fails_where_the_model_code_captured_nothing(drafter):
    """vLLM 0.32.0's CPU build served a tiny MiMo target with the zoo drafter (the tier's family targets): the
    engine raised `too many values to unpack` at the first request (--enforce-eager: the CPU build makes no warm-up
    run), where the model-code record had said the decoder captures nothing. On the CPU the verdict rests on that
    run and names no stage (where it stops depends on the launch); on a GPU the profile run stops it at warm-up."""
    rec = next(r for r in records("engine") if r["engine"] == "vllm==0.32.0" and r["platform"] == "cpu")
    (row,) = [r for r in rec["families"] if r["architecture"] == "MiMoForCausalLM"]
    assert row["engine"]["stage"] == "first request" and "too many values to unpack" in row["engine"]["error"]
    assert row["engine"]["forward"]["states_returned"] is None  # the target's forward returned no aux state
    assert row["without_drafter"]["stage"] is None and row["agree"]  # the target alone runs
    (v,) = check(drafter, _target("MiMoForCausalLM"), ["vllm==0.32.0"], TRAINED, platform="cpu").verdicts
    assert v.status == "fails" and v.served.stage is None
    assert v.evidence["level"] == "engine" and "vllm-0.32.0-cpu.json" in v.evidence["basis"]
    v = _on_gpu(drafter, "MiMoForCausalLM", "vllm==0.32.0")
    assert v.status == "fails" and v.served.stage == "warm-up" and v.evidence["level"] == "model-code"


@pytest.mark.parametrize("spec", ["vllm==0.33.0", "sglang==0.5.23"])
def test_a_target_whose_own_capture_held_is_decided(drafter, spec):
    """Qwen3.5-MoE (its multimodal wrapper, as its checkpoints are published): the table has no row; the release's
    own code, executed, captured as the generic capture says in every case, so the verdict is decided."""
    engine, version = spec.split("==")
    arch = "Qwen3_5MoeForConditionalGeneration"
    assert generic_run(engine, version, arch, None).holds
    rep = check(drafter, _target(arch), [spec], TRAINED, platform="cuda")
    for v in rep.verdicts:
        assert v.status == "ok", (v.engine, v.unknowns)
        assert not any("not in eaglewire's table" in u for u in v.unknowns)
    assert rep.verdicts[0].evidence["level"] == "model-code"


def test_a_decoder_borrowed_from_a_listed_family_is_served_by_its_rows(drafter, tmp_path):
    """vLLM's MistralLarge3ForCausalLM runs DeepSeek-V2's decoder: the generic capture fails where id 0 is asked
    (the residual is None there), and every case of the record is what the DeepSeek rows say. The verdict is served
    by those rows: decided on the default ids, and on id 0 too (every fitting row fails it), resting on the record."""
    run = generic_run("vllm", "0.33.0", "MistralLarge3ForCausalLM", "mrv2")
    assert run is not None and 0 < run.agree < run.claims and not run.captures_nothing
    assert "vllm-deepseek-mrv2-0.33" in run.fits
    v = _on_gpu(drafter, "MistralLarge3ForCausalLM", "vllm==0.33.0")
    assert v.status == "ok" and not v.unknowns and v.row_key == "vllm-deepseek-mrv2-0.33"
    assert v.evidence["level"] == "model-code" and "row vllm-deepseek-mrv2-0.33 says" in v.evidence["basis"]
    asks_h0 = config_only_drafter(tmp_path / "h0", ids=[0, 16, 29])
    v = _on_gpu(asks_h0, "MistralLarge3ForCausalLM", "vllm==0.33.0", Wiring.of([0, 16, 29]))
    assert v.status == "fails" and not v.unknowns and "h0" in v.served.failure
    # the other runner (V1, where a launch sets it) is fitted too: no difference is claimed that the rows lack
    (v,) = check(drafter, _target("MistralLarge3ForCausalLM"), ["vllm==0.33.0"], TRAINED).verdicts
    assert [(a.row_key, a.status) for a in v.alternatives] == [("vllm-deepseek-v1-0.33", "ok")]
    assert v.status == "ok" and not v.assumptions


def test_sglang_decoders_with_per_layer_flags_are_served_by_those_rows(drafter):
    """SGLang's Qwen2MoeForCausalLM (0.5.2-0.5.21) reads per-layer flags, as the Qwen rows say (a negative id wraps
    round the layer list), not the list the generic Llama rows read: served by the Qwen2 row, named as such."""
    run = generic_run("sglang", "0.5.21", "Qwen2MoeForCausalLM", None)
    assert not run.holds and "sglang-qwen2-0.5.11+" in run.fits
    v = _on_gpu(drafter, "Qwen2MoeForCausalLM", "sglang==0.5.21")
    assert v.status == "ok" and v.row_key == "sglang-qwen2-0.5.11+" and not v.unknowns


def test_a_decoder_that_differs_from_every_row_only_at_its_edges_is_served_inside(drafter, tmp_path):
    """SGLang's Glm4MoeLiteForCausalLM (GLM-4.7-Flash) captures as the DeepSeek rows say on every id list inside
    1..L-1, but id 0 crashes (its loop adds a residual that is None there) where DeepSeek's captures h0: a drafter
    on the default ids is served by the DeepSeek row; one asking for id 0 stays unverified, naming the record."""
    run = generic_run("sglang", "0.5.20", "Glm4MoeLiteForCausalLM", None)
    assert not run.fits and "sglang-deepseek-0.5.17+" in run.fits_inside
    v = _on_gpu(drafter, "Glm4MoeLiteForCausalLM", "sglang==0.5.20")
    assert v.status == "ok" and v.row_key == "sglang-deepseek-0.5.17+" and not v.unknowns
    assert "inside 1..L-1, as this drafter's are" in v.evidence["basis"]
    asks_h0 = config_only_drafter(tmp_path / "h0", ids=[0, 16, 29], nested=True)
    v = _on_gpu(asks_h0, "Glm4MoeLiteForCausalLM", "sglang==0.5.20", Wiring.of([1, 17, 30]))
    assert v.status == "unverified" and any("sglang-0.5.20-model-code.json" in u for u in v.unknowns)


def test_a_capture_that_differs_only_at_the_edges_settles_ids_inside():
    """Where no listed family's rows fit a run that differed only at the loop's edges (an id list asking for an id
    outside 1..L-1, or the forward returning h0 or h_L), the generic row's answer holds for a drafter asking none
    and served neither (the record's other cases are that answer); not where that answer is a failure, which may be
    the edge itself (SGLang's id L-1 is h_L: the generic row drops it, Gemma's decoder captures it)."""
    run = GenericRun("vllm", "0.33.0", "record", 31, 29, captures_nothing=False, edges_only=True)
    assert run.settles(None, 32, (2, 16, 29)) and run.settles((2, 16, 29), 32, (2, 16, 29))
    assert run.settles((1, 31), 32, (1, 31))
    assert not run.settles((0, 16, 29), 32, (0, 16, 29)) and not run.settles((2, 32), 32, (2, 32))
    assert not run.settles((-1, 2), 32, (31, 2))
    assert not run.settles((1, 15, 31), 32, (2, 16, 32))  # ids inside, served h_L (SGLang's +1)
    assert not run.settles((1, 15, 31), 32, None)  # the generic row fails them
    assert not replace(run, edges_only=False).settles((2, 16, 29), 32, (2, 16, 29))


def test_claims_made_only_by_the_capture_request_failing_at_the_edges_decide_nothing_inside(drafter):
    """SGLang 0.5.23's Qwen4-Exp: its per-layer flags raise IndexError for ids L-1 and L at startup (4 claims, each
    agreeing), but the probe could not run its forward, so nothing says what the loop captures for ids inside it:
    the run does not hold, and check stays unverified there rather than calling the generic capture verified."""
    run = generic_run("sglang", "0.5.23", "Qwen4ExpForConditionalGeneration", None)
    assert run is not None and run.claims == run.agree > 0
    assert all(c["forward_taps"] is None and "IndexError" in c["error"] for c in run.cases)
    assert not run.holds and not run.settles((2, 16, 29), 32, (3, 17, 30))


def test_a_capture_that_differs_only_where_it_returns_the_last_layer_is_decided_inside(drafter, tmp_path):
    """SGLang's Gemma decoders append the last layer's output after their loop (`if num_layers in
    layers_to_capture`), where the generic capture has no such line: at 0.5.16 Gemma-4's captured h32 for id 31 and
    h0 for id -1 and agreed with the generic capture on every other id list. A drafter served neither is decided from
    the record; one the generic row would serve h_L stays unverified, naming the record."""
    run = generic_run("sglang", "0.5.16", "Gemma4ForConditionalGeneration", None)
    assert run is not None and not run.holds and run.edges_only and not run.fits
    differ = [c for c in run.cases if c["agree"] is False]
    assert differ and all({0, 32} & set(c["forward_taps"]) for c in differ)
    v = _on_gpu(drafter, "Gemma4ForConditionalGeneration", "sglang==0.5.16")
    assert v.status == "ok" and not v.unknowns and v.evidence["level"] == "model-code"
    assert "returned h0 or h_L" in v.evidence["basis"]
    asks_last = config_only_drafter(tmp_path / "last", ids=[1, 15, 31], nested=True)
    v = _on_gpu(asks_last, "Gemma4ForConditionalGeneration", "sglang==0.5.16", Wiring.of([2, 16, 32]))
    assert v.status == "unverified"
    assert any(
        "captured otherwise in 4 of 31" in u and "sglang-0.5.16-model-code.json" in u for u in v.unknowns
    )


def test_a_target_no_record_ran_is_assumed(drafter):
    assert generic_run("vllm", "0.33.0", "NoSuchForCausalLM", None) is None
    assert generic_run("vllm", "0.33.0", None, None) is None


def test_every_generic_run_decides_check_as_its_outcome_says(drafter):
    """Every run the records hold (coverage's `generic`), at each engine's newest release, one where targets
    captured nothing or were refused (SGLang 0.5.21, vLLM 0.17.1: the Transformers modeling backend under its
    pinned transformers) and one where they differ only at the loop's edges (SGLang 0.5.16): `check` on that
    target decides as the outcome says, for that runner."""
    from eaglewire.engines import table
    from eaglewire.jobs.coverage import coverage

    releases = {
        "sglang": {table.NEWEST["sglang"], "0.5.21", "0.5.16"},
        "vllm": {table.NEWEST["vllm"], "0.17.1"},
    }
    runs = [g for g in coverage().generic if g["release"] in releases[g["engine"]]]
    assert {g["outcome"] for g in runs} == {"holds", "differs at the edges", "as listed families",
                                            "as listed families inside the loop", "captures nothing", "refused",
                                            "no forward ran"}  # fmt: skip
    assert {g["engine"] for g in runs} == {"sglang", "vllm"}
    for g in runs:
        spec = f"{g['engine']}=={g['release']}"
        # a model type vLLM's gate before 0.22.0 lets through (its test is a substring: engines/vllm/config.py)
        (v,) = check(drafter, _target(g["architecture"], "qwen_like"), [spec], TRAINED, platform="cuda",
                     runner=g["runner"] or None).verdicts  # fmt: skip
        where = (spec, g["architecture"], g["runner"])
        table_unknown = [u for u in v.unknowns if "not in eaglewire's table" in u]
        if g["outcome"] == "holds":
            assert not table_unknown and v.evidence["level"] == "model-code", where
        elif g["outcome"] == "captures nothing":
            assert v.status == "fails" and "never captures" in v.served.failure, where
        elif g["outcome"] == "refused":  # the engine's own error, whatever the ids
            run = generic_run(g["engine"], g["release"], g["architecture"], g["runner"] or None)
            assert v.status == "fails" and _one_line(run.refused) in v.served.failure, where
        elif g["outcome"].startswith("as listed families"):  # served by those rows (they answer it alike)
            assert not table_unknown and v.row_key in g["fits"], where
            assert f"as row {v.row_key} says" in v.evidence["basis"], where
        elif g["outcome"] == "differs at the edges":  # the drafter's default ids ask for no edge, nor get one
            assert not table_unknown and "outside 1..L-1" in v.evidence["basis"], where
            assert v.status != "unverified", where
        else:  # differs, or no forward ran (only the request's failures): named, undecided
            assert v.status == "unverified" and any(g["record"] in u for u in table_unknown), where


def test_sglang_qwen3_5_wrappers_captured_nothing_until_the_decoder_took_the_request(drafter):
    """SGLang 0.5.11-0.5.21: Qwen3VLForConditionalGeneration.set_eagle3_layers_to_capture writes `layers_to_capture`
    on the inner Qwen3_5ForCausalLM, whose forward reads per-layer `_is_layer_to_capture` flags that only the
    DFlash setter sets: with EAGLE-3 nothing is captured (the crash sglang PR #38307 reports: the wrapper's tuple
    unpack fails). The records found it by running the release's code; from 0.5.22 the decoder has its own setter.
    The wrappers built on the same decoder (InternS2-Mobius, Qwen4-Exp) capture nothing there too."""
    arch = "Qwen3_5MoeForConditionalGeneration"
    for wrapper in (arch, "InternS2MobiusForConditionalGeneration", "Qwen4ExpForConditionalGeneration"):
        assert generic_run("sglang", "0.5.21", wrapper, None).captures_nothing, wrapper
    v = _on_gpu(drafter, arch, "sglang==0.5.21")
    assert v.status == "fails" and "sglang-0.5.21-model-code.json" in v.served.failure
    v = _on_gpu(drafter, arch, "sglang==0.5.23")
    assert v.status == "ok"


def test_minicpm_runs_in_every_vllm_record_from_the_release_that_serves_it(drafter):
    """MiniCPM's config is its checkpoints' remote code, so the probe's config is a Llama one: until the probe gave
    it the muP fields those checkpoints carry (capture_probe.ARCH_KEYS), vLLM's MiniCPM forward stopped on
    `scale_emb` at every release from 0.11.0 and no record ran it. Now every record runs it on each runner the
    release has, and `check` on a GPU decides from the record."""
    from packaging.version import Version

    recs = [r for r in records("model-code") if r["engine"].startswith("vllm==")
            and Version(r["engine"].split("==")[1]) >= Version("0.11.0")]  # fmt: skip
    assert len(recs) >= 39
    for rec in recs:
        runs = {f["runner"]: f for f in rec["families"] if f["architecture"] == "MiniCPMForCausalLM"}
        runner = "mrv2" if Version(rec["engine"].split("==")[1]) >= Version("0.34.0") else "v1"  # V1 removed
        assert runs.get(runner, {}).get("claims", 0) == 31, rec["engine"]
        assert not any("MiniCPMForCausalLM" in k and "scale_emb" in v for k, v in rec["not_run"].items())
    for spec in ("vllm==0.12.0", "vllm==0.28.0"):
        v = _on_gpu(drafter, "MiniCPMForCausalLM", spec)
        assert v.status != "unverified" and v.evidence["level"] == "model-code", (spec, v.status, v.unknowns)


@pytest.mark.parametrize(
    "engine, arch, first, last",
    [
        ("sglang", "Gemma3ForCausalLM", "0.5.12", "0.5.23"),
        ("sglang", "Gemma3ForConditionalGeneration", "0.5.12", "0.5.23"),
        ("vllm", "Gemma4ForCausalLM", "0.19.1", "0.33.0"),
        ("vllm", "Gemma4ForConditionalGeneration", "0.19.1", "0.33.0"),
    ],
)
def test_gemma_runs_in_every_record_of_the_releases_that_serve_it(drafter, engine, arch, first, last):
    """Gemma's decoders keep parts around their loop the probe did not stand in: SGLang Gemma-3's rotary tables
    (`rotary_emb`, handed to every layer) and vLLM Gemma-4's `self_decoder` (its embeddings and per-layer inputs);
    SGLang's Gemma-3 wrapper builds its text model as `self.language_model`. No record ran them. Now every record
    of the releases that serve them runs every case, and `check` on a GPU decides from the record wherever the
    drafter's ids are ones the run answered like the generic capture."""
    from packaging.version import Version

    recs = [r for r in records("model-code") if r["engine"].startswith(f"{engine}==")
            and Version(first) <= Version(r["engine"].split("==")[1]) <= Version(last)]  # fmt: skip
    assert len(recs) >= 12
    for rec in recs:
        runs = [f for f in rec["families"] if f["architecture"] == arch]
        assert runs and all(f["claims"] == f["cases"] == 31 for f in runs), rec["engine"]
        assert not any(f"({arch})" in k for k in rec["not_run"]), rec["engine"]
    v = _on_gpu(drafter, arch, f"{engine}=={last}")
    assert v.status != "unverified" and v.evidence["level"] == "model-code", (v.status, v.unknowns)


def test_kimi_linear_is_decided_and_kimi_k3_says_why_no_record_could_run_it(drafter):
    """vLLM's Kimi-Linear decoder (KimiLinearModel without attention residuals) captures as the generic capture in
    every case (its layers return hidden, prefix sum and residual); the same decoder with Kimi-K3's attention
    residuals captures, after a layer, the block's prefix sum or (VLLM_KIMI_K3_AUX_ATTN_RES_STREAM=1) the residual
    stream: no stand-in tells those apart, so `check` stays unverified for Kimi-K3 and says why, naming the record."""
    run = generic_run("vllm", "0.33.0", "KimiLinearForCausalLM", "v1")
    assert run is not None and run.holds
    assert _on_gpu(drafter, "KimiLinearForCausalLM", "vllm==0.33.0").status == "ok"
    v = _on_gpu(drafter, "KimiK3ForConditionalGeneration", "vllm==0.33.0")
    said = " ".join(v.unknowns)
    assert (
        v.status == "unverified"
        and "attention-residuals decoder" in said
        and "VLLM_KIMI_K3_AUX_ATTN_RES_STREAM" in said
    )
    assert "vllm-0.33.0-model-code.json" in said and "capture_probe" not in said


def test_the_transformers_backend_is_decided_from_its_own_capture(drafter):
    """vLLM serves OLMo-2, Phi, GPT-NeoX, Seed-OSS, SmolLM3 and others with its Transformers modeling backend
    (`TransformersForCausalLM`): its capture is an `OutputRecorder` on the output of decoder layer id-1, h_id as the
    generic capture, but id 0 asks for `_layer_names[-1]`, a KeyError as the target loads. The records run
    transformers' own decoder under the release's backend (tests/engines/modeling_backend.py), with the release's
    pinned transformers: a drafter whose ids are inside 1..L-1 is decided; at 0.13.0-0.19.0, whose pin keeps transformers
    below 5, the backend refuses EAGLE-3 ("requires transformers>=5.0.0 for Eagle3 support") whatever the ids."""
    run = generic_run("vllm", "0.33.0", "Olmo2ForCausalLM", "v1")
    assert run is not None and run.edges_only and not run.holds and not run.refused
    # DeepSeek's rows at 0.33 say the same in every case (1..L; id 0 fails): check serves it by them
    assert run.fits == ("vllm-deepseek-v1-0.33", "vllm-deepseek-v4-v1-0.33")
    differ = [c for c in run.cases if c["agree"] is False]
    assert differ and all(0 in c["ids"] and c["error"].startswith("KeyError: -1 (raised in") for c in differ)
    v = _on_gpu(drafter, "Olmo2ForCausalLM", "vllm==0.33.0")
    assert v.status == "ok" and v.evidence["level"] == "model-code", v.unknowns
    run = generic_run("vllm", "0.17.1", "TransformersForCausalLM", "v1")
    assert (
        run is not None and run.refused_at_load and "requires transformers>=5.0.0 for Eagle3" in run.refused
    )
    rec = next(r for r in records("model-code") if r["engine"] == "vllm==0.17.1")
    assert rec["provenance"]["transformers_backend"].startswith("4.")  # the release's pin, not the venv's
    # a Llama checkpoint served with --model-impl transformers (its model_type passes 0.17's eagle3 gate)
    (v,) = check(drafter, _target("TransformersForCausalLM", "llama"), ["vllm==0.17.1"], TRAINED,
                 platform="cuda").verdicts  # fmt: skip
    assert v.status == "fails" and v.served.stage == "load" and "requires transformers>=5" in v.served.failure
    assert v.fix is not None and "no config value helps" in v.fix.reason


def test_a_mistral_target_before_0_22_is_refused_by_the_gate_the_release_ran(drafter):
    """vLLM's eagle3 model_type gate refuses a Mistral target before 0.22.0: the table said so from reading
    SpeculativeConfig; the draft-settings records run the gate (tests/test_draft_settings_records.py) and the
    capture records take its answer, so the verdict rests on the release's code, executed, and says which."""
    target = TargetInfo("MistralForCausalLM", "MistralForCausalLM", "mistral", "mistral", 32, 4096, 32768,
                        source="test")  # fmt: skip
    (v,) = check(drafter, target, ["vllm==0.20.2"], TRAINED, platform="cuda").verdicts
    assert v.status == "fails" and v.evidence["level"] == "model-code"
    assert "eagle3 model_type gate, run by draft-settings/vllm-0.20.2.json" in v.evidence["basis"]
    (v,) = check(drafter, target, ["vllm==0.22.0"], TRAINED, platform="cuda").verdicts
    assert v.status == "ok" and "gate" not in v.evidence["basis"]
    # Mistral-3 before vLLM had a Mistral file of its own (0.15): the record builds its text model as that release's
    # registry serves it (llama.py) and runs the request, which the V1 runner refuses ("Model does not support
    # EAGLE3 interface"), as the gate before it does
    wrapper = TargetInfo("Mistral3ForConditionalGeneration", "Mistral3ForConditionalGeneration", "mistral3",
                         "mistral3", 32, 4096, 32768, source="test")  # fmt: skip
    (v,) = check(drafter, wrapper, ["vllm==0.14.0"], TRAINED, platform="cuda").verdicts
    assert v.status == "fails" and v.evidence["level"] == "model-code", v.evidence
    assert "vllm-0.14.0-model-code.json" in v.evidence["basis"]


def test_glm5_is_served_by_the_deepseek_rows_its_decoder_is(drafter):
    """SGLang serves GLM-5 (GlmMoeDsaForCausalLM) with DeepSeek-V2's decoder and its DSA top-k sharing, whose
    forward asks the forward context for the attention backend (0.5.14+) and whose launch asks the GPU's compute
    capability: the records publish both as the engine does and run it at every release that lists it. It captures
    as the DeepSeek rows say, the +1 offset dropped from 0.5.13 as theirs is, so `check` serves it by them."""
    for release, row in (("0.5.16", "sglang-deepseek-0.5.14-0.5.16"), ("0.5.23", "sglang-deepseek-0.5.17+")):
        run = generic_run("sglang", release, "GlmMoeDsaForCausalLM", None)
        assert run is not None and not run.holds and row in run.fits, release
        v = _on_gpu(drafter, "GlmMoeDsaForCausalLM", f"sglang=={release}")
        assert v.status == "ok" and v.row_key == row and v.evidence["level"] == "model-code", release
    assert generic_run("sglang", "0.5.11", "GlmMoeDsaForCausalLM", None).holds  # +1, as the generic rows


def test_ling_and_gemma4_run_with_the_config_their_release_loads():
    """Ling (Bailing) checkpoints bring their config class as remote code, of which SGLang ships a copy from 0.5.21:
    the records load it from there, so the real layers (0.5.21+) find the keys Ling's code reads (`embedding_dropout`
    was missing from the Llama config used before). Gemma-4's transformers config states head_dim per layer at
    5.19.0, which SGLang before 0.5.22 cannot load: its cases run under the transformers each release pins."""
    recs = {r["engine"]: r for r in records("model-code") if r["engine"].startswith("sglang==")}
    for release in ("0.5.21", "0.5.22", "0.5.23"):
        rec = recs[f"sglang=={release}"]
        for arch in ("BailingMoeV2ForCausalLM", "SarvamMoEForCausalLM"):
            (fam,) = [f for f in rec["families"] if f["architecture"] == arch]
            assert fam["claims"] == fam["cases"] == 31 and fam.get("layers") == "real", (release, arch)
    assert generic_run("sglang", "0.5.23", "BailingMoeV2ForCausalLM", None).holds
    for release, pin in (("0.5.12", "5.6.0"), ("0.5.16", "5.12.1"), ("0.5.23", "5.19.0")):
        rec = recs[f"sglang=={release}"]
        (fam,) = [f for f in rec["families"] if f["architecture"] == "Gemma4ForConditionalGeneration"]
        assert fam["claims"] == 31, release
        assert rec["provenance"]["transformers_pinned"] == pin, release  # the release's pin, not the venv's


@pytest.mark.parametrize(
    "arch, first",
    [
        ("NemotronHForCausalLM", "0.22.0"),  # its final norm is `norm_f`
        ("MuseGlimmerForCausalLM", "0.28.0"),  # a norm on the embeddings, `embed_norm`
        ("InternS2MobiusForConditionalGeneration", "0.28.0"),  # a module list its loop hands every layer
        (
            "SarvamMLAForCausalLM",
            "0.30.0",
        ),  # a dropout on the embeddings, built from a key Llama's config lacks
    ],
)
def test_decoders_with_parts_of_their_own_around_the_loop_are_decided(drafter, arch, first):
    """vLLM decoders whose loop reads parts the stand-ins did not give (a norm under a name of its own, a module list
    handed to every layer, a dropout) run at every release that serves them and capture as the generic capture,
    on both runners: `check` decides from the record."""
    from packaging.version import Version

    for runner in ("v1", "mrv2"):
        run = generic_run("vllm", first, arch, runner)
        assert run is not None and run.holds and run.claims == 31, (first, runner)
    recs = [r for r in records("model-code") if r["engine"].startswith("vllm==")
            and Version(r["engine"].split("==")[1]) >= Version(first)]  # fmt: skip
    # but for the runner a release does not have (V1 from 0.34.0)
    absent = "no V1 runner in this release"
    assert all(
        not any(f"({arch})" in k and not v.endswith(absent) for k, v in r["not_run"].items()) for r in recs
    )
    v = _on_gpu(drafter, arch, "vllm==0.33.0")
    assert v.status == "ok" and v.evidence["level"] == "model-code" and not v.unknowns


def test_qwen3_5_checkpoints_are_refused_where_the_wrapper_reaches_a_decoder_without_the_eagle_interface(
    drafter,
):
    """vLLM added EAGLE-3 to Qwen3.5's causal LM (vllm PR #36658), but at 0.18.0-0.19.0 a Qwen3.5 checkpoint, published
    as `Qwen3_5ForConditionalGeneration`, gets the multimodal wrapper's setter, which asserts that the decoder it
    reaches is an `EagleModelMixin`; Qwen3-Next's decoder, which Qwen3.5's extends, is not yet one. The records run
    that request: every case ends in the engine's own assertion, so `check` fails it at load, with no config value
    to set; from 0.20.0 the capture holds."""
    arch = "Qwen3_5ForConditionalGeneration"
    for release in ("0.18.0", "0.19.1"):
        run = generic_run("vllm", release, arch, "v1")
        assert run is not None and run.refused_at_load, release
        assert "must inherit from EagleModelMixin" in run.refused, release
        # Qwen3.5's own model type, which vLLM's eagle3 gate before 0.22.0 lets through ("qwen" in it)
        (v,) = check(
            drafter, _target(arch, "qwen3_5"), [f"vllm=={release}"], TRAINED, platform="cuda"
        ).verdicts
        assert v.status == "fails" and v.served.stage == "load" and "EagleModelMixin" in v.served.failure, (
            release
        )
        assert v.fix is not None and "no config value helps" in v.fix.reason
    (v,) = check(drafter, _target(arch, "qwen3_5"), ["vllm==0.20.0"], TRAINED, platform="cuda").verdicts
    assert v.status == "ok"


@pytest.mark.parametrize(
    "arch, first, last",
    [
        ("PixtralForConditionalGeneration", "0.19.0", "0.33.0"),  # Mistral-format: MistralForCausalLM
        ("LightOnOCRForConditionalGeneration", "0.16.0", "0.33.0"),  # transformers' `LightOnOcr`: Qwen3
        ("MantisForConditionalGeneration", "0.15.0", "0.24.0"),  # a Llava, whose text model is Llama
        ("HunYuanVLForConditionalGeneration", "0.16.0", "0.28.0"),  # the first text model its code names
        ("MuseSparkForConditionalGeneration", "0.33.0", "0.33.0"),  # `return self.model_cls(...)`
        ("BeamForCausalLM", "0.33.0", "0.33.0"),  # a loop that reads the next layer's norm
        ("Plamo3ForCausalLM", "0.29.0", "0.33.0"),  # a layer loop that is a module of its own
    ],
)
def test_vllm_wrappers_whose_decoder_the_release_names_indirectly_are_decided(drafter, arch, first, last):
    """vLLM targets whose decoder the probe finds only the way the release builds it (a multimodal wrapper whose text
    model comes from the checkpoint's text_config, a decoder class named by a class attribute, a loop that reads a
    part of the next layer, a loop that is a module of its own) run at the first and last release that serve them,
    on every runner, and capture as the generic capture: `check` decides from the record."""
    from packaging.version import Version

    for release in (first, last):  # Model Runner V2 from 0.17.0
        for runner in ("v1", "mrv2") if Version(release) >= Version("0.17.0") else ("v1",):
            run = generic_run("vllm", release, arch, runner)
            assert run is not None and run.holds and run.claims == 31, (release, runner)
    v = _on_gpu(drafter, arch, f"vllm=={last}")
    assert v.status == "ok" and v.evidence["level"] == "model-code" and not v.unknowns


@pytest.mark.parametrize(
    "arch, release",
    [
        ("InternS2MobiusForConditionalGeneration", "0.5.22"),  # its per-layer schedule, `layer_types`
        ("Glm5NextForConditionalGeneration", "0.5.22"),  # a wrapper keeping its text config as its own
        ("MiniMaxM3SparseForCausalLM", "0.5.22"),  # the attention class its layer class names
        ("ExaoneMoEForCausalLM", "0.5.23"),  # launched with a GPU attention backend; `is_moe_layer` per layer
    ],
)
def test_sglang_real_layers_built_as_their_release_builds_them_are_decided(drafter, arch, release):
    """SGLang decoders that capture inside their layers (0.5.22+) run with their real layers once the probe builds
    them as the release does: the config keys their checkpoints carry, the config the wrapper keeps, the block
    classes a layer class names; a stand-in part's output also unpacks as a projection's (output, bias). Each
    captures as the generic capture in every case it claims: `check` decides from the record."""
    run = generic_run("sglang", release, arch, None)
    assert run is not None and run.holds and run.claims >= 27, run
    rec = next(r for r in records("model-code") if r["engine"] == f"sglang=={release}")
    (fam,) = [f for f in rec["families"] if f["architecture"] == arch]
    assert fam.get("layers") == "real"
    v = _on_gpu(drafter, arch, f"sglang=={release}")
    assert v.status == "ok" and v.evidence["level"] == "model-code" and not v.unknowns


def test_a_target_its_release_cannot_build_fails_at_load_whatever_the_ids(drafter):
    """From 0.5.13 SGLang's Qwen2-MoE loop hands every decoder layer `start_layer`, which Intern-S1-Pro's layer class
    does not take: no launch of those releases can build the model, whatever the drafter. The probe builds every target's real
    decoder once (stand-in blocks) beside the stand-in loop, so the record says so in every case, and `check` fails
    the target at load with no config value to set, where it once said the capture held as Qwen's rows."""
    arch = "InternS1ProForConditionalGeneration"
    run = generic_run("sglang", "0.5.12", arch, None)  # before the loop handed its layers `start_layer`
    assert run is not None and not run.refused and "sglang-qwen3-moe-0.5.11+" in run.fits
    for release in ("0.5.13", "0.5.20", "0.5.23"):
        run = generic_run("sglang", release, arch, None)
        assert run is not None and run.refused_building and run.refused_at_load, release
        assert "unexpected keyword argument 'start_layer'" in run.refused, release
        v = _on_gpu(drafter, arch, f"sglang=={release}")
        assert v.status == "fails" and v.served.stage == "load" and "building the target" in v.served.failure
        assert v.fix is not None and "no config value helps" in v.fix.reason


def test_mistral_large_3_is_served_by_the_deepseek_rows_of_its_release(drafter):
    """SGLang's MistralLarge3ForCausalLM is a DeepseekV3ForCausalLM, and its config code reads DeepSeek-V3's MLA keys:
    given that config (the model type of the listed class it extends), its real layers run from 0.5.14, where the
    launch on a Llama config was refused, and capture as the DeepSeek rows of each release say."""
    for release, row in (("0.5.14", "sglang-deepseek-0.5.14-0.5.16"), ("0.5.23", "sglang-deepseek-0.5.17+")):
        run = generic_run("sglang", release, "MistralLarge3ForCausalLM", None)
        assert run is not None and not run.holds and row in run.fits, release
        v = _on_gpu(drafter, "MistralLarge3ForCausalLM", f"sglang=={release}")
        assert v.status == "ok" and v.row_key == row and v.evidence["level"] == "model-code", release


@pytest.mark.parametrize(
    "spec,row,level",
    [
        ("sglang==0.4.6", "sglang-llama-<0.4.9", "model-code"),
        ("vllm==0.10.1", "vllm-llama-v1-0.8.5-0.11.1", "model-code"),
    ],
)
def test_a_class_its_family_rows_do_not_name_is_served_by_the_rows_its_run_fits(drafter, spec, row, level):
    """Llama-4's text-only class (Llama4ForCausalLM) inherits LlamaForCausalLM's capture request and LlamaModel's
    loop at SGLang 0.4.5-0.4.8 and vLLM 0.10.1-0.11.0, where the llama4 rows (Llama4ForConditionalGeneration, no
    EAGLE-3 interface) refuse. The records run it as a class its family's rows do not name (`assumed`): every case
    is what the llama row says, and `check` serves it by that row, resting on the record, where it said
    `unverified` before (on SGLang's CPU: before 0.5.11 its CUDA graphs replay the default ids, read)."""
    engine, release = spec.split("==")
    run = generic_run(engine, release, "Llama4ForCausalLM", "v1" if engine == "vllm" else None)
    assert run is not None and run.agree == 0 < run.claims and row in run.fits
    target = TargetInfo("Llama4ForCausalLM", "Llama4ForCausalLM", "llama4_text", "llama4", 32, 4096, 128256,
                        source="test")  # fmt: skip
    (v,) = check(
        drafter,
        target,
        [spec],
        TRAINED,
        platform="cpu" if engine == "sglang" else "cuda",
        runner="v1" if engine == "vllm" else None,
    ).verdicts
    assert v.row_key == row and not [u for u in v.unknowns if "not in eaglewire's table" in u], v.unknowns
    assert f"as row {row} says" in v.evidence["basis"]
    if (
        v.status == "fails"
    ):  # vLLM 0.10.1 refuses the drafter's architecture: that decides, seen by a running engine
        assert v.evidence["decided_by"] == "architecture-routing" and v.evidence["level"] == "engine"
    else:
        assert v.evidence["level"] == level


@pytest.mark.parametrize(
    ("release", "arch", "words", "pin"),
    [(r, "Gemma4ForCausalLM", "AmbiguousGlobalPerLayerAttributeError", "5.19.0") for r in ("0.5.22", "0.5.23")]
    + [(r, "Gemma4UnifiedForConditionalGeneration", "model type `gemma4_unified`", "5.8.1")
       for r in ("0.5.13", "0.5.13.post1", "0.5.14")],
)  # fmt: skip
def test_a_target_its_release_cannot_load_the_config_of_fails_at_load(drafter, release, arch, words, pin):
    """The record runs the release's own config loader under the transformers it pins and keeps transformers'
    refusal as the engine's (raised in get_config): `fails` at load whatever the ids, where no record could run the
    target before.
    - SGLang 0.5.22-0.5.23 (5.19.0): Gemma-4's text config (gemma4_text, the text-only class) keeps head_dim per
      layer; get_config flattens only the multimodal Gemma-4 types, so its copy of the text keys reads `head_dim`.
    - SGLang 0.5.13-0.5.14 (5.8.1) ship Gemma-4-Unified's model code, but their pin does not know its checkpoints'
      model type `gemma4_unified` (5.19 does): the record writes the type the newest transformers names, where the
      probe used to build a Llama config and fail itself. 0.5.15 runs it."""
    run = generic_run("sglang", release, arch, None)
    assert run is not None and run.refused_loading and run.refused_at_load and not run.refused_building
    assert words in run.refused and "get_config" in run.refused
    rec = next(r for r in records("model-code") if r["engine"] == f"sglang=={release}")
    assert rec["provenance"]["transformers_pinned"] == pin
    v = _on_gpu(drafter, arch, f"sglang=={release}")
    assert v.status == "fails" and "loading the target's config.json" in v.served.failure
    # the engine's words on one line, transformers' paragraph of advice cut at a sentence; where it was raised kept
    assert (
        words in v.served.failure and "\n" not in v.served.failure and "pip install" not in v.served.failure
    )
    assert "(raised in " in v.served.failure
    assert v.served.stage == "load" and v.fix is not None and v.fix.key is None
    assert v.evidence["level"] == "model-code"


def test_a_newer_release_loads_gemma4_unified():
    later = generic_run("sglang", "0.5.15", "Gemma4UnifiedForConditionalGeneration", None)
    assert later is not None and later.forward_ran and not later.refused


@pytest.mark.parametrize("release", ["0.24.0", "0.25.0", "0.25.1", "0.26.0"])
def test_a_model_whose_imports_name_a_compiled_op_runs(drafter, release):
    """vLLM 0.24-0.26's MiniMax-M3 imports the fused all-reduce norm, whose matcher file names
    `torch.ops._C.rotary_embedding.default` at module level: the CUDA build's op library does not load here, so the
    records could not import it. With a stand-in for such names (raising if called) the release's loop runs, and
    it captures as the generic capture says on both runners: decided from the record."""
    for arch in ("MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration"):
        for runner in ("v1", "mrv2"):
            run = generic_run("vllm", release, arch, runner)
            assert run is not None and run.holds and run.claims == 31, (arch, runner)
    v = _on_gpu(drafter, "MiniMaxM3SparseForCausalLM", f"vllm=={release}")
    assert v.status == "ok" and not v.unknowns and v.evidence["level"] == "model-code"


def test_a_wrapper_whose_text_model_lacks_the_eagle_loop_fails_at_load(drafter):
    """vLLM 0.20-0.21 serve EXAONE-4.5 (a Qwen2.5-VL wrapper declaring SupportsEagle3) over Exaone4ForCausalLM, whose
    Exaone4Model has no EagleModelMixin: the runner's capture request asserts as the target loads, whatever the ids
    (the records ran it once the probe stood in for an image processor transformers 5.19 no longer exports). A
    checkpoint of EXAONE-4.5's own model type meets the eagle3 gate before that."""
    for release in ("0.20.0", "0.20.1", "0.20.2", "0.21.0"):
        run = generic_run("vllm", release, "Exaone4_5_ForConditionalGeneration", "v1")
        assert run is not None and run.refused_at_load and "must inherit from EagleModelMixin" in run.refused
    # a model type the release's eagle3 gate lets through (EXAONE-4.5's own, `exaone4_5`, it refuses first)
    (v,) = check(drafter, _target("Exaone4_5_ForConditionalGeneration", "qwen_like"), ["vllm==0.21.0"], TRAINED,
                 platform="cuda").verdicts  # fmt: skip
    assert v.status == "fails" and "its capture request, as the target loads" in v.served.failure
    assert v.served.stage == "load" and v.fix is not None and v.fix.key is None


def test_multimodal_models_of_the_transformers_backend_run_where_the_registry_names_them(drafter):
    """vLLM serves Emu3 with its Transformers modeling backend's multimodal class: the records build the whole
    transformers model (towers tiny) and run the release's request and forward on text tokens. At 0.33.0 its capture
    is what the DeepSeek rows say (id 0 asks the backend for `_layer_names[-1]`: KeyError at load), so `check`
    decides. The backend's generic multimodal classes are not run (no checkpoint names them, and what they capture
    depends on the checkpoint's wrapper). HunYuan-VL runs with the M-RoPE sections its checkpoints carry (without
    them transformers' own rotary embedding fails, a forward the probe could not run): its wrapper records none of
    the states the release asks for, so it captures nothing, as VibeVoice-ASR's. A forward that never ran is not
    counted: SGLang 0.5.23's Qwen4-Exp, whose only claims are the request's failures, is `no forward ran`."""
    for runner in ("v1", "mrv2"):
        run = generic_run("vllm", "0.33.0", "Emu3ForConditionalGeneration", runner)
        assert run is not None and run.forward_ran and f"vllm-deepseek-{runner}-0.33" in run.fits, runner
    v = _on_gpu(drafter, "Emu3ForConditionalGeneration", "vllm==0.33.0")
    assert v.status == "ok" and not v.unknowns and v.evidence["level"] == "model-code"
    rec = next(r for r in records("model-code") if r["engine"] == "vllm==0.33.0")
    said = rec["not_run"]["generic (TransformersMultiModalForCausalLM) v1"]
    assert "depends on the checkpoint's transformers wrapper" in said
    for release in ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):  # the backend's (native before)
        for runner in ("v1", "mrv2"):
            hunyuan = generic_run("vllm", release, "HunYuanVLForConditionalGeneration", runner)
            assert hunyuan is not None and hunyuan.forward_ran and hunyuan.captures_nothing, (release, runner)
    v = _on_gpu(drafter, "HunYuanVLForConditionalGeneration", "vllm==0.33.0")
    assert v.status == "fails" and v.fix is not None and v.fix.key is None
    qwen4 = generic_run("sglang", "0.5.23", "Qwen4ExpForConditionalGeneration", None)
    assert qwen4 is not None and not qwen4.forward_ran and not qwen4.fits and not qwen4.edges_only
    v = _on_gpu(drafter, "Qwen4ExpForConditionalGeneration", "sglang==0.5.23")
    assert v.status == "unverified" and any("no forward ran" in u for u in v.unknowns)
