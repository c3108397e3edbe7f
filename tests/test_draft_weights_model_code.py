"""Draft-weights records (tests/engines/draft_weights.py, draft_weights_sglang.py) against the embedding and head
rows: per vLLM release, the embedding and lm_head its own EagleProposer gave each drafter copy, and per SGLang
release what its loader and EAGLE worker gave it, are the ones `test --engine` walks.

Per record and copy the release answered "target" (the proposer put the target's module in the draft) or "own", or
failed at load. The rows' answer is jobs/pair's (`served_embedding`, `served_head`): where the copy's weights equal
the target's, both answers compute the same and either agrees. A load failure is a head the rows call refused
(`fails`), or the architecture name the release does not register (engines/vllm/structure.py ROUTES).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
import torch
from engines.draft_settings import ARTEFACTS as DRAFT_SETTINGS_ARTEFACTS
from engines.draft_weights import OUT, write_copies
from engines.draft_weights_sglang import OUT as SGLANG_OUT
from engines.draft_weights_sglang import write_copies as write_sglang_copies
from engines.model_code import releases
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from real_engine.engine import files_sha256

from eaglewire import zoo
from eaglewire.engines.vllm.structure import ROUTES
from eaglewire.formats import read_drafter
from eaglewire.jobs.pair import served_embedding, served_head
from eaglewire.rules.draft_weights import REFUSED
from eaglewire.targets import load_target

RECORDS = sorted(OUT.glob("vllm-*.json"))
NO_LOAD = {
    "0.9.1",
    "0.9.1.post2",
}  # every copy stops at a probe artefact (ARTEFACTS): the record makes no claim
# the release's registry refusing the drafter's architecture name: at the loader (0.9.x-0.10.0) or in the
# speculative config's validation (0.10.1)
UNREGISTERED = ("Cannot find model module", "are not supported for now")
# errors of the CPU probe, not of the release's decision: no claim (0.9.1's CPU platform picks no V1 attention
# backend for the draft's layer; CUDA-only checks)
ARTEFACTS = ("Invalid attention backend for None", *DRAFT_SETTINGS_ARTEFACTS)


def _release(path: Path) -> str:
    return path.name[len("vllm-") : -len(".json")]


@cache
def _record(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> dict[str, Path]:
    return write_copies(tmp_path_factory.mktemp("draft-weights"))


@pytest.fixture(scope="module")
def target():
    return load_target(zoo.target_dir(), dtype=torch.float32)


def _routed(arch: str, release: str) -> bool:
    spec = dict(ROUTES)[arch]
    return any(SpecifierSet(s).contains(Version(release), prereleases=True) for s in spec)


def test_records_exist_for_the_releases_around_every_row_boundary():
    have = {_release(p) for p in RECORDS}
    wanted = {"0.9.1", "0.10.2", "0.11.0", "0.11.1", "0.30.0", "0.33.0"} & set(releases("vllm"))
    assert wanted <= have, sorted(wanted - have)


@pytest.mark.parametrize("path", RECORDS, ids=[_release(p) for p in RECORDS])
def test_a_record_answers_for_the_copies_it_names(path, copies):
    rec = _record(path)
    assert rec["engine"] == f"vllm=={_release(path)}" == f"vllm=={rec['provenance']['vllm']}"
    assert set(rec["results"]) == set(copies)
    assert rec["drafters"]["sha256"] == {n: files_sha256(p) for n, p in copies.items()}
    assert rec["drafters"]["target_sha256"] == files_sha256(zoo.target_dir())


@pytest.mark.parametrize("path", RECORDS, ids=[_release(p) for p in RECORDS])
def test_the_release_gives_the_draft_what_the_rows_say(path, copies, target):
    release, engine = _release(path), f"vllm=={_release(path)}"
    answered = 0
    for name, got in _record(path)["results"].items():
        ckpt = read_drafter(copies[name])
        arch = ckpt.config["architectures"][0]
        error = got["error"]
        if error is not None and any(a in error["message"] for a in ARTEFACTS):
            continue
        if error is not None and any(u in error["message"] for u in UNREGISTERED):
            assert not _routed(arch, release), (name, error)
            continue
        assert _routed(arch, release), (
            name,
            "the release loaded an architecture the table says it does not route",
        )
        head, _ = served_head(ckpt, target, engine)
        if error is not None:
            assert head in REFUSED, (name, head, error)
            continue
        _agrees(name, got, head, ckpt, target, engine)
        answered += 1
    assert answered or release in NO_LOAD, f"{path.name}: no copy loaded"


def _agrees(name: str, got: dict, head: str, ckpt, target, engine: str) -> None:
    """A loaded copy: the embedding and lm_head the release gave it are the rows' (either, where the copy's own
    weights equal the target's: both compute the same)."""
    assert head not in REFUSED or head == "unloaded", (name, head, got)
    embedding, _ = served_embedding(ckpt, target, engine)
    same_embedding = torch.equal(
        ckpt.tensors["embed_tokens.weight"].float(), target.input_embedding().float()
    )
    assert got["embedding"] == embedding or same_embedding, (name, got, embedding)
    own_head = ckpt.tensors.get("lm_head.weight")
    same_head = (
        own_head is not None
        and own_head.shape == target.lm_head().shape
        and torch.equal(own_head.float(), target.lm_head().float())
    )
    want_head = "own" if head == "unloaded" else head  # an unfilled head is still the draft's own module
    assert got["lm_head"] == want_head or same_head, (name, got, head)


# ---- SGLang: the release's loader and its EAGLE worker's sharing code (tests/engines/draft_weights_sglang.py) ----

SGLANG_RECORDS = sorted(SGLANG_OUT.glob("sglang-*.json"))


@pytest.fixture(scope="module")
def sglang_copies(tmp_path_factory) -> dict[str, Path]:
    return write_sglang_copies(tmp_path_factory.mktemp("draft-weights-sglang"))


def _sglang_release(path: Path) -> str:
    return path.name[len("sglang-") : -len(".json")]


def test_sglang_records_exist_around_every_row_boundary():
    have = {_sglang_release(p) for p in SGLANG_RECORDS}
    wanted = {"0.4.5", "0.5.1.post3", "0.5.2", "0.5.23"} & set(releases("sglang"))
    assert wanted <= have, sorted(wanted - have)


@pytest.mark.parametrize("path", SGLANG_RECORDS, ids=[_sglang_release(p) for p in SGLANG_RECORDS])
def test_the_sglang_release_gives_the_draft_what_the_rows_say(path, sglang_copies, target):
    release = _sglang_release(path)
    rec = _record(path)
    assert rec["engine"] == f"sglang=={release}" == f"sglang=={rec['provenance']['sglang']}"
    assert set(rec["results"]) == set(sglang_copies)
    assert rec["drafters"]["sha256"] == {n: files_sha256(p) for n, p in sglang_copies.items()}
    engine, answered = f"sglang=={release}", 0
    for name, got in rec["results"].items():
        ckpt = read_drafter(sglang_copies[name])
        head, _ = served_head(ckpt, target, engine)
        if got["error"] is not None:  # the release refused the copy at load: a head the rows call refused
            assert got["error"]["stage"] == "load" and head in REFUSED, (name, head, got["error"])
            continue
        _agrees(name, got, head, ckpt, target, engine)
        answered += 1
    assert answered, f"{path.name}: no copy loaded"
