"""The first promise: never a wrong `ok`. A drafter whose training taps are not recorded (no provenance, no trainer
record, any ids or none, anywhere) is `ok` only when it is `ok` under every candidate for what is not recorded:
every trainer that writes the key its ids are in (or, with no ids, every trainer that writes the format), each at
every version read. Such an `ok` names its assumptions, and `--strict` never calls it `ok`. No verdict built on a
version nobody read or an architecture not in the table is `ok`."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eaglewire.engines import models, table
from eaglewire.engines.models import MODEL_FILES, REGISTRY_CAPTURE
from eaglewire.jobs.check import check
from eaglewire.jobs.coverage import generic_run
from eaglewire.rules import taps as conv
from eaglewire.rules.taps import NESTED, Rule
from eaglewire.targets import FAMILIES

# rows reached through a family (the registry-only rows for unlisted architectures: tests/test_engine_registries.py)
SERVE = [
    r
    for r in table.ROWS
    if r.role == "serve" and not any(r.covers_model(m) for m in REGISTRY_CAPTURE.values())
]


def families_for(row) -> list[str]:
    files = MODEL_FILES.get(row.framework, {})
    out = [f for f, model in files.items() if row.covers_model(model)]
    return out or ["llama"]


def version_in(row) -> str:
    read = [v for v in row.checked if conv._is_version(v)]
    return read[-1] if read else table.NEWEST.get(row.framework, "1.0.0")


def target_config(family: str, layers: int) -> dict:
    fam = FAMILIES[family]
    arch = sorted(fam.architectures)[0] if fam.architectures else "DeepseekV3ForCausalLM"
    model_type = sorted(fam.model_types)[0]
    text = {"model_type": model_type, "num_hidden_layers": layers, "hidden_size": 64, "vocab_size": 300}
    if fam.wrapper:
        return {"architectures": [arch], "model_type": model_type, "text_config": text}
    return {"architectures": [arch], **text}


MODELOPT_KEYS = {
    "use_input_layernorm_in_first_layer": True,
    "use_last_layernorm": True,
    "next_layer_regular": True,
}


def drafter_config(ids, where: str, modelopt: bool = False) -> dict:
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 300, "draft_vocab_size": 120}  # fmt: skip
    if modelopt:  # modelopt's export template: its keys under eagle_config
        cfg["eagle_config"] = dict(MODELOPT_KEYS)
    if ids is not None and where in ("nested", "both"):
        cfg.setdefault("eagle_config", {})["eagle_aux_hidden_state_layer_ids"] = ids
    if ids is not None and where in ("top", "both"):
        cfg["eagle_aux_hidden_state_layer_ids"] = ids
    return cfg


def candidate_taps(cfg: dict, family: str, layers: int, modelopt: bool) -> list[set[int]]:
    """What each trainer that could have written this config would have trained on. The rule, from the trainers' own
    records (docs/versions.md 4.8): ids in eagle_config are written by SpecForge and modelopt (a modelopt export:
    modelopt alone); with no ids, by every trainer of the format, EAGLE's hard-coded taps included. Where none of
    them can have captured the ids and one of them is L, only HF-index numbering reaches it (sglang PR #32334)."""
    nested = conv.get_path(cfg, NESTED.path)
    top = conv.get_path(cfg, "eagle_aux_hidden_state_layer_ids")
    if (
        top and not nested
    ):  # vLLM's key: its writer numbered the ids as HF indices, or lifted +1 numbering there
        readings = [set(top), {v + 1 for v in top}]
        return [r for r in readings if len(r) == len(top) and min(r) >= 0 and max(r) <= layers]
    writers = ["modelopt"] if modelopt else ["specforge", "modelopt"] if nested else [
        "specforge", "modelopt", "eagle", "angelslim", "automodel"]  # fmt: skip
    out = []
    for r in table.ROWS:
        if r.role != "train" or r.framework not in writers or r.rule is Rule.UNSUPPORTED:
            continue
        if nested and r.rule is Rule.FIXED:
            continue  # never reads ids: did not write these
        if not r.covers_model(models.model_file(r.framework, family)[0]):
            continue
        res = conv.resolve(r, cfg, layers)
        if res.taps is not None:
            out.append({t.index for t in res.taps.taps})
    if not out and nested and max(nested) == layers and len(set(nested)) == len(nested) and min(nested) >= 0:
        out.append(set(nested))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    row=st.sampled_from(SERVE),
    layers=st.integers(6, 96),
    data=st.data(),
)
def test_an_ok_on_unrecorded_taps_is_ok_under_every_candidate(tmp_path_factory, row, layers, data):
    family = data.draw(st.sampled_from(families_for(row)))
    where = data.draw(st.sampled_from(["nested", "top", "both", "none"]))
    modelopt = data.draw(st.booleans()) and where != "top"
    ids = None
    if where != "none":  # any list, or a trainer's default (where trainers and engines most often agree)
        defaults = st.sampled_from([[1, layers // 2 - 1, layers - 4], [2, layers // 2, layers - 3]])
        ids = data.draw(st.one_of(st.lists(st.integers(-1, layers), min_size=1, max_size=4), defaults))
    cfg = drafter_config(ids, where, modelopt)
    tmp = tmp_path_factory.mktemp("honest")
    (tmp / "t").mkdir()
    (tmp / "t" / "config.json").write_text(json.dumps(target_config(family, layers)))
    (tmp / "d").mkdir()
    (tmp / "d" / "config.json").write_text(json.dumps(cfg))
    engine = [f"{row.framework}=={version_in(row)}"]
    rep = check(tmp / "d", tmp / "t", engine, runner=row.runner, platform=row.platform)
    # or a class its family's rows do not name, served by the rows its model-code run fits (Llama4ForCausalLM,
    # Llama's capture, where the llama4 rows refuse: tests/test_generic_targets.py)
    run = generic_run(row.framework, version_in(row), rep.target.architecture, row.runner or None)
    assert [v.row_key for v in rep.verdicts] == [row.key] or (
        run is not None and rep.verdicts[0].row_key in run.fits
    )
    (v,) = rep.verdicts
    if v.status == "ok":
        served = {t.index for t in v.served.taps.taps}
        candidates = candidate_taps(cfg, rep.target.family, layers, modelopt)
        assert candidates, (v.engine, cfg)  # an ok needs a candidate
        assert all(c == served for c in candidates), (v.engine, served, candidates, cfg)
        assert not (modelopt and not ids), "an id-less modelopt export is a known exception: never ok"
        assert v.assumptions and rep.assumptions  # what it rests on is said
        strict = check(tmp / "d", tmp / "t", engine, runner=row.runner, platform=row.platform, strict=True)
        assert strict.verdicts[0].status == "unverified" and strict.unknowns
    if v.status == "unverified":
        assert v.unknowns  # and names what settles it
    assert rep.verdict != "ok" or not rep.has_problem


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    version=st.sampled_from(["0.5.24", "0.6.0", "0.35.0", "1.0.0"]),
    engine=st.sampled_from(["sglang", "vllm"]),
)
def test_versions_nobody_read_are_never_ok(tmp_path_factory, version, engine):
    tmp = tmp_path_factory.mktemp("newer")
    (tmp / "t").mkdir()
    (tmp / "t" / "config.json").write_text(json.dumps(target_config("llama", 32)))
    (tmp / "d").mkdir()
    (tmp / "d" / "config.json").write_text(json.dumps(drafter_config([1, 15, 28], "both")))
    from eaglewire.taps import Wiring

    rep = check(tmp / "d", tmp / "t", [f"{engine}=={version}"], trained_on=Wiring.parse("h2,h16,h29"))
    assert all(v.status in ("unverified", "fails", "mismatch") for v in rep.verdicts)
    assert any("not read at source" in u or "nearest" in u for u in rep.unknowns)


def test_an_architecture_not_in_the_table_is_unverified(tmp_path):
    """Served by SGLang's own registry (its MindSpore bridge, a model file of its own whose decoder comes from
    MindSpore's model package, not torch) with capture code the table does not list, which the release's model-code
    record could not run: unverified. One the record ran, and whose capture held in every case (InternLM3, a
    llama.py class): decided. Not in the registry at all: SGLang refuses it, a
    decided `fails` (engines/<engine>/data/registry.json)."""
    from eaglewire.taps import Wiring

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text(json.dumps(drafter_config([1, 15, 28], "both")))
    cases = (("MindSporeForCausalLM", "unverified"), ("InternLM3ForCausalLM", "ok"),
             ("SomeNewForCausalLM", "problem"))  # fmt: skip
    for arch, verdict in cases:
        (tmp_path / arch).mkdir()
        (tmp_path / arch / "config.json").write_text(json.dumps(
            {"architectures": [arch], "model_type": "some_new", "num_hidden_layers": 32, "hidden_size": 64,
             "vocab_size": 300}))  # fmt: skip
        rep = check(
            tmp_path / "d", tmp_path / arch, ["sglang==0.5.23"], trained_on=Wiring.parse("h2,h16,h29")
        )
        assert rep.target.family == "generic" and rep.verdict == verdict, arch
    assert "SGLang 0.5.23 does not serve SomeNewForCausalLM" in rep.verdicts[0].served.failure
    rep = check(
        tmp_path / "d",
        tmp_path / "MindSporeForCausalLM",
        ["sglang==0.5.23"],
        Wiring.parse("h2,h16,h29"),
    )
    assert any("not in eaglewire's table" in u and "capture code of its own" in u for u in rep.unknowns)
    rep = check(
        tmp_path / "d", tmp_path / "InternLM3ForCausalLM", ["sglang==0.5.23"], Wiring.parse("h2,h16,h29")
    )
    assert rep.verdicts[0].evidence["level"] == "model-code" and not rep.unknowns
