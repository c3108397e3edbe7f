"""The lm_head each engine release scores the draft with (rules/draft_weights.py HEAD_ROWS), in `check`, in `test
--engine`'s walk and in `doctor`: a drafter's own head where the release keeps it, the target's where it replaces
or lends it, a refusal at load or a head nothing filled as a problem."""

from __future__ import annotations

import json

import pytest
import torch
from real_engine.draft_head import write_drafters
from safetensors.torch import load_file, save_file

from eaglewire import zoo
from eaglewire.engines.draft_weights import HEAD_ROWS, draft_head, head_cases
from eaglewire.errors import InputError
from eaglewire.jobs.pair import load_pair
from eaglewire.targets import load_target

pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")

NULL, ABSENT, MISSING = {"vocab-null", "full-vocab"}, {"vocab-absent", "full-vocab"}, {"head-missing"}


@pytest.mark.parametrize(
    ("engine", "version", "cases", "head"),
    [("sglang", "0.4.5", NULL, "fails"), ("sglang", "0.5.1.post3", NULL, "fails"), ("sglang", "0.5.2", NULL, "target"),
     ("sglang", "0.5.23", NULL, "target"), ("sglang", "0.5.23", ABSENT, "fails"), ("sglang", "0.4.5", MISSING, "unloaded"),
     ("sglang", "0.5.23", {"tied", "vocab-absent"}, "embedding"), ("sglang", "0.5.23", {"d2t", "full-vocab"}, "own"),
     ("vllm", "0.8.5", NULL, "fails"), ("vllm", "0.10.2", ABSENT, "fails"), ("vllm", "0.11.0", NULL, "target"),
     ("vllm", "0.11.0", {"full-vocab"}, "target"), ("vllm", "0.11.0", MISSING, "unloaded"),
     ("vllm", "0.11.1", NULL, "own"), ("vllm", "0.11.1", MISSING, "target"), ("vllm", "0.10.2", MISSING, "unloaded"),
     ("vllm", "0.29.0", {"d2t", "full-vocab"}, "own"), ("vllm", "0.30.0", {"d2t", "full-vocab"}, "fails"),
     ("vllm", "0.32.0", {"tied"}, "own"), ("trtllm", "1.2.1", NULL, "own")],
)  # fmt: skip
def test_each_release_scores_with_the_head_its_rows_say(engine, version, cases, head):
    choice = draft_head(engine, version, cases)
    assert choice.head == head, (engine, version, cases, choice)
    assert head == "own" or (choice.row is not None and choice.row.source)


def test_every_row_decides_some_drafter():
    """No row is shadowed by an earlier one of its engine for every release it covers."""
    for row in HEAD_ROWS:
        cases = set(row.case.split("+"))
        lo = row.versions.split(",")[0].lstrip(">=")
        assert draft_head(row.engine, lo, cases).row == row, row.name


def test_the_cases_are_read_from_the_checkpoint(tmp_path):
    copies = write_drafters(tmp_path)
    cfg = {n: json.loads((d / "config.json").read_text()) for n, d in copies.items()}
    assert head_cases(cfg["own-head"], True, False, 4096) == {"vocab-null", "full-vocab"}
    assert head_cases(cfg["no-head"], False, False, 4096) == {"vocab-null", "full-vocab", "head-missing"}
    assert head_cases(cfg["own-head-no-vocab-key"], True, False, 4096) == {"vocab-absent", "full-vocab"}
    assert head_cases(cfg["own-head-vocab-map"], True, True, 4096) == {"d2t", "full-vocab"}
    zoo_cfg = json.loads((zoo.drafter_dir("default") / "config.json").read_text())
    assert head_cases(zoo_cfg, True, True, 2048) == {"d2t"}


def test_the_walk_scores_with_the_head_the_release_feeds(tmp_path):
    copies = write_drafters(tmp_path)
    target = load_target(zoo.target_dir())
    head = target.lm_head().float()
    sg = load_pair(zoo.target_dir(), copies["own-head"], engine="sglang==0.5.23")
    vl = load_pair(zoo.target_dir(), copies["own-head"], engine="vllm==0.32.0", platform="cpu")
    assert (
        torch.equal(sg.drafter.lm_head.weight.float(), head) and "sglang.eagle3-head-from-target" in sg.basis
    )
    assert not torch.equal(vl.drafter.lm_head.weight.float(), head)
    lent = load_pair(zoo.target_dir(), copies["no-head"], engine="vllm==0.32.0", platform="cpu")
    assert torch.equal(lent.drafter.lm_head.weight.float(), head) and "(the drafter has none)" in lent.basis
    with pytest.raises(InputError, match="refuses this drafter at load: AttributeError"):
        load_pair(zoo.target_dir(), copies["own-head-no-vocab-key"], engine="sglang==0.5.23")
    with pytest.raises(InputError, match="draft_id_to_target_id"):
        load_pair(zoo.target_dir(), copies["own-head-vocab-map"], engine="vllm==0.32.0", platform="cpu")


@pytest.mark.parametrize(
    ("copy", "engine", "code", "severity"),
    [("own-head", "sglang==0.5.23", "draft-head-replaced", "warning"),
     ("own-head-no-vocab-key", "sglang==0.5.23", "draft-head-refused", "problem"),
     ("no-head", "vllm==0.10.2", "draft-head-refused", "problem"),
     ("own-head-vocab-map", "vllm==0.32.0", "draft-head-refused", "problem"),
     ("own-head", "vllm==0.32.0", None, None)],
)  # fmt: skip
def test_check_reports_the_head_as_a_finding(tmp_path, copy, engine, code, severity):
    from eaglewire.jobs.check import check

    drafter = write_drafters(tmp_path)[copy]
    rep = check(drafter, zoo.target_dir(), [engine])
    found = [f for v in rep.verdicts for f in v.findings if f.code.startswith("draft-head")]
    if code is None:
        assert not found, found
    else:
        assert [(f.code, f.severity) for f in found] == [(code, severity)], found
        assert rep.has_problem == (severity == "problem")


def flipped(tmp_path):
    """A full-vocabulary drafter whose own lm_head is the negated target head and whose final norm is negated: its
    own head scores exactly as the target's head scores the zoo drafter; the target's head in its place scores the
    negated logits (a head trained for another space: acceptance collapses)."""
    d = write_drafters(tmp_path)["own-head"]
    t = load_file(d / "model.safetensors")
    t["norm.weight"] = -t["norm.weight"]
    t["lm_head.weight"] = -load_target(zoo.target_dir()).lm_head().clone().to(t["lm_head.weight"].dtype)
    save_file(t, d / "model.safetensors", metadata={"format": "pt"})
    return d


def test_doctor_finds_a_replaced_head_that_collapses(tmp_path):
    from eaglewire.jobs.doctor import DoctorOptions, doctor

    opts = DoctorOptions(
        engine="sglang==0.5.23", data=zoo.held_out_samples, samples=4, steps=3, search="never"
    )
    rep = doctor(flipped(tmp_path), zoo.target_dir(), opts)
    served, own = rep.evals["served"], rep.evals["served-own-lm_head"]
    assert own.acc[0] > served.acc[0] + 0.3, (served.acc, own.acc)
    problem = [p for p in rep.problem_list if p.code == "head-replaced"]
    assert problem and "set draft_vocab_size" in problem[0].message, rep.problems
