"""Formats: detection, round trips (read, write, read), conversion keeping the taps, peers reading our output."""

import json

import pytest
import torch
from safetensors.torch import save_file

from eaglewire.drafter import Eagle3Drafter
from eaglewire.errors import InputError
from eaglewire.formats import read_drafter, write_drafter
from eaglewire.formats.convert import convert
from eaglewire.formats.trained import trained_taps
from eaglewire.targets import read_target

from fixtures import eagle_drafter, modelopt_drafter, target_config
from peers import speculators_drafter


def same_tensors(a, b, skip=()):
    assert set(a) - set(skip) == set(b) - set(skip)
    for k in a:
        if k not in skip:
            assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k


def test_detect(tmp_path):
    assert read_drafter(eagle_drafter(tmp_path / "e", [1, 5, 8])).format == "eagle"
    speculators_drafter(tmp_path / "s")
    assert read_drafter(tmp_path / "s").format == "speculators"
    assert read_drafter(modelopt_drafter(tmp_path / "m", [1, 5, 8])).format == "modelopt"


@pytest.mark.parametrize("fmt", ["eagle", "speculators", "modelopt"])
def test_round_trip_preserves_every_tensor_and_config_value(tmp_path, fmt):
    if fmt == "eagle":
        src = eagle_drafter(
            tmp_path / "src", [1, 5, 8], extra_config={"norm_output": True, "custom_key": {"a": 1}}
        )
    elif fmt == "speculators":
        speculators_drafter(tmp_path / "src", layers=2, draft_vocab=120, norm_before_residual=True)
        src = tmp_path / "src"
    else:
        src = modelopt_drafter(tmp_path / "src", [1, 5, 8])
    a = read_drafter(src)
    write_drafter(a, tmp_path / "out", a.format, None, config=a.config)
    b = read_drafter(tmp_path / "out")
    assert b.format == a.format and b.config == a.config and b.arch == a.arch
    same_tensors(a.tensors, b.tensors)
    # on-disk names are preserved too (midlayer.* stays midlayer.*)
    from safetensors import safe_open

    def names(d):
        with safe_open(str(d / "model.safetensors"), "pt") as f:
            return set(f.keys())

    assert names(tmp_path / "out") == (names(src) - {"verifier_lm_head.weight", "verifier_norm.weight"})


def test_dual_config_folder_is_read_whole(tmp_path):
    d = eagle_drafter(tmp_path / "d", None)
    speculators_drafter(tmp_path / "s", ids=[0, 3, 7])
    (d / "config_speculators.json").write_text((tmp_path / "s" / "config.json").read_text())
    ckpt = read_drafter(d)
    assert set(ckpt.configs) == {"config.json", "config_speculators.json"}
    t = read_target(target_config(tmp_path / "t", layers=12))
    tr = trained_taps(ckpt, t)
    assert str(tr.wiring) == "h0,h3,h7" and "config_speculators.json" in tr.basis


def test_sharded_and_bin(tmp_path):
    src = eagle_drafter(tmp_path / "e", [1, 5, 8])
    ref = read_drafter(src)
    from safetensors.torch import load_file

    tensors = load_file(str(src / "model.safetensors"))
    keys = sorted(tensors)
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    (sharded / "config.json").write_text((src / "config.json").read_text())
    half = len(keys) // 2
    save_file({k: tensors[k] for k in keys[:half]}, str(sharded / "model-00001-of-00002.safetensors"))
    save_file({k: tensors[k] for k in keys[half:]}, str(sharded / "model-00002-of-00002.safetensors"))
    index = {
        "weight_map": {
            k: f"model-0000{1 if i < half else 2}-of-00002.safetensors" for i, k in enumerate(keys)
        }
    }
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    same_tensors(ref.tensors, read_drafter(sharded).tensors)
    legacy = tmp_path / "bin"
    legacy.mkdir()
    (legacy / "config.json").write_text((src / "config.json").read_text())
    torch.save(tensors, legacy / "pytorch_model.bin")
    same_tensors(ref.tensors, read_drafter(legacy).tensors)


@pytest.mark.parametrize("family", ["llama", "deepseek_v3"])
@pytest.mark.parametrize("taps", ["h1,h6,h9", "h2,h6,h9", "h3,h7,h11"])
@pytest.mark.parametrize(
    "pair",
    [
        ("eagle", "speculators"),
        ("speculators", "eagle"),
        ("eagle", "modelopt"),
        ("modelopt", "speculators"),
        ("speculators", "modelopt"),
    ],
)
def test_convert_a_b_a_keeps_taps(tmp_path, family, taps, pair):
    from eaglewire.taps import Wiring

    target = target_config(tmp_path / "t", family, layers=12)
    src = eagle_drafter(tmp_path / "e", [1, 5, 8])
    first = tmp_path / "a"
    convert(src, first, pair[0], target, trained_on=Wiring.parse(taps))
    convert(first, tmp_path / "b", pair[1], target)
    convert(tmp_path / "b", tmp_path / "a2", pair[0], target)
    tinfo = read_target(target)
    for d in ("a", "b", "a2"):
        ck = read_drafter(tmp_path / d)
        assert str(trained_taps(ck, tinfo).wiring) == taps, d
        # and the ids in each file, read with that format's own convention, say the same (not just provenance)
        ck.provenance = None
        ck.configs = {"config.json": ck.config}
        assert str(trained_taps(ck, tinfo).wiring) == taps, (
            d,
            ck.config.get("eagle_config"),
            ck.config.get("eagle_aux_hidden_state_layer_ids"),
        )
    a, a2 = read_drafter(first), read_drafter(tmp_path / "a2")
    skip = ("t2d", "embed_tokens.weight") if "modelopt" in pair else ()
    same_tensors(a.tensors, a2.tensors, skip=skip)
    assert a.config == a2.config or pair[0] == "speculators" or "modelopt" in pair


