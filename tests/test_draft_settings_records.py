"""Draft-settings records (tests/engines/draft_settings.py) against lint's and check's rows: what each vLLM
release's own config and loader code gave the draft is what eaglewire says that release does.

Per record and case the engine's answer is the draft's decoder layer as the release's proposer built it (the
quantization config its code passed, the TP of the config it was built under). A case whose draft the probe did not
build (the V0 engine builds it; the CPU test venv lacks a GPU-only module) makes no claim.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from engines.draft_settings import ARTEFACTS, FIRST, OUT, QUANT, write_models
from engines.model_code import releases
from packaging.version import Version

from eaglewire.engines.runners import serving_row
from eaglewire.engines.serving import serving_failure
from eaglewire.engines.table import parse_spec
from eaglewire.engines.vllm.taps import ROWS
from eaglewire.jobs.lint import lint
from eaglewire.rules.taps import Rule, resolve

RECORDS = sorted(OUT.glob("vllm-*.json"))
SERVING_ROW = "vllm.eagle3-head-takes-target-quantization"
LINT_HEAD = "vllm.eagle3_head_takes_target_quantization"


def _release(path: Path) -> str:
    return path.name[len("vllm-") : -len(".json")]


@cache
def _record(path: Path) -> dict:
    return json.loads(path.read_text())


def _built(case: dict) -> dict | None:
    """The draft's decoder projection as the release built it, or None where the case makes no settings claim
    (an error of the CPU venv; an EAGLE-3 head the V0 engine cannot load: test_an_eagle3_head_on_v0_...)."""
    error = case["error"]
    # the eagle3 gate's answer (test_the_eagle3_gate_refuses_...), and each family on V0 (test_every_family_on_v0_...)
    if case["name"].startswith(("eagle3/gate ", "eagle3/V0 target ")):
        return None
    if error is not None:
        assert any(a in error["message"] for a in ARTEFACTS) or error["type"] == "ValueError", error
        return None
    built = case["built"] or {}
    if not (built.get("head_load") or {"loaded": True})["loaded"]:
        return None
    return built.get("decoder_projection")


def _cases(prefix: str):
    for path in RECORDS:
        for case in _record(path)["cases"]:
            if case["name"] == prefix or case["name"].startswith(prefix + "/"):
                yield _release(path), case


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    return write_models(tmp_path_factory.mktemp("draft-settings"))


def _argv(models: Path, case: dict) -> list[str]:
    """The case's EngineArgs as the `vllm serve` command a user types."""
    args = dict(case["engine_args"])
    spec = dict(args.pop("speculative_config"))
    if "model" in spec:
        spec["model"] = str(models / spec["model"])
    env = [f"{k}={v}" for k, v in (case.get("env") or {}).items()]
    argv = [*env, "vllm", "serve", str(models / args.pop("model")), "--speculative-config", json.dumps(spec)]
    flags = {"quantization": "--quantization", "tensor_parallel_size": "-tp", "dtype": "--dtype",
             "max_model_len": "--max-model-len"}  # fmt: skip
    for key, flag in flags.items():
        if key in args:
            argv += [flag, str(args[key])]
    return argv


def test_every_release_from_the_first_has_a_record():
    wanted = [v for v in releases("vllm") if Version(v) >= Version(FIRST)]
    have = {_release(p) for p in RECORDS}
    assert have, "no draft-settings record (cd tests && python -m engines.draft_settings --python ...)"
    assert [v for v in wanted if v not in have] == []


@pytest.mark.parametrize("path", RECORDS, ids=[_release(p) for p in RECORDS])
def test_a_record_is_the_release_it_names_and_builds_drafts(path):
    rec = _record(path)
    assert rec["engine"] == f"vllm=={_release(path)}" == f"vllm=={rec['provenance']['vllm']}"
    built = [c for c in rec["cases"] if _built(c) is not None]
    assert built, f"{path.name}: no case built a draft"


