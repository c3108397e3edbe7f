"""The draft's context per engine release and runner (rules/draft_context.py, engines/vllm/draft.py CONTEXT_ROWS):
how long a sequence each release drafts for, what it verifies past that, the walk that follows (metrics.ContextGate),
and `check`, `test --engine` and `doctor` saying so: a drafter whose context is shorter than the served length is
a problem wherever the release stops drafting (or drafts garbage) past it, with the config value that lifts it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from eaglewire import zoo
from eaglewire.engines.draft_weights import draft_context
from eaglewire.jobs.check import check
from eaglewire.jobs.pair import load_pair
from eaglewire.metrics import ContextGate, WalkCounts, walk
from eaglewire.rules.draft_context import drafter_layer_config, model_length

SHORT = {"architectures": ["LlamaForCausalLMEagle3"], "max_position_embeddings": 2048}


@pytest.mark.parametrize(
    ("version", "runner", "row", "past", "batch"),
    [("0.8.5", "v1", "vllm.draft-context-unchecked", "garbage", False),
     ("0.10.2", "v1", "vllm.draft-context-unchecked", "garbage", False),
     ("0.11.0", "v1", "vllm.draft-context-stale", "stale", True),
     ("0.11.0.post2", "v1", "vllm.draft-context-stale", "stale", True),
     ("0.11.1", "v1", "vllm.draft-context-no-drafts", "nothing", True),
     ("0.13.0", "v1", "vllm.draft-context-no-drafts", "nothing", True),
     ("0.14.0", "v1", "vllm.draft-context-zeros-async", "zeros", True),
     ("0.19.1", "v1", "vllm.draft-context-zeros-async", "zeros", True),
     ("0.20.0", "v1", "vllm.draft-context-zeros", "zeros", True),
     ("0.32.0", "v1", "vllm.draft-context-zeros", "zeros", True),
     ("0.12.0", "mrv2", "vllm.draft-context-mrv2-table", "garbage", False),
     ("0.26.0", "mrv2", "vllm.draft-context-mrv2-table", "garbage", False),
     ("0.27.0", "mrv2", "vllm.draft-context-mrv2", "drafts", False),
     ("0.32.0", "mrv2", "vllm.draft-context-mrv2", "drafts", False)],
)  # fmt: skip
def test_each_release_and_runner_drafts_past_the_context_as_its_row_says(version, runner, row, past, batch):
    choice = draft_context("vllm", version, runner, SHORT, 131072)
    assert choice.row is not None and choice.row.name == row and choice.row.source
    assert (choice.row.past, choice.row.batch, choice.draft_length) == (past, batch, 2048)
    assert choice.collapses == (past != "drafts")
    gate = choice.gate()
    assert (gate is None) == (past == "drafts")
    if gate is not None:
        assert gate.limit == 2048 and gate.batch == batch
        assert gate.placeholder == {"zeros": 0, "nothing": None, "stale": -1, "garbage": -1}[past]


def test_a_drafter_as_long_as_the_served_length_is_never_gated():
    assert draft_context("vllm", "0.32.0", "v1", SHORT, 2048).gate() is None
    assert draft_context("vllm", "0.32.0", "v1", SHORT, 1024).draft_length == 1024  # min(drafter's, served)
    assert (
        draft_context("vllm", "0.32.0", "v1", {"architectures": ["X"]}, 4096).gate() is None
    )  # no length key


@pytest.mark.parametrize(
    ("config", "length"),
    [({"max_position_embeddings": 2048}, 2048),
     ({"max_position_embeddings": 4096, "seq_length": 2048}, 2048),  # the smallest key wins
     ({"max_position_embeddings": 2048, "rope_scaling": {"rope_type": "linear", "factor": 4.0}}, 8192),
     ({"max_position_embeddings": 2048, "rope_scaling": {"type": "dynamic", "factor": 2}}, 4096),
     ({"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, 131072),
     ({"max_position_embeddings": 163840, "rope_scaling": {"type": "yarn", "factor": 40}}, 163840),
     ({"vocab_size": 10}, None)],
)  # fmt: skip
def test_the_length_is_derived_as_vllm_derives_it(config, length):
    assert model_length(config) == length


def test_a_speculators_drafter_reads_its_length_from_the_layer_config():
    cfg = {"speculators_model_type": "eagle3", "transformer_layer_config": {"max_position_embeddings": 4096}}
    assert model_length(drafter_layer_config(cfg)) == 4096
    assert draft_context("vllm", "0.32.0", "v1", cfg, 8192).gate() == ContextGate(4096, 0, True)


@pytest.mark.parametrize(
    ("placeholder", "drafts", "accepted"),
    # drafts always right; the gate (17) closes after two verifies (sequence 10, then 13, then 16 + k > 17): from
    # the last token 16 to 24, eight verifies of zeros or of drafts matching nothing, or eight plain decode steps
    [(0, 10, [2, 2]), (None, 2, [2, 2]), (-1, 10, [2, 2])],
)
def test_the_walk_verifies_the_placeholder_past_the_gate(placeholder, drafts, accepted):
    k, path = 2, list(range(1, 41))
    draft = [[path[r + j] if r + j < len(path) else -2 for r in range(len(path) - 2)] for j in range(k)]
    span = (10, 24)
    gated = walk(draft, path, span, k, ContextGate(17, placeholder, False))
    assert walk(draft, path, span, k).accepted_per_pos == [
        5,
        5,
    ]  # ungated: five verifies, every draft accepted
    assert (gated.drafts, gated.accepted_per_pos) == (drafts, accepted)


def test_zero_drafts_are_accepted_where_the_target_says_token_zero():
    k, path = 2, [5, 0, 0, 7, 0, 0, 9, 9, 9, 9, 9, 9]
    draft = [[-1] * (len(path) - 2) for _ in range(k)]
    w = walk(draft, path, (2, 10), k, ContextGate(1, 0, False))  # closed from the start: zeros every verify
    assert isinstance(w, WalkCounts) and w.accepted_per_pos[0] >= 1


pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


@pytest.fixture
def short_drafter(tmp_path):
    from real_engine.draft_context import write_drafters

    return write_drafters(tmp_path)[128]


def _codes(rep) -> dict:
    return {
        v.engine: [(f.severity, f.code) for f in v.findings if f.code == "draft-context"]
        for v in rep.verdicts
    }


def test_check_calls_it_a_problem_where_the_release_stops_drafting(short_drafter):
    rep = check(short_drafter, zoo.target_dir(), ["vllm==0.32.0", "sglang==0.5.23", "sglang==0.4.10"],
                platform="cpu")  # fmt: skip
    # vLLM 0.9.2 and 0.15.0 on CUDA: their CPU builds cannot speculate at all (engines/vllm/serving.py, observed)
    cuda = check(short_drafter, zoo.target_dir(), ["vllm==0.15.0", "vllm==0.9.2"], platform="cuda")
    codes = _codes(rep) | _codes(cuda)
    for engine in (
        "vllm==0.32.0 v1",
        "vllm==0.15.0 v1",
        "vllm==0.9.2 v1",
        "sglang==0.5.23",
        "sglang==0.4.10",
    ):
        assert codes[engine] == [("problem", "draft-context")], (engine, codes)
    msg = next(f.message for v in rep.verdicts for f in v.findings if f.code == "draft-context")
    assert "max_position_embeddings to 2048" in msg and "--max-model-len 128" in msg
    sg = next(f.message for v in rep.verdicts if v.engine == "sglang==0.5.23" for f in v.findings
              if f.code == "draft-context")  # fmt: skip
    assert "ValueError" in sg and "--context-length 128" in sg
    # each verdict fails by the row, so it rests on the row's evidence, not on the capture record's (issue 21 point 7)
    levels = {v.engine: (v.status, v.evidence["level"], v.evidence.get("decided_by"))
              for v in rep.verdicts + cuda.verdicts}  # fmt: skip
    assert levels["vllm==0.32.0 v1"] == ("fails", "engine", "draft-context")  # the 0.32.0 CPU engine's record
    assert levels["sglang==0.5.23"] == (
        "fails",
        "model-code",
        "draft-context",
    )  # the release's draft-settings
    assert levels["vllm==0.15.0 v1"] == ("fails", "read", "draft-context")  # its row was read only
    # the 0.20.0+ row was seen running at 0.26.0 and 0.32.0: at 0.20.0 it is read, and says where it was seen
    (v,) = check(short_drafter, zoo.target_dir(), ["vllm==0.20.0"], platform="cuda", runner="v1").verdicts
    assert (v.status, v.evidence["level"], v.evidence["decided_by"]) == ("fails", "read", "draft-context")
    said = v.evidence["basis"]
    assert "observed at another release: vllm-0.32.0-cpu-draft-context.json" in said and "the taps:" in said


def test_check_says_nothing_where_the_runner_drafts_on(short_drafter):
    rep = check(short_drafter, zoo.target_dir(), ["vllm==0.32.0"], platform="cuda", runner="mrv2")
    assert _codes(rep) == {"vllm==0.32.0 mrv2": []}
    rep = check(short_drafter, zoo.target_dir(), ["vllm==0.25.0"], platform="cuda", runner="mrv2")
    assert _codes(rep) == {"vllm==0.25.0 mrv2": [("problem", "draft-context")]}


def test_a_drafter_with_the_targets_context_is_not_flagged():
    rep = check(
        zoo.drafter_dir("default"), zoo.target_dir(), ["vllm==0.32.0", "sglang==0.5.23"], platform="cpu"
    )
    assert all(not c for c in _codes(rep).values())


def test_the_walk_test_engine_runs_is_gated(short_drafter):
    pair = load_pair(zoo.target_dir(), short_drafter, None, "vllm==0.32.0", "float32", "cpu", platform="cpu")
    assert pair.gate == ContextGate(128, 0, True) and "vllm.draft-context-zeros" in pair.basis
    mrv2 = load_pair(zoo.target_dir(), short_drafter, None, "vllm==0.32.0", "float32", "cpu", runner="mrv2")
    assert mrv2.gate is None
    assert load_pair(zoo.target_dir(), short_drafter, None, "sglang==0.5.23", "float32", "cpu").gate is None


def test_the_cli_test_and_check_say_it(short_drafter):
    run = [sys.executable, "-m", "eaglewire.cli"]
    out = subprocess.run([*run, "check", str(short_drafter), "--target", str(zoo.target_dir()), "--engine",
                          "vllm==0.32.0", "--platform", "cpu", "--json"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert "draft-context" in json.dumps(doc)
    got = subprocess.run([*run, "test", str(short_drafter), "--target", str(zoo.target_dir()), "--engine",
                          "vllm==0.32.0", "--platform", "cpu", "--samples", "2", "--no-teacher", "--json"],
                         capture_output=True, text=True)  # fmt: skip
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    assert "past the draft's context 128: K zero tokens verified" in report["basis"]
    gated = report["evaluations"]["chain"]["predicted_tau"]
    plain = subprocess.run([*run, "test", str(short_drafter), "--target", str(zoo.target_dir()), "--taps",
                            report["taps"], "--samples", "2", "--no-teacher", "--json"],
                           capture_output=True, text=True)  # fmt: skip
    assert gated[-1] < json.loads(plain.stdout)["evaluations"]["chain"]["predicted_tau"][-1]


def _lint(version: str, spec: dict, *extra: str, env: str = "") -> list:
    from eaglewire.jobs.lint import lint

    argv = [*([env] if env else []), "vllm", "serve", str(zoo.target_dir()), *extra, "--speculative-config",
            json.dumps({"method": "eagle3", "num_speculative_tokens": 3, **spec})]  # fmt: skip
    return [
        (c.rule, c.severity) for c in lint(argv, engine_version=version).changes if "context_gate" in c.rule
    ]


def test_lint_names_the_gate_per_runner(short_drafter):
    spec = {"model": str(short_drafter)}
    assert _lint("0.26.0", spec) == [
        ("vllm.draft_context_gate", "problem")
    ]  # both runners collapse before 0.27
    assert _lint("0.15.0", spec) == [("vllm.draft_context_gate", "problem")]  # V1 alone
    assert _lint("0.32.0", spec) == [("vllm.draft_context_gate_v1", "warning")]  # MRV2 drafts on from 0.27
    assert _lint("0.32.0", spec, env="VLLM_USE_V2_MODEL_RUNNER=0") == [("vllm.draft_context_gate", "problem")]
    assert _lint("0.32.0", spec, env="VLLM_USE_V2_MODEL_RUNNER=1") == []
    assert _lint("0.32.0", spec, "--max-model-len", "128", env="VLLM_USE_V2_MODEL_RUNNER=0") == []


def test_lint_flags_a_speculative_max_model_len_below_the_served_one():
    spec = {"model": str(zoo.drafter_dir("default")), "max_model_len": 1024}
    got = _lint("0.32.0", spec, "--max-model-len", "2K", env="VLLM_USE_V2_MODEL_RUNNER=0")
    assert got == [("vllm.draft_context_gate", "problem")]
    assert _lint("0.32.0", {**spec, "max_model_len": 2048}, "--max-model-len", "2K",
                 env="VLLM_USE_V2_MODEL_RUNNER=0") == []  # fmt: skip


def test_doctor_calls_it_a_problem_and_walks_the_fix_beside(short_drafter):
    out = subprocess.run([sys.executable, "-m", "eaglewire.cli", "doctor", str(short_drafter), "--target",
                          str(zoo.target_dir()), "--engine", "vllm==0.32.0", "--platform", "cpu", "--samples", "3",
                          "--json"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 1, out.stderr
    rep = json.loads(out.stdout)
    assert rep["verdict"] == "problem" and any(
        "max_position_embeddings to 2048" in p for p in rep["problems"]
    )
    served, full = rep["evaluations"]["served"], rep["evaluations"]["served-full-context"]
    assert served["predicted_tau"][-1] < full["predicted_tau"][-1]  # the doctor's prompts run past 128 tokens
    assert any("stops the drafter past 128 tokens" in n for n in rep["notes"])
