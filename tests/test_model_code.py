"""The model-code records (tests/engines/model_code.py: each SGLang and vLLM release's own capture request and
decoder forward loop, executed) replayed against today's table: every case the forward decided must still be the
table's answer at that release and runner, so a table edit that contradicts a release's own code fails here,
without the engine."""

from __future__ import annotations

import json
from importlib import import_module
from pathlib import Path
from types import SimpleNamespace

import pytest
from engines.capture import configs
from engines.model_code import ENTRY_FAILS, _table_row, agrees, releases, table_taps
from packaging.version import Version

from eaglewire.engines.observed import records
from eaglewire.targets import FAMILIES, GENERIC, _family_of

ROOT = Path(__file__).resolve().parents[1]

CODE = list(records("model-code"))


def _result(engine: str, row: dict) -> dict:
    """The probe's result as the record keeps it: the ids the release's runner read, the forward's taps or the
    engine's own error."""
    out: dict = {"ids" if engine == "sglang" else "from_config": row["ids_read"]}
    if row["forward_taps"] is not None:
        out["forward_taps"] = row["forward_taps"]
    elif any(w in (row["error"] or "") for w in ENTRY_FAILS):
        out["error"] = row["error"]
    else:
        out["forward_error"] = row["error"]
    return out


@pytest.mark.parametrize("rec", CODE, ids=[r["file"] for r in CODE])
def test_model_code_replays_against_the_table(rec):
    engine, release = rec["engine"].split("==")
    wrong = []
    for values in rec["cases"]:
        row = dict(zip(rec["columns"], values, strict=True))
        model_type = row.get("model_type") or ""  # a family told apart by model_type (Kimi-K2)
        family = _family_of([row["arch"]], model_type)
        family = family if family in FAMILIES else GENERIC
        config = dict(configs(engine, row["ids"]))[row["config_key"]]
        table = table_taps(engine, release, family, row["arch"], config, row["num_layers"], row["runner"],
                           model_type, row.get("platform") or "")  # fmt: skip
        agree = agrees(_result(engine, row), table, engine)
        # a listed family must agree; an architecture the table does not list tests the generic capture `check`
        # assumes for it, and the record keeps whether it held (check decides from it: tests/test_generic_targets.py)
        if agree is not (row["agree"] if table.get("assumed") else True):
            wrong.append((row["arch"], row["runner"], row["ids"], row["config_key"], row["forward_taps"],
                          row["error"], table["taps"], table["failure"]))  # fmt: skip
    assert not wrong, wrong[:5]


def test_a_record_says_what_it_covers_and_what_did_not_run():
    for rec in CODE:
        assert rec["platform"] == "cpu" and rec["level"] == "model-code", rec["file"]
        for fam in rec["families"]:
            if fam.get("assumed"):  # the row's capture, tested on an architecture the table does not list: a
                # generic target, or a class its family's rows do not name (Llama4ForCausalLM before they did)
                engine, release = rec["engine"].split("==")
                named = (
                    fam["family"] != GENERIC
                    and _table_row(
                        engine,
                        release,
                        fam["family"],
                        fam["architecture"],
                        fam["runner"],
                        "",
                        fam.get("platform", ""),
                    )[2]
                )
                assert not named and fam["claims"] >= fam["agree"] >= 0, (rec["file"], fam)
            else:
                assert fam["claims"] == fam["agree"] > 0, (rec["file"], fam)
        ran = {f["family"] for f in rec["families"] if f["family"] != GENERIC}
        for item in rec["covers"]:
            assert item["platform"] in ("cpu", "cuda") and set(item["families"]) <= ran, (rec["file"], item)
            if rec["engine"].startswith("vllm==") and item["platform"] == "cpu":
                # the CPU build's runner makes the V1 request (0.22.0 on; MRV2's from 0.34.0, which has no V1):
                # every family it covers ran it there
                release = Version(rec["engine"].split("==")[1])
                runner = "mrv2" if release >= Version("0.34.0") else "v1"
                assert item["runner"] == runner, rec["file"]
                for fam in set(item["families"]):
                    entries = [f for f in rec["families"] if f["family"] == fam and f["runner"] == runner]
                    # an architecture the CPU platform serves with a class of its own: that class's entry answers
                    own = {f["architecture"] for f in entries if f.get("platform") == "cpu"}
                    assert all(f.get("cpu") or f.get("refused") or f["architecture"] in own
                               for f in entries), (rec["file"], fam)  # fmt: skip
        assert all(isinstance(why, str) and why for why in rec["not_run"].values()), rec["file"]


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_every_release_of_the_range_has_its_record(engine):
    """One record per release the driver runs (SGLang from 0.4.5, vLLM from 0.8.5, every release of the ledger
    with EAGLE-3): a release whose model files do not import here still has one, its `not_run` saying why."""
    have = {r["engine"] for r in CODE}
    missing = [v for v in releases(engine) if f"{engine}=={v}" not in have]
    assert not missing, f"{engine}: no model-code record for {missing} (make model-code)"