def test_an_eagle3_head_on_v0_is_refused_where_check_and_lint_say(models):
    """Before 0.10.0 the release chooses V0 or V1 per launch (the record's `v1`, the release's own oracle asked as
    on a CUDA GPU), and its V0 build refuses the EAGLE-3 head's fc at load: exactly where lint's
    vllm.eagle3_on_v0 fires and where check's row for a plain CUDA launch is the V0 row (which fails)."""
    seen = {"v0": 0, "v1": 0}
    for release, case in _cases("eagle3"):
        config = case["config"]
        if config is None or Version(release) >= Version("0.10.0"):
            continue
        on_v0 = config["v1"] is False
        head = (case["built"] or {}).get("head_load")
        assert (head is not None and not head["loaded"]) == on_v0, (release, case["name"], head)
        if on_v0:
            assert "Attempted to load weight" in head["error"]["message"], head
        report = lint(_argv(models, case), engine_version=release)
        fired = "vllm.eagle3_on_v0" in {c.rule for c in report.changes}
        assert fired == on_v0, (release, case["name"], fired)
        if not case.get("env") and case["name"] == "eagle3":
            choice = serving_row(parse_spec(f"vllm=={release}"), "llama", "cuda")
            assert (choice.runner == "v0") == on_v0, (release, choice.why)
            assert resolve(choice.match.row, {}, 4).failure is not None or not on_v0
        seen["v0" if on_v0 else "v1"] += 1
    assert seen["v0"] and seen["v1"], seen


def test_an_eagle3_head_beside_a_quantized_target_is_what_the_serving_row_says(models):
    """Per release and checkpoint scheme: the head built with the target's quantization config is exactly where
    the serving row (check's failure at load) holds."""
    seen = 0
    for release, case in _cases("eagle3"):
        if not case["name"].startswith("eagle3/target-") or "/draft " in case["name"]:
            continue
        layer = _built(case)
        if layer is None:
            continue
        scheme = case["name"].split("target-", 1)[1]
        config = json.loads((models / f"llama-{scheme}" / "config.json").read_text())
        takes = layer["quant_config"] is not None
        row = serving_failure("vllm", release, None, "llama", config, ("LlamaForCausalLM",),
                              QUANT[scheme]["quant_method"])  # fmt: skip
        assert (row is not None and row.name == SERVING_ROW) == takes, (release, scheme, layer, row)
        seen += 1
    assert seen >= len(RECORDS)


def test_an_eagle3_head_beside_quantization_flag_is_what_lint_says(models):
    for release, case in _cases("eagle3/--quantization fp8"):
        layer = _built(case)
        if layer is None:
            continue
        report = lint(_argv(models, case), engine_version=release)
        fired = LINT_HEAD in {c.rule for c in report.changes}
        assert fired == (layer["quant_config"] is not None), (release, layer)


def test_mtp_layers_beside_quantization_flag_are_what_lint_says(models):
    """`--quantization fp8` on an unquantized DeepSeek checkpoint: lint says the MTP layers take it (INFO) or not
    (PROBLEM), per release, as the release built them."""
    seen = 0
    for release, case in _cases("mtp/--quantization fp8"):
        layer = _built(case)
        if layer is None:
            continue
        report = lint(_argv(models, case), engine_version=release)
        said = {c.severity for c in report.changes if c.rule == "vllm.mtp_quantization"}
        expected = "info" if layer["quant_config"] is not None else "problem"
        assert said == {expected}, (release, layer, said)
        seen += 1
    assert seen


@pytest.mark.parametrize("kind", ["eagle3", "mtp"])
def test_the_draft_tensor_parallel_size_is_what_lint_says(models, kind):
    """draft_tensor_parallel_size 1 beside -tp 2: lint says it is ignored exactly where the release built the
    draft under the target's parallel config."""
    seen = 0
    for release, case in _cases(f"{kind}/-tp 2, draft_tensor_parallel_size 1"):
        layer = _built(case)
        if layer is None:
            continue
        ignored = layer["built_under_tensor_parallel_size"] == 2
        report = lint(_argv(models, case), engine_version=release)
        fired = "vllm.draft_tensor_parallel_size_ignored" in {c.rule for c in report.changes}
        assert fired == ignored, (release, layer, case["config"]["draft"])
        seen += 1
    assert seen


