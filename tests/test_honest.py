"""The first promise: `ok` only when every fact behind it is known. For every serving row of the convention table, a
drafter whose training taps are unknown (no provenance, no trainer record, any ids or none, anywhere) is never
`ok`; nor is any verdict built on a version nobody read or an architecture not in the table."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eaglewire import conventions as conv
from eaglewire.conventions.models import MODEL_FILES
from eaglewire.jobs.check import check
from eaglewire.targets import FAMILIES

SERVE = [r for r in conv.ROWS if r.role == "serve"]


def families_for(row) -> list[str]:
    table = MODEL_FILES.get(row.framework, {})
    out = [f for f, model in table.items() if row.covers_model(model)]
    return out or ["llama"]


def version_in(row) -> str:
    read = [v for v in row.checked if conv.model._is_version(v)]
    return read[-1] if read else conv.NEWEST.get(row.framework, "1.0.0")


def target_config(family: str, layers: int) -> dict:
    fam = FAMILIES[family]
    arch = sorted(fam.architectures)[0] if fam.architectures else "DeepseekV3ForCausalLM"
    model_type = sorted(fam.model_types)[0]
    text = {"model_type": model_type, "num_hidden_layers": layers, "hidden_size": 64, "vocab_size": 300}
    if fam.wrapper:
        return {"architectures": [arch], "model_type": model_type, "text_config": text}
    return {"architectures": [arch], **text}


def drafter_config(ids, where: str) -> dict:
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 300, "draft_vocab_size": 120}  # fmt: skip
    if ids is not None and where in ("nested", "both"):
        cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids}
    if ids is not None and where in ("top", "both"):
        cfg["eagle_aux_hidden_state_layer_ids"] = ids
    return cfg


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    row=st.sampled_from(SERVE),
    layers=st.integers(6, 96),
    data=st.data(),
)
def test_unknown_training_taps_are_never_ok(tmp_path_factory, row, layers, data):
    family = data.draw(st.sampled_from(families_for(row)))
    where = data.draw(st.sampled_from(["nested", "top", "both", "none"]))
    ids = None
    if where != "none":
        ids = data.draw(st.lists(st.integers(-1, layers), min_size=1, max_size=4))
    tmp = tmp_path_factory.mktemp("honest")
    (tmp / "t").mkdir()
    (tmp / "t" / "config.json").write_text(json.dumps(target_config(family, layers)))
    (tmp / "d").mkdir()
    (tmp / "d" / "config.json").write_text(json.dumps(drafter_config(ids, where)))
    rep = check(tmp / "d", tmp / "t", [f"{row.framework}=={version_in(row)}"])
    assert all(v.status != "ok" for v in rep.verdicts), [(v.engine, v.status) for v in rep.verdicts]
    assert (rep.verdict != "ok" and rep.unknowns) or rep.has_problem


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    version=st.sampled_from(["0.5.24", "0.6.0", "0.34.0", "1.0.0"]),
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
    """Served by SGLang's own registry (InternLM3, a llama.py class) with capture code the table does not list:
    unverified. Not in the registry at all: SGLang refuses it, a decided `fails` (conventions/engine_registries)."""
    from eaglewire.taps import Wiring

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text(json.dumps(drafter_config([1, 15, 28], "both")))
    for arch, verdict in (("InternLM3ForCausalLM", "unverified"), ("SomeNewForCausalLM", "problem")):
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
        tmp_path / "d", tmp_path / "InternLM3ForCausalLM", ["sglang==0.5.23"], Wiring.parse("h2,h16,h29")
    )
    assert any("not in eaglewire's table" in u and "capture code of its own" in u for u in rep.unknowns)