def test_every_model_code_cell_is_what_its_record_covers():
    """A coverage cell at level model-code names a record that covers its platform and family: a model-code
    record's `covers` item, or an engine record's forward seen before warm-up failed (its `model_code` rows)."""
    import json

    from eaglewire.jobs.coverage import ENGINES_DIR, coverage, model_code_families

    cells = [c for c in coverage().cells if c.level == "model-code"]
    assert cells
    for c in cells:
        rec = json.loads((ENGINES_DIR.parent / c.record).read_text())
        assert rec["engine"] == f"{c.engine}=={c.release}", c
        if "covers" in rec:
            assert any(i["platform"] == c.platform and c.family in i["families"] for i in rec["covers"]), c
        else:
            assert c.family in model_code_families(rec) and c.platform == "cuda", c


@pytest.mark.parametrize(("engine", "release", "arch"), [("vllm", "0.33.0", "MiniCPM3ForCausalLM"),
                                                         ("vllm", "0.33.0", "DeepseekV3ForCausalLM"),
                                                         ("sglang", "0.5.23", "Qwen3ForCausalLM")])  # fmt: skip
def test_an_architecture_observed_again_merges_back_into_its_release(engine, release, arch):
    """`model_code --arch A` reruns one architecture and merges it into the release's record: the record with A's
    rows taken out and merged back is the record (family order, case order, the reasons, what it covers); an
    architecture two families share (Kimi-K2 is DeepseekV3ForCausalLM under another model_type) keeps its place."""
    import json

    from engines.model_code import _key, merge_archs, out_dir

    record = json.loads((out_dir(engine) / f"{engine}-{release}-model-code.json").read_text())
    only = frozenset({arch})
    part = {"families": [f for f in record["families"] if f["architecture"] == arch],
            "cases": [r for r in record["cases"] if r[0] == arch],
            "not_run": {k: v for k, v in record["not_run"].items() if _key(k)[1] == arch},
            "entry": record["entry"], "provenance": {"probe": "capture_probe.py", "seconds": 1.0}}  # fmt: skip
    assert part["families"] and part["cases"]
    rest = record | {"families": [f for f in record["families"] if f["architecture"] != arch],
                     "cases": [r for r in record["cases"] if r[0] != arch],
                     "not_run": {k: v for k, v in record["not_run"].items() if _key(k)[1] != arch}}  # fmt: skip
    merged = merge_archs(rest, part, only, engine, release)
    before = record["provenance"].get("merged", [])  # merges the committed record already had
    assert merged["provenance"].pop("merged") == [*before, {"architectures": [arch], "probe": "capture_probe.py",
                                                            "seconds": 1.0}]  # fmt: skip
    assert merged == record | {"provenance": {k: v for k, v in record["provenance"].items() if k != "merged"}}


def test_a_none_handed_to_a_stand_in_is_the_probes_failure_not_the_engines():
    """A forward that fails on None is the engine's answer (Llama's loop adding a None residual at id 0) only where
    the release's code raised it: a stand-in handed None (a TapLayer inside a real layer whose block the probe stood
    in, as Bailing's at SGLang 0.5.23 with guessed config fields) makes no claim."""
    import torch
    from engines import capture_probe as cp

    with pytest.raises(TypeError) as stand_in:
        cp._tap_layer(1)(torch.arange(3), None)
    assert cp._forward_failure(stand_in.value, "forward").startswith(cp.PROBE_FAILED)
    with pytest.raises(TypeError) as engines:
        torch.zeros(3) + None  # what a release's own loop raises, in its own frame
    assert cp._forward_failure(engines.value, "forward") == (
        "TypeError: unsupported operand type(s) for +: 'Tensor' and 'NoneType'"
    )