def test_convert_refuses_inexpressible_and_writes_nothing(tmp_path):
    from eaglewire.taps import Wiring

    target = target_config(tmp_path / "t", "llama", layers=12)
    src = eagle_drafter(tmp_path / "e", [-1, 2, 6])
    with pytest.raises(InputError, match="modelopt"):
        convert(src, tmp_path / "out", "modelopt", target)  # embeddings cannot be hooked by modelopt
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
    convert(src, tmp_path / "spec", "speculators", target)
    assert json.loads((tmp_path / "spec" / "config.json").read_text())[
        "eagle_aux_hidden_state_layer_ids"
    ] == [0, 3, 7]
    del Wiring


def test_eagle_output_serves_right_on_both_engines(tmp_path):
    """An EAGLE-format file written by convert carries SGLang's nested ids and vLLM's top-level ids."""
    from eaglewire.jobs.check import check

    target = target_config(tmp_path / "t", "llama", layers=12)
    speculators_drafter(tmp_path / "s", ids=[0, 3, 7], vocab=300, draft_vocab=120)
    convert(tmp_path / "s", tmp_path / "e", "eagle", target)
    cfg = json.loads((tmp_path / "e" / "config.json").read_text())
    assert cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [-1, 2, 6]
    assert cfg["eagle_aux_hidden_state_layer_ids"] == [0, 3, 7]
    rep = check(tmp_path / "e", target, ["sglang==0.5.23", "vllm==0.33.0"])
    assert [v.status for v in rep.verdicts] == ["ok", "ok"]
    assert [a.status for v in rep.verdicts for a in v.alternatives] == ["ok"]  # vLLM's other runner
    assert not rep.has_problem and not rep.assumptions


def test_peer_reads_our_speculators_output(tmp_path):
    """speculators' own config class validates what we write, and its model loads our weights."""
    from speculators.models.eagle3 import Eagle3DraftModel, Eagle3SpeculatorConfig

    target = target_config(tmp_path / "t", "llama", layers=12)
    src = eagle_drafter(tmp_path / "e", [1, 5, 8])
    convert(src, tmp_path / "s", "speculators", target)
    cfg = Eagle3SpeculatorConfig.from_pretrained(str(tmp_path / "s"))
    ours = read_drafter(tmp_path / "s")
    assert (
        cfg.eagle_aux_hidden_state_layer_ids == ours.config["eagle_aux_hidden_state_layer_ids"] == [2, 6, 9]
    )
    assert cfg.draft_vocab_size == 120 and cfg.transformer_layer_config.hidden_size == 64
    cfg.transformer_layer_config._attn_implementation = "eager"
    model = Eagle3DraftModel(cfg)
    missing, unexpected = model.load_state_dict(ours.tensors, strict=False)
    assert set(missing) == {"verifier_lm_head.weight", "verifier_norm.weight"} and not unexpected
    # and the forward passes agree
    aux, ids = torch.randn(1, 12, 192), torch.randint(0, 300, (1, 12))
    seen = []
    model.lm_head.register_forward_hook(lambda m, i, o: seen.append(o))
    with torch.no_grad():
        model.eval()(hidden_states=aux, input_ids=ids, document_ids=torch.zeros_like(ids), ttt_steps=1)
        mine = Eagle3Drafter.from_checkpoint(ours).unroll(aux, ids, 1, positions=1 + torch.arange(12)[None])
    assert (mine.logits[0] - seen[0]).abs().max() <= 1e-5


def test_eagle_config_round_trips_through_transformers(tmp_path):
    """Format A config.json loads as a transformers LlamaConfig (what SGLang and vLLM do first)."""
    from transformers import LlamaConfig

    target = target_config(tmp_path / "t", "llama", layers=12)
    speculators_drafter(tmp_path / "s", ids=[2, 6, 9])
    convert(tmp_path / "s", tmp_path / "e", "eagle", target)
    cfg = LlamaConfig.from_pretrained(str(tmp_path / "e"))
    assert cfg.hidden_size == 64 and cfg.draft_vocab_size == 300
    assert cfg.eagle_config["eagle_aux_hidden_state_layer_ids"] == [1, 5, 8]


