"""The convention table, row by row, and the worked example of docs/conventions.md section (d), cell by cell.

Each row test names the source it encodes (the row's `source`), checks its default, its F(v), and the values it
cannot express or crashes on.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eaglewire.engines import table
from eaglewire.errors import InputError
from eaglewire.rules import taps as conv
from eaglewire.taps import Wiring

L = 61


def row(key):
    return next(r for r in table.ROWS if r.key == key)


def taps(res):
    return None if res.taps is None else list(res.taps.indices)


def nested(ids):
    return {"eagle_config": {"eagle_aux_hidden_state_layer_ids": ids}}


def top(ids):
    return {"eagle_aux_hidden_state_layer_ids": ids}


def test_every_row_cites_a_source_and_checked_versions():
    for r in table.ROWS:
        assert r.source and r.checked, r.key
    assert len({r.key for r in table.ROWS}) == len(table.ROWS)


# ---- SGLang ------------------------------------------------------------------------------------------------


def test_sglang_llama_0_5_23():
    r = row("sglang-llama-0.5.22+")
    assert "llama.py" in r.source
    assert taps(conv.resolve(r, {}, L)) == [2, 30, 58]  # default, no +1
    assert taps(conv.resolve(r, nested([2, 30, 58]), L)) == [3, 31, 59]  # F(v) = v + 1
    assert taps(conv.resolve(r, nested([-1, 2, 30]), L)) == [
        0,
        3,
        31,
    ]  # -1 = embeddings (capture_before_read)
    # SGLang reads only eagle_config: a top-level list is ignored.
    assert taps(conv.resolve(r, top([0, 3, 31]), L)) == [2, 30, 58]
    res = conv.resolve(r, nested([1, 30, 60]), L)  # id L-1: the last layer's output is never captured
    assert res.taps is None and "never captures" in res.failure
    assert conv.config_value_for(r, Wiring.of([0, 3, 31]), L).value == [-1, 2, 30]
    assert not conv.config_value_for(r, Wiring.of([2, 30, 61]), L).expressible


def test_sglang_llama_0_5_14():
    r = row("sglang-llama-0.5.11-0.5.21")
    assert "0.5.14" in r.source
    assert taps(conv.resolve(r, {}, L)) == [2, 30, 58]
    assert taps(conv.resolve(r, nested([1, 29, 57]), L)) == [2, 30, 58]
    res = conv.resolve(r, nested([-1, 2, 30]), L)  # crashes: residual None at layer 0
    assert res.taps is None and "TypeError" in res.failure
    fix = conv.config_value_for(r, Wiring.of([0, 3, 31]), L)
    assert not fix.expressible and "TypeError" in fix.reason


def test_sglang_deepseek_0_5_13_plus_first_id_heuristic():
    r = row("sglang-deepseek-0.5.17+")
    assert "deepseek_v2.py" in r.source and "25454" in r.source
    assert taps(conv.resolve(r, {}, L)) == [2, 30, 58]
    assert taps(conv.resolve(r, nested([1, 29, 57]), L)) == [2, 30, 58]  # first id 1: +1
    assert taps(conv.resolve(r, nested([2, 30, 58]), L)) == [2, 30, 58]  # else raw
    assert taps(conv.resolve(r, nested([1, 3, 31]), L)) == [2, 4, 32]  # the convention flip
    assert taps(conv.resolve(r, nested([0, 3, 31]), L)) == [0, 3, 31]
    # judged by the FIRST listed id, not the sorted order
    assert taps(conv.resolve(r, nested([30, 1, 58]), L)) == [1, 30, 58]
    assert taps(conv.resolve(r, nested([1, 30, 58]), L)) == [2, 31, 59]
    fix = conv.config_value_for(r, Wiring.of([1, 30, 58]), L)
    assert fix.expressible and fix.value[0] != 1 and sorted(fix.value) == [1, 30, 58] and fix.notes
    assert not conv.config_value_for(r, Wiring.of([2, 30, 61]), L).expressible  # h_L never captured


def test_sglang_deepseek_0_5_12():
    r = row("sglang-deepseek-0.5.11-0.5.12")
    assert taps(conv.resolve(r, nested([2, 30, 58]), L)) == [3, 31, 59]  # unconditional +1
    assert taps(conv.resolve(r, nested([1, 29, 57]), L)) == [2, 30, 58]
    assert "TypeError" in conv.resolve(r, nested([-1, 2, 30]), L).failure
    assert not conv.config_value_for(r, Wiring.of([0, 3, 31]), L).expressible


# ---- vLLM --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["vllm-llama-mrv2-0.33", "vllm-llama-v1-0.33"])
def test_vllm_llama(key):
    r = row(key)
    assert "gpu_model_runner.py" in r.source
    assert taps(conv.resolve(r, {}, L)) == [2, 30, 58]
    assert taps(conv.resolve(r, top([0, 3, 31]), L)) == [0, 3, 31]  # F(v) = v, 0 = embeddings
    assert taps(conv.resolve(r, top([2, 30, 61]), L)) == [2, 30, 61]  # v = L: pre-norm last output
    assert taps(conv.resolve(r, top([31, 3, 0]), L)) == [0, 3, 31]  # sorted
    res = conv.resolve(r, top([-1, 2, 30]), L)
    assert res.taps is None and "2 of 3" in res.failure  # -1 never captured: fc width error
    assert conv.config_value_for(r, Wiring.of([0, 3, 31]), L).key == "eagle_aux_hidden_state_layer_ids"


def test_vllm_runners_differ_on_nested_ids():
    spec_forge_style = nested([1, 29, 57])
    assert taps(conv.resolve(row("vllm-llama-v1-0.33"), spec_forge_style, L)) == [1, 29, 57]  # read verbatim
    assert taps(conv.resolve(row("vllm-llama-mrv2-0.33"), spec_forge_style, L)) == [
        2,
        30,
        58,
    ]  # ignored: default
    # MRV2 reads eagle_config["layer_ids"]
    assert taps(conv.resolve(row("vllm-llama-mrv2-0.33"), {"eagle_config": {"layer_ids": [4, 5, 6]}}, L)) == [
        4,
        5,
        6,
    ]
    # DFlash target_layer_ids are +1
    assert taps(
        conv.resolve(row("vllm-llama-v1-0.33"), {"dflash_config": {"target_layer_ids": [1, 2, 3]}}, L)
    ) == [2, 3, 4]


@pytest.mark.parametrize("key", ["vllm-deepseek-mrv2-0.33", "vllm-deepseek-v1-0.33"])
def test_vllm_deepseek(key):
    r = row(key)
    assert "deepseek_v2.py" in r.source
    assert taps(conv.resolve(r, {}, L)) == [2, 30, 58]
    assert taps(conv.resolve(r, top([3, 31, 59]), L)) == [3, 31, 59]
    res = conv.resolve(r, top([0, 3, 31]), L)
    assert res.taps is None and "TypeError" in res.failure  # residual None at index 0
    assert not conv.config_value_for(r, Wiring.of([0, 3, 31]), L).expressible


# ---- trainers ------------------------------------------------------------------------------------------------


def test_speculators():
    r = row("speculators-0.9")
    assert "speculators 0.9.0" in r.source
    assert taps(conv.resolve(r, {}, L)) == [2, 30, 58]
    assert taps(conv.resolve(r, top([0, 3, 31]), L)) == [0, 3, 31]
    assert taps(conv.resolve(r, nested([0, 3, 31]), L)) == [2, 30, 58]  # reads top-level only
    assert conv.resolve(r, top([0, 3, 62]), L).failure  # beyond L


def test_specforge():
    r = row("specforge-llama")
    assert "SpecForge" in r.source
    assert taps(conv.resolve(r, {}, L)) == [2, 30, 58]  # default [1, L//2-1, L-4] + 1
    assert taps(conv.resolve(r, nested([1, 29, 57]), L)) == [2, 30, 58]
    assert "exactly 3" in conv.resolve(r, nested([1, 29]), L).failure
    assert "non-negative" in conv.resolve(r, nested([-1, 2, 30]), L).failure
    assert not conv.config_value_for(r, Wiring.of([0, 3, 31]), L).expressible
    d = row("specforge-deepseek")
    assert taps(conv.resolve(d, nested([0, 3, 31]), L)) == [0, 3, 31]
    assert taps(conv.resolve(d, {}, L)) == [2, 30, 58]
    assert conv.config_value_for(d, Wiring.of([0, 3, 31]), L).value == [0, 3, 31]


def test_modelopt():
    r = row("modelopt-0.47")
    assert "hf_eagle.py" in r.source
    assert taps(conv.resolve(r, {}, L)) == [2, 30, 58]  # sorted({1, L//2-1, L-4}) + 1
    assert taps(conv.resolve(r, nested([2, 30, 58]), L)) == [3, 31, 59]
    assert taps(conv.resolve(r, nested([1, 28, 15]), 32)) == [
        2,
        16,
        29,
    ]  # unsorted export list, hooks ascending
    assert taps(conv.resolve(r, nested([1, 29, 60]), L)) == [2, 30, 61]  # hook on the last layer = h_L
    assert not conv.config_value_for(r, Wiring.of([0, 3, 31]), L).expressible


def test_eagle_reference():
    r = row("eagle-reference")
    assert "EAGLE" in r.source
    assert taps(conv.resolve(r, nested([0, 3, 31]), L)) == [2, 30, 58]  # no config at all
    assert conv.config_value_for(r, Wiring.of([2, 30, 58]), L).expressible
    assert not conv.config_value_for(r, Wiring.of([0, 3, 31]), L).expressible


# ---- worked table (d): same numeric list, different tensors, L = 61 ---------------------------------------

COLUMNS = {
    "vllm-llama": (row("vllm-llama-v1-0.33"), top),
    "vllm-deepseek": (row("vllm-deepseek-v1-0.33"), top),
    "sglang-llama": (row("sglang-llama-0.5.22+"), nested),
    "sglang-deepseek>=0.5.13": (row("sglang-deepseek-0.5.17+"), nested),
    "sglang-deepseek<=0.5.12": (row("sglang-deepseek-0.5.11-0.5.12"), nested),
    "modelopt": (row("modelopt-0.47"), nested),
}
CRASH, DROPPED = "crash", "dropped"
TABLE_D = {
    (2, 30, 58): [[2, 30, 58], [2, 30, 58], [3, 31, 59], [2, 30, 58], [3, 31, 59], [3, 31, 59]],
    (1, 29, 57): [[1, 29, 57], [1, 29, 57], [2, 30, 58], [2, 30, 58], [2, 30, 58], [2, 30, 58]],
    (0, 3, 31): [[0, 3, 31], CRASH, [1, 4, 32], [0, 3, 31], [1, 4, 32], [1, 4, 32]],
    (-1, 2, 30): [DROPPED, DROPPED, [0, 3, 31], DROPPED, CRASH, DROPPED],
    (3, 31, 59): [[3, 31, 59], [3, 31, 59], [4, 32, 60], [3, 31, 59], [4, 32, 60], [4, 32, 60]],
}


@pytest.mark.parametrize("ids", list(TABLE_D), ids=str)
def test_worked_table_d(ids):
    for (name, (r, place)), want in zip(COLUMNS.items(), TABLE_D[ids], strict=True):
        res = conv.resolve(r, place(list(ids)), L)
        if want == CRASH:
            assert res.taps is None and "TypeError" in res.failure, (name, res.failure)
        elif want == DROPPED:
            assert res.taps is None and ("never captures" in res.failure), (name, res.failure)
        else:
            assert taps(res) == want, name


def test_worked_table_d_sglang_0_5_14_column_note():
    # "[-1, 2, 30] -> 0, 3, 31 (0.5.23); crash <= 0.5.14" for SGLang llama-family.
    assert "TypeError" in conv.resolve(row("sglang-llama-0.5.11-0.5.21"), nested([-1, 2, 30]), L).failure


VALUE_FOR_EMBED_3_31 = {
    "vllm-llama-mrv2-0.33": [0, 3, 31],
    "vllm-deepseek-mrv2-0.33": None,
    "speculators-0.9": [0, 3, 31],
    "sglang-deepseek-0.5.17+": [0, 3, 31],
    "sglang-llama-0.5.22+": [-1, 2, 30],
    "sglang-deepseek-0.5.11-0.5.12": None,
    "specforge-deepseek": [0, 3, 31],
    "specforge-llama": None,
    "modelopt-0.47": None,
    "eagle-reference": None,
}


@pytest.mark.parametrize("key", list(VALUE_FOR_EMBED_3_31))
def test_config_value_for_embed_out2_out30(key):
    """Section (d): the config value that selects [embedding, out(layer 2), out(layer 30)] = h {0, 3, 31}."""
    fix = conv.config_value_for(row(key), Wiring.of([0, 3, 31]), L)
    want = VALUE_FOR_EMBED_3_31[key]
    if want is None:
        assert not fix.expressible and fix.reason
    else:
        assert fix.value == want


# ---- lookup ----------------------------------------------------------------------------------------------------


def test_rows_for_versions():
    pick = lambda spec, cls: [m.row.key for m in table.rows_for(table.parse_spec(spec), cls)]  # noqa: E731
    assert pick("sglang==0.5.23", "deepseek") == ["sglang-deepseek-0.5.17+"]
    assert pick("sglang==0.5.12", "deepseek") == ["sglang-deepseek-0.5.11-0.5.12"]
    assert pick("sglang==0.5.14", "llama") == ["sglang-llama-0.5.11-0.5.21"]
    assert pick("sglang==0.5.23", "llama") == ["sglang-llama-0.5.22+"]
    assert sorted(pick("vllm==0.33.0", "llama")) == ["vllm-llama-mrv2-0.33", "vllm-llama-v1-0.33"]
    newer = table.rows_for(table.parse_spec("vllm==0.40.1"), "llama")  # the newest rows hold open above...
    assert newer and all(m.exact and not m.verified for m in newer)  # ...but a release nobody read is assumed
    near = table.rows_for(table.parse_spec("vllm==0.8.0"), "llama")  # below every row: the nearest one
    assert near and not near[0].exact
    with pytest.raises(InputError):
        table.parse_spec("tgi==1.0")
    with pytest.raises(InputError):
        table.parse_spec("sglang==not.a.version!")


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from([r.key for r in table.ROWS if r.rule is not conv.Rule.FIXED]),
    num_layers=st.integers(min_value=8, max_value=96),
    data=st.data(),
)
def test_inverse_round_trips(key, num_layers, data):
    """Whenever config_value_for gives a value, resolving that value yields exactly the requested taps."""
    r = row(key)
    n = data.draw(st.integers(min_value=1, max_value=4)) if r.exactly is None else r.exactly
    chosen = data.draw(st.lists(st.integers(0, num_layers), min_size=n, max_size=n, unique=True))
    want = Wiring.of(sorted(chosen))
    fix = conv.config_value_for(r, want, num_layers)
    if fix.expressible:
        res = conv.resolve_ids(r, tuple(fix.value), num_layers)
        assert res.taps is not None and res.taps.indices == want.indices
    else:
        assert fix.reason


def test_docs_coverage_is_in_sync_with_the_table():
    """docs/coverage.md lists every row with what was read; `make docs` rewrites it."""
    from pathlib import Path

    from eaglewire.jobs.coverage import markdown

    doc = Path(__file__).resolve().parents[1] / "docs" / "coverage.md"
    assert doc.read_text() == markdown(), "docs/coverage.md is stale: run `make docs`"


def test_a_refused_target_is_fixed_by_a_release_not_a_value(tmp_path):
    """Where the release refuses the target (vLLM 0.12.0-0.14.1 take Qwen3-VL-MoE's ids but its text model never
    captures, as its model code executed shows), check fails and its fix names the first release whose capture
    serves it, not a config value; at that release the same pair is decided on its ids."""
    import json

    from eaglewire import zoo
    from eaglewire.jobs.check import check

    target = tmp_path / "target"
    target.mkdir()
    text = {"model_type": "qwen3_vl_moe_text", "num_hidden_layers": 8, "hidden_size": 384, "vocab_size": 4096}
    (target / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["Qwen3VLMoeForConditionalGeneration"],
                "model_type": "qwen3_vl_moe",
                "text_config": text,
            }
        )
    )
    old, new = check(
        zoo.drafter_dir("default"), target, ["vllm==0.13.0", "vllm==0.15.0"], platform="cuda"
    ).verdicts
    assert old.status == "fails" and "never captures" in old.served.failure
    assert not old.fix.expressible and "vllm 0.15.0 is the first release" in old.fix.reason
    assert new.status != "fails" and new.served.taps is not None