def test_the_backend_probe_puts_back_the_recorders_a_case_added_to_the_class():
    """vLLM's Transformers modeling backend adds one `OutputRecorder` per id to `self.model._can_record_outputs`,
    which is the transformers model class's own dict: an engine builds one model per process, the probe one per
    case, so without putting the class back a case saw the recorders of every case before it (and returned its
    states in their order: ids [1, 3, 4] came back h4, h1, h3)."""
    from engines import modeling_backend
    from transformers import AutoModel

    config = modeling_backend.hf_config("olmo2", 4)
    assert (config.num_hidden_layers, config.hidden_size, config._attn_implementation) == (4, 16, "eager")
    hf = AutoModel.from_config(config)
    saved = modeling_backend._class_recorders(hf)
    before = dict(type(hf)._can_record_outputs)
    hf._can_record_outputs["aux_hidden_state_3"] = object()  # as set_aux_hidden_state_layers writes it
    assert "aux_hidden_state_3" in type(hf)._can_record_outputs  # the class's dict, not the instance's
    modeling_backend.release(SimpleNamespace(_probe_saved=saved))
    assert type(hf)._can_record_outputs == before


def test_an_error_names_the_engines_functions_that_raised_it():
    """The backend's capture request fails with a bare KeyError (id 0 asks for `_layer_names[-1]`): the record
    keeps which of the engine's functions raised it, as its traceback does, so the replay knows it for the request's
    own failure (ENTRY_FAILS), as the engine fails at load."""
    from engines import capture_probe as cp

    with pytest.raises(ImportError) as raised:
        import_module("nothing_of_this_name")
    assert cp._raised_in(raised.value) is None  # not the engine's code
    engine: dict = {}  # two functions of a file in an engine's package, the outer calling the inner
    source = "def set_aux_hidden_state_layers(names, i):\n    return get(names, i - 1)\n\ndef get(names, i):\n    return names[i]\n"
    exec(compile(source, "/site-packages/vllm/model_executor/models/transformers/base.py", "exec"), engine)
    with pytest.raises(KeyError) as raised:
        engine["set_aux_hidden_state_layers"]({0: "layers.0"}, 0)
    assert cp._raised_in(raised.value) == "set_aux_hidden_state_layers > get"
    assert any(w in f"KeyError: -1 (raised in {cp._raised_in(raised.value)})" for w in ENTRY_FAILS)


def test_a_capture_request_the_release_refuses_is_a_claim():
    """SGLang's per-layer capture flags (`setattr(self.layers[i], ...)`) raise IndexError for id L-1 (+1 = L): the
    error comes out of torch's ModuleList, called by the release's own setter, so the frames of torch are passed
    over and the setter names it. The record keeps the case as a claim (the table's hl_crash), where it was once
    dropped: SGLang 0.5.4.post2's Qwen3-MoE, whose rows said 0.5.5 until its record showed the crash."""
    import torch
    from engines import capture_probe as cp

    engine: dict = {"torch": torch}
    source = ("def set_eagle3_layers_to_capture(layers, ids):\n"
              "    for i in ids:\n        setattr(layers[i + 1], 'flag', True)\n")  # fmt: skip
    exec(compile(source, "/site-packages/sglang/srt/models/qwen2_moe.py", "exec"), engine)
    layers = torch.nn.ModuleList(torch.nn.Identity() for _ in range(4))
    with pytest.raises(IndexError) as raised:
        engine["set_eagle3_layers_to_capture"](layers, [3])
    assert cp._raised_in(raised.value) is None  # the innermost frame is torch's
    assert cp._raised_in(raised.value, through=("torch",)) == "set_eagle3_layers_to_capture"
    record = json.loads((ROOT / "src/eaglewire/engines/sglang/data/observed/sglang-0.5.4.post2-model-code.json")
                        .read_text())  # fmt: skip
    col = {c: i for i, c in enumerate(record["columns"])}
    crashed = [c for c in record["cases"]
               if c[col["arch"]] == "Qwen3MoeForCausalLM" and c[col["error"]] and "IndexError" in c[col["error"]]]  # fmt: skip
    assert crashed and all(
        c[col["agree"]] is True for c in crashed
    )  # claims, each agreeing with the row's crash


