"""DeepSeek-V4 on vLLM: its decoder carries manifold-constrained hyper-connection (mHC) streams, and its loop
captures id idx+1 after layer idx as the mean of the streams `mhc_post` reconstructs, never h0. The model-code records
run that loop at every release that serves it (capture_probe's mHC stand-ins: the release's own torch reference for
`mhc_post`), so `check` decides at 0.25.0-0.32.0, where no row covered the family and it said `unverified`."""

from __future__ import annotations

import pytest
from packaging.version import Version

from eaglewire.engines.observed import records
from eaglewire.jobs.check import check
from eaglewire.taps import Wiring
from eaglewire.targets import TargetInfo

from fixtures import config_only_drafter

ARCH, L = "DeepseekV4ForCausalLM", 61
FIRST = Version("0.25.0")  # the first release whose registry gives it an EAGLE-3 interface
VLLM = [r for r in records("model-code") if r["engine"].startswith("vllm==")]


def _release(rec: dict) -> Version:
    return Version(rec["engine"].split("==")[1])


@pytest.mark.parametrize("rec", VLLM, ids=[r["file"] for r in VLLM])
def test_every_release_runs_the_mhc_loop_or_records_the_refusal(rec):
    """From 0.25.0 both runners ran the loop and every case is the table's answer; before, the release refuses it
    (its registry, or its class has no EAGLE-3 interface: every case the engine's error), and no release leaves it
    in `not_run` but for a runner the release does not have."""
    entries = [f for f in rec["families"] if f["family"] == "deepseek_v4"]
    skipped = {k: why for k, why in rec["not_run"].items() if k.startswith("deepseek_v4 ")}
    runners = ("no Model Runner V2 in this release", "no V1 runner in this release")
    assert all(why.endswith(runners) for why in skipped.values()), skipped
    assert entries and all(f["claims"] == f["agree"] > 0 for f in entries), entries
    if _release(rec) >= FIRST:
        # both runners until 0.34.0 removed V1
        have = {"mrv2"} if _release(rec) >= _release({"engine": "vllm==0.34.0"}) else {"v1", "mrv2"}
        assert {f["runner"] for f in entries} == have, entries
        assert all(f["claims"] == f["agree"] > 0 and not f.get("refused") for f in entries), entries
        cases = [c for c in rec["cases"] if c[0] == ARCH]
        taps = {tuple(c[rec["columns"].index("forward_taps")] or ()) for c in cases}
        assert not any(0 in t for t in taps) and any(L in t for t in taps), taps  # never h0; h_L reachable
    else:  # (on a CPU the class fails at load first: tests/test_platform_classes.py)
        col = {c: i for i, c in enumerate(rec["columns"])}
        gpu = lambda c: "platform" not in col or not c[col["platform"]]  # noqa: E731
        cases = [c for c in rec["cases"] if c[col["arch"]] == ARCH and gpu(c)]
        assert all(f.get("refused") for f in entries if not f.get("platform")) or all(
            c[col["forward_taps"]] is None and "does not support EAGLE3" in c[col["error"]] for c in cases
        ), entries


@pytest.fixture(scope="module")
def drafter(tmp_path_factory):
    """A default-ids drafter (no ids in its config: the engine feeds its default, h2,h30,h58 at L=61)."""
    return config_only_drafter(tmp_path_factory.mktemp("drafter"), 129280)


TARGET = TargetInfo(ARCH, ARCH, "deepseek_v4", "deepseek_v4", L, 4096, 129280, source="test")


@pytest.mark.parametrize("version", ["0.25.1", "0.27.1", "0.30.0", "0.32.0"])
def test_check_decides_from_the_loop_it_ran(drafter, version):
    """Trained on the default taps: ok, resting on the release's model code, with no row assumed from 0.33."""
    (v,) = check(drafter, TARGET, [f"vllm=={version}"], Wiring.of([2, 30, 58]), platform="cuda").verdicts
    assert v.status == "ok", (v.engine, v.unknowns)
    assert not v.unknowns
    assert v.evidence["level"] == "model-code" and f"vllm-{version}-model-code.json" in v.evidence["basis"]
    assert v.row_key.startswith("vllm-deepseek_v4-")


def test_a_head_trained_on_the_embeddings_gets_one_state_fewer(tmp_path):
    """A drafter whose ids ask for h0 (id 0): the loop never captures it, so the drafter's fc gets fewer states than
    it takes, with no error at startup. The default runner at 0.27 is V1 (MoE, not yet listed for MRV2)."""
    d = config_only_drafter(tmp_path / "drafter", 129280, [0, 30, 58])
    (v,) = check(d, TARGET, ["vllm==0.27.0"], Wiring.of([0, 30, 58]), platform="cuda").verdicts
    assert v.status == "fails" and v.row_key == "vllm-deepseek_v4-v1-0.25.0-0.28.0"
    assert "h0" in v.served.failure and "fewer aux states" in v.served.failure
    assert v.evidence["level"] == "model-code"
