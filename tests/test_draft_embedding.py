"""What each engine release feeds the draft as its token embedding (rules/draft_weights.py), and `test --engine`
walking it: a drafter whose own embedding differs from the target's computes with the target's where the release
replaces it, with its own elsewhere."""

from __future__ import annotations

import pytest
import torch
from real_engine.draft_embedding import write_drafters

from eaglewire import zoo
from eaglewire.engines.draft_weights import ROWS, draft_embedding
from eaglewire.jobs.pair import load_pair

pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


@pytest.mark.parametrize(
    ("engine", "version", "expected"),
    [("vllm", "0.8.5", "own"), ("vllm", "0.9.0", "target"), ("vllm", "0.10.2.post2", "target"),
     ("vllm", "0.11.0", "target"), ("vllm", "0.11.1", "own"), ("vllm", "0.32.0", "own"),
     ("sglang", "0.4.5", "target"), ("sglang", "0.5.23", "target")],
)  # fmt: skip
def test_each_release_feeds_the_embedding_its_row_says(engine, version, expected):
    choice = draft_embedding(engine, version, {"hidden_size": 384}, 384)
    assert choice.embedding == expected and choice.row is not None and choice.row.source


def test_a_drafter_narrower_than_the_target_keeps_its_own():
    """SGLang's set_embed returns early when target_hidden_size != hidden_size; vLLM compares the widths."""
    assert (
        draft_embedding("sglang", "0.5.23", {"hidden_size": 384, "target_hidden_size": 768}, 768).embedding
        == "own"
    )
    assert draft_embedding("vllm", "0.10.2", {"hidden_size": 384}, 768).embedding == "own"
    assert (
        draft_embedding("trtllm", "1.2.1", {"hidden_size": 384}, 384).row is None
    )  # nothing read: own assumed


def test_rows_do_not_overlap_per_engine():
    for engine in ("sglang", "vllm"):
        mine = [r for r in ROWS if r.engine == engine]
        for v in ("0.4.5", "0.8.5", "0.9.0", "0.11.0", "0.11.1", "0.5.23", "0.33.0"):
            assert sum(r.covers(v) for r in mine) <= 1, (engine, v)


def test_the_walk_computes_with_the_embedding_the_release_feeds(tmp_path):
    drafters = write_drafters(tmp_path)
    own = drafters["own-embedding"]
    old = load_pair(zoo.target_dir(), own, engine="vllm==0.10.2.post2", platform="cpu")
    new = load_pair(zoo.target_dir(), own, engine="vllm==0.32.0", platform="cpu")
    target_embed = old.target.input_embedding().float()
    assert torch.equal(old.drafter.embed_tokens.weight.float(), target_embed)
    assert not torch.equal(new.drafter.embed_tokens.weight.float(), target_embed)
    assert "vllm.eagle-embedding-from-target" in old.basis and "embedding" not in new.basis.split(";")[-1]
    sg = load_pair(zoo.target_dir(), own, engine="sglang==0.5.23")
    assert torch.equal(sg.drafter.embed_tokens.weight.float(), target_embed)


@pytest.mark.parametrize(("engine", "replaced"), [("vllm==0.10.2", True), ("vllm==0.32.0", False)])
def test_doctor_tests_the_draft_as_the_release_computes_it(tmp_path, engine, replaced):
    """doctor's served test uses the embedding the release feeds; where it replaces the drafter's own, the same
    taps with its own embedding are tested beside and the difference is reported (here the copy's own embedding
    is random, so the target's serves it better: a note, not a problem)."""
    from eaglewire.jobs.doctor import DoctorOptions, doctor

    own = write_drafters(tmp_path)["own-embedding"]
    opts = DoctorOptions(engine=engine, data=zoo.held_out_samples, samples=4, steps=3, search="never")
    rep = doctor(own, zoo.target_dir(), opts)
    assert ("served-own-embedding" in rep.evals) == replaced
    if replaced:
        served, mine = rep.evals["served"], rep.evals["served-own-embedding"]
        assert served.acc[0] > mine.acc[0] + 0.3, (served.acc, mine.acc)
        assert any("the target's serves it better" in n for n in rep.notes), rep.notes
        assert not [p for p in rep.problems if p.code == "embedding-replaced"]