def test_a_forward_failure_is_the_engines_where_its_own_check_raised_it(tmp_path):
    """SGLang's AuxHiddenStatePacker checks it captured as many states as the drafter takes (0.5.17: a multi-line
    `assert`; 0.5.23: `raise RuntimeError`): that check, raised by a statement of the release's own code, is the
    engine's answer (the row's missing_crash), where a torch op failing on an engine line is not."""
    import torch
    from engines import capture_probe as cp

    source = tmp_path / "sglang" / "srt" / "layers" / "aux_hidden_states.py"
    source.parent.mkdir(parents=True)
    source.write_text("def finalize(idx, n):\n    assert idx == n, (\n        f'captured {idx} of {n} aux hidden states'\n"
                      "    )\n\ndef cat(a, b):\n    return torch.cat([a, b])\n")  # fmt: skip
    engine: dict = {"torch": torch}
    exec(compile(source.read_text(), str(source), "exec"), engine)
    with pytest.raises(AssertionError) as checked:
        engine["finalize"](2, 3)
    assert cp._checked_by_the_release(checked.value)
    assert (
        cp._forward_failure(checked.value, "forward") == "AssertionError: captured 2 of 3 aux hidden states"
    )
    with pytest.raises(RuntimeError) as op:
        engine["cat"](torch.zeros(2, 3), torch.zeros(2, 4))
    assert not cp._checked_by_the_release(op.value)
    assert cp._forward_failure(op.value, "forward").startswith(cp.PROBE_FAILED)


def test_a_build_failure_is_the_engines_only_where_its_own_call_hands_its_own_class_an_argument(monkeypatch):
    """Every launch builds the target's decoder before the runner's capture request. A build that stopped because
    the release's own code handed one of its own classes an argument that class does not take (SGLang 0.5.13's
    Qwen2-MoE loop handing Intern-S1-Pro's layers `start_layer`) is the engine's failure at load; the same call to
    a class of another package (transformers, newer here than the release's pin), or any other stop, makes no
    claim."""
    import sys
    import types

    from engines import capture_probe as cp

    engine: dict = {"__name__": "vllm.model_executor.models.fake"}
    source = (
        "class FakeDecoderLayer:\n    def __init__(self, config, prefix=''):\n        pass\n\n"
        "def make_layers(n, build):\n    layers = []\n    for i in range(n):\n        layers.append(build(prefix=f'layers.{i}'))\n"
        "    return layers\n\n"
        "def build_model(layer_cls):\n    return make_layers(2, lambda prefix: layer_cls(config=None, prefix=prefix,"
        " start_layer=0))\n"
    )
    exec(compile(source, "/site-packages/vllm/model_executor/models/fake.py", "exec"), engine)
    module = types.ModuleType("vllm.model_executor.models.fake")
    module.FakeDecoderLayer = engine["FakeDecoderLayer"]
    monkeypatch.setitem(sys.modules, module.__name__, module)

    with pytest.raises(TypeError) as own:
        engine["build_model"](engine["FakeDecoderLayer"])
    failure = cp._build_failure(own.value)
    assert failure.startswith(
        "TypeError: FakeDecoderLayer.__init__() got an unexpected keyword argument 'start_layer'"
    )
    # where, as the traceback names the engine's functions: the lambda the loop builds its layers with
    assert failure.endswith("(raised in build_model > make_layers > build_model.<locals>.<lambda>)")

    class Foreign:  # a class no engine module binds (a newer transformers' class, say)
        def __init__(self, config, prefix=""):
            pass

    with pytest.raises(TypeError) as foreign:
        engine["build_model"](Foreign)
    assert cp._build_failure(foreign.value).startswith(cp.PROBE_FAILED)
    with pytest.raises(AttributeError) as other:  # a stand-in the build could not use
        engine["make_layers"](1, lambda prefix: None.weight)
    assert cp._build_failure(other.value).startswith(cp.PROBE_FAILED)


def test_a_stopped_build_says_where_it_stopped():
    """A real decoder's build that stopped on the probe (no claim) says where (`build_stop`: the error, the engine's
    innermost function it passed through, the frame that raised it), so a record's `built: false` can be triaged: a
    key the newest transformers moved (a probe limit) or a key real checkpoints lack (the release's own failure,
    SGLang's LongCat-Flash row). Every stopped build in the records (SGLang's and vLLM's) says it, or gives the
    engine's failure."""
    from engines import capture_probe as cp

    engine: dict = {"__name__": "sglang.srt.models.fake"}
    source = "def build(config):\n    return config.rope_theta\n"
    exec(compile(source, "/site-packages/sglang/srt/models/fake.py", "exec"), engine)
    with pytest.raises(AttributeError) as stop:
        engine["build"](SimpleNamespace())
    words = cp._stop_words(stop.value)
    assert words.startswith("AttributeError: 'types.SimpleNamespace' object has no attribute 'rope_theta'"), (
        words
    )
    assert words.endswith("(in build, raised at fake.py:2 build)"), words

    stopped = [
        (rec["file"], f["architecture"])
        for rec in CODE
        for f in rec["families"]
        if f.get("built") is False and not f.get("build_stop")
        and not any(c[0] == f["architecture"] and c[7] and not str(c[7]).startswith(cp.PROBE_FAILED)
                    for c in rec["cases"])
    ]  # fmt: skip
    assert not stopped, stopped[:5]