def test_the_draft_length_and_rotary_are_what_the_context_rows_say(models):
    """A drafter whose max_position_embeddings (2048) is below the launch's 4096: every release builds the draft
    at the length the context rows derive (rules/draft_context.py: min of the drafter's and the served length), the
    length V1's gate compares with; from 0.27.0 (and only there) the release raises the draft config's
    max_position_embeddings, which sizes its rotary table, to the target's: where Model Runner V2, which has no
    gate, stops drafting garbage past the drafter's context (engines/vllm/draft.py CONTEXT_ROWS)."""
    from eaglewire.engines.vllm.draft import CONTEXT_ROWS
    from eaglewire.rules.draft_context import choose

    drafter = json.loads((models / "eagle3-short" / "config.json").read_text())
    seen = 0
    for release, case in _cases("eagle3/drafter context 2048"):
        draft = (case["config"] or {}).get("draft")
        if draft is None or draft.get("max_position_embeddings") is None:
            continue
        served = case["engine_args"]["max_model_len"]
        v1 = choose(CONTEXT_ROWS, "vllm", release, "v1", drafter, served)
        # V1's gate, until 0.34.0 removed the runner (no row then)
        has_v1 = Version(release) < Version("0.34.0")
        assert draft["max_model_len"] == v1.draft_length == 2048 and v1.collapses == has_v1, (release, draft)
        raised = draft["max_position_embeddings"] >= served
        assert raised == (Version(release) >= Version("0.27.0")), (release, draft)
        mrv2 = choose(CONTEXT_ROWS, "vllm", release, "mrv2", drafter, served)
        if Version(release) >= Version("0.12.0"):
            assert mrv2.collapses == (not raised), (release, mrv2.row)
        seen += 1
    assert seen >= len(RECORDS) - 10


def test_the_page_is_the_records_rendered():
    """docs/draft-settings.md is the records rendered (`make docs`), never typed."""
    from engines.draft_settings import render

    page = Path(__file__).resolve().parents[1] / "docs" / "draft-settings.md"
    assert page.read_text() == render(), "docs/draft-settings.md is stale: run `make docs`"


def test_the_eagle3_gate_refuses_exactly_where_the_table_says():
    """vLLM's eagle3 model_type gate, executed in every release (the case `eagle3/gate <model_type>`: the
    release's own create_engine_config on a target of that type): it refuses a target of each family the table
    says it refused at the config check (taps.GROUPS, `refused_at="config"`) before the release the table says
    serves it, and from that release on lets it through. The capture records take this answer for those families
    (model_code.gate_answer), so their refusal is the release's code, executed, not read."""
    from engines.draft_settings import GATED
    from engines.model_code import GATE_WORDS

    from eaglewire.engines.vllm.taps import GROUPS

    groups = {g.name: g for g in GROUPS if g.refused_at == "config"}
    assert set(groups) == set(GATED)
    seen = {True: 0, False: 0}
    for release, case in _cases("eagle3"):
        if not case["name"].startswith("eagle3/gate "):
            continue
        family = case["name"].removeprefix("eagle3/gate ")
        refused = case["error"] is not None and GATE_WORDS in case["error"]["message"]
        assert refused == (Version(release) < Version(groups[family].usable_from)), (
            release,
            family,
            case["error"],
        )
        seen[refused] += 1
    assert seen[True] and seen[False], seen


def test_every_family_on_v0_is_decided_where_the_table_says():
    """Each V0 release launches a target of every other family on V0 (`eagle3/V0 target <family>`): the eagle3 gate
    refuses it at the config check, or lets it through to V0's draft build, which refuses the EAGLE-3 head's fc at
    load. The table's V0 row names exactly the families the gate lets through (Llama-4: its text model_type
    `llama4_text` contains "llama"), the record covers V0 for every family it decided, and a CPU launch of one
    (V0 only, before 0.9.1) gets that answer from check."""
    from engines.draft_settings import V0_TARGETS

    v0_row = next(r for r in ROWS if r.key == "vllm-llama-v0")
    seen = set()
    for path in RECORDS:
        release, rec = _release(path), _record(path)
        if Version(release) >= Version("0.10.0"):
            continue
        cases = {
            c["name"].removeprefix("eagle3/V0 target "): c for c in rec["cases"] if "/V0 target " in c["name"]
        }
        assert set(cases) == set(V0_TARGETS), release
        covered = {c["runner"]: set(c["families"]) for c in rec["covers"]}
        for family, case in cases.items():
            gated = case["error"] is not None and "is only supported for" in case["error"]["message"]
            head = ((case["built"] or {}).get("head_load") or {}).get("loaded") is False
            assert gated != head, (release, family, case["error"], case["built"])
            assert (family in v0_row.models) == head, (release, family)
            assert family in covered["v0"], (release, family)
            if Version(release) < Version("0.9.1"):  # a CPU runs V0 only: check's row is V0's or the refusal
                row = serving_row(parse_spec(f"vllm=={release}"), family, "cpu").match.row
                assert row.rule is Rule.UNSUPPORTED and (row.key == v0_row.key) == head, (
                    release,
                    family,
                    row.key,
                )
            seen.add((family, "head" if head else "gate"))
    assert ("llama4", "head") in seen and ("qwen2", "gate") in seen, seen