@pytest.mark.parametrize("family", ["llama", "deepseek_v3"])
@pytest.mark.parametrize("to", ["eagle", "speculators", "modelopt"])
def test_a_converted_copy_passes_check_wherever_the_source_did(tmp_path, family, to):
    from eaglewire.jobs.check import check, convert_job
    from eaglewire.taps import Wiring

    target = target_config(tmp_path / "t", family, layers=12)
    src = eagle_drafter(tmp_path / "e", [1, 5, 8])
    taps = Wiring.parse("h2,h6,h9")
    res = convert_job(src, tmp_path / "out", to, target, taps)
    # SGLang reads no speculators format: the one place a copy cannot serve where its source did, and said so
    unservable = {"sglang==0.5.23"} if to == "speculators" else set()
    noted = [n for n in res.notes if "converted copy" in n]
    assert len(noted) == len(unservable) and all("speculators-format" in n for n in noted), res.notes
    engines = ["sglang==0.5.23", "vllm==0.33.0", "vllm==0.28.0"]
    before = {v.engine: v.status for v in check(src, target, engines, trained_on=taps).verdicts}
    after = {v.engine: v.status for v in check(tmp_path / "out", target, engines).verdicts}
    for engine, status in before.items():
        if status == "ok":
            assert after[engine] == ("fails" if engine in unservable else "ok"), (engine, after)
    if to == "modelopt":  # vLLM reads the top-level list: modelopt copies carry it too
        assert "eagle_aux_hidden_state_layer_ids" in json.loads(
            (tmp_path / "out" / "config.json").read_text()
        )


def test_a_default_first_n_vocabulary_map_is_reported(tmp_path):
    """A reduced draft vocabulary that is the first N target ids (t2d the first N, d2t all zeros) with nothing
    recording how it was built is what training code that fell back to a default map leaves (verl-SpeCo before
    PR #67, NeMo Automodel PR #2447): check and inspect report it. Counted maps, or a recorded basis, are not."""
    from eaglewire.formats.checkpoint import Provenance
    from eaglewire.formats.inspection import inspect_drafter
    from eaglewire.jobs.check import check

    target = target_config(tmp_path / "t", "llama", layers=12)
    ckpt = read_drafter(eagle_drafter(tmp_path / "src", [1, 5, 8]))
    first = torch.zeros(300, dtype=torch.bool)
    first[:120] = True
    ckpt.tensors["d2t"], ckpt.tensors["t2d"] = torch.zeros(120, dtype=torch.long), first
    write_drafter(ckpt, tmp_path / "default", "eagle", [1, 5, 8])
    write_drafter(ckpt, tmp_path / "modelopt", "modelopt", [1, 5, 8])  # d2t only: the map is all zeros
    ckpt.provenance = Provenance(draft_vocab={"size": 120, "built_from": "the first 120 ids, on purpose"})
    write_drafter(ckpt, tmp_path / "recorded", "eagle", [1, 5, 8])

    def codes(path):
        rep = check(path, target, ["sglang==0.5.23"], trained_on=None)
        ins = inspect_drafter(path, target)
        assert {f.code for f in ins.vocab.findings} == {f.code for f in rep.vocab.findings}
        return {f.code for f in rep.findings if f.code in {v.code for v in rep.vocab.findings}}, rep

    got, rep = codes(tmp_path / "default")
    assert got == {"default-vocab-map"} and rep.vocab.ok  # a warning: right if training used this map too
    message = next(f.message for f in rep.findings if f.code == "default-vocab-map")
    assert "first 120 target ids" in message and "PR #2447" in message and "eaglewire test" in message
    assert codes(tmp_path / "modelopt")[0] == {"all-zero-d2t"}
    assert "nothing in the checkpoint records" in next(
        f.message for f in codes(tmp_path / "modelopt")[1].findings if f.code == "all-zero-d2t"
    )
    assert codes(tmp_path / "recorded")[0] == set()
    assert codes(tmp_path / "src")[0] == set()  # a map built from counts


def test_a_converted_copy_carries_what_its_taps_assumed(tmp_path):
    """An id-less drafter with no trainer record is ok on the default taps under an assumption; its converted copy
    records those taps as known and carries the assumption, so the copy's verdict still says it (and --strict
    still refuses to call it ok)."""
    from eaglewire.jobs.check import check

    target = target_config(tmp_path / "t", "llama", layers=12)
    src = eagle_drafter(tmp_path / "e", None)
    before = check(src, target, ["vllm==0.33.0"])
    assert before.verdict == "ok" and before.trained.assumptions
    convert(src, tmp_path / "s", "speculators", target)
    after = check(tmp_path / "s", target, ["vllm==0.33.0"])
    assert str(after.trained.wiring) == "h2,h6,h9" and after.trained.basis.startswith("eaglewire provenance")
    assert after.verdict == "ok" and after.assumptions == before.assumptions
    assert check(tmp_path / "s", target, ["vllm==0.33.0"], strict=True).verdict == "unverified"