def test_the_decoder_is_built_after_the_config_writes_of_the_classes_that_build_it():
    """SGLang's Glm4MoeLiteForCausalLM sets `config.moe_layer_freq = 1` in its own __init__ before it builds its
    decoder (0.5.8+; GLM-4.7-Flash's checkpoints carry no such key, and DeepSeek-V2's layers read it): the probe,
    building the decoder alone, makes the same constant writes first, and only those (a computed or conditional
    write is not replayed; a class of another package is not read)."""
    from engines import capture_probe as cp

    class Outer:
        def __init__(self, config, flag=False):
            config.moe_layer_freq = 1
            config.derived = config.hidden_size * 2
            if flag:
                config.conditional = True
            self.config = config

    class Foreign:
        def __init__(self, config):
            config.foreign = 1

    Outer.__module__ = "sglang.srt.models.fake"
    config = SimpleNamespace(hidden_size=8)
    cp._owner_writes((Outer, Foreign), config)
    assert vars(config) == {"hidden_size": 8, "moe_layer_freq": 1}


@pytest.mark.parametrize(
    "engine, arch, first",
    [("sglang", "LlamaForCausalLM", "0.4.5"), ("sglang", "DeepseekV3ForCausalLM", "0.5.4.post2"),
     ("vllm", "LlamaForCausalLM", "0.8.5"), ("vllm", "Qwen3ForCausalLM", "0.8.5"),
     ("vllm", "DeepseekV3ForCausalLM", "0.8.5"), ("vllm", "MiniMaxM2ForCausalLM", "0.11.1")],
)  # fmt: skip
def test_every_record_builds_the_real_decoder_of_the_families_every_release_serves(engine, arch, first):
    """Every launch builds the target before its runner's capture request, so each record builds each target's real
    decoder by the release's own __init__ (stand-in blocks) and says whether it built (`built`). A build that
    stopped on the probe's stand-ins would leave that check vacuous: the decoders every release serves build at every
    release of the range (vLLM's with each release's own default VllmConfig, 0.8.5's made field by field; SGLang's
    0.4.5.post3-0.4.6.x launch sized as on an 80 GB GPU, as a CPU reports no device memory). DeepSeek-V3, the MLA
    case this project exists for, builds in every vLLM record; SGLang builds a decoder where its capture request
    ran, which its DeepSeek model takes from 0.5.4.post2 (no `set_eagle3_layers_to_capture` before)."""
    from packaging.version import Version

    recs = [r for r in CODE if r["engine"].startswith(engine + "==")]
    assert len(recs) == len(releases(engine))
    for rec in recs:
        if Version(rec["engine"].split("==")[1]) < Version(first):
            continue
        fams = [f for f in rec["families"] if f["architecture"] == arch]
        assert fams and all(f.get("built") is True for f in fams), (rec["file"], fams)


def test_the_gate_answer_is_the_gates_only(tmp_path, monkeypatch):
    """A draft-settings case `eagle3/gate <model_type>` answers for the gate where the gate refused the target or
    the launch got past it; a case that stopped on another error (a config the release could not load) says
    nothing of the gate (no answer, where it once read as "let through")."""
    import json

    from engines import model_code as mc

    gate = {
        "type": "ValueError",
        "message": f"Eagle3 {mc.GATE_WORDS} Llama models. Got 'qwen3'",
        "where": "x",
    }
    other = {
        "type": "ValueError",
        "message": "The checkpoint you are trying to load has model type `x`",
        "where": "y",
    }
    cases = [{"name": "eagle3/gate a", "error": gate}, {"name": "eagle3/gate b", "error": None},
             {"name": "eagle3/gate c", "error": other}]  # fmt: skip
    (tmp_path / "vllm-9.9.9.json").write_text(json.dumps({"cases": cases}))
    monkeypatch.setattr(mc, "DRAFT_SETTINGS", tmp_path)
    assert mc.GATE_WORDS in mc.gate_answer("9.9.9", "a")
    assert mc.gate_answer("9.9.9", "b") == ""
    assert mc.gate_answer("9.9.9", "c") is None and mc.gate_answer("9.9.9", "d") is None
