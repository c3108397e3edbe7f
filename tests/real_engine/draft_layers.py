"""A config that declares more decoder layers than the weights hold: what the release's draft computes, run.

SpecForge#129 and configs copied from the target: `num_hidden_layers` above the layers the checkpoint holds. From
vLLM 0.11.1 the EAGLE-3 head builds a layer per configured count and its load_weights returns nothing, so the
loader's check that every parameter loaded is skipped (the `draft-layers-unloaded` row). Two copies of the zoo's
default drafter, weights untouched (one layer), config.json saying 2 and saying the target's 8, are served beside
the zoo target with K = 3. The walk of the layer the weights hold is the trained drafter's; a layer whose projections
were zero would leave it unchanged (its attention and MLP add nothing to the residual), so the engine's counters
equal that walk only if the unloaded layers held zeros. The record (`tests/real_engine/records/vllm-V-cpu-draft-
layers.json`) is replayed by tests/test_draft_layers_record.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from eaglewire import zoo
from eaglewire.jobs.check import check_job
from eaglewire.jobs.evaluate import evaluate
from eaglewire.jobs.pair import load_pair

from .cases import walk_counters
from .draft_embedding import K, default_copies, serve_copies

COPIES = {"config-2-layers": 2, "config-target-layers": None}  # None: the target's own layer count


def write_drafters(root: Path) -> dict[str, Path]:
    """The default drafter with num_hidden_layers raised in config.json alone (module docstring)."""
    layers = json.loads((zoo.target_dir() / "config.json").read_text())["num_hidden_layers"]
    out = default_copies(root, COPIES)
    for name, d in out.items():
        cfg = json.loads((d / "config.json").read_text())
        cfg["num_hidden_layers"] = COPIES[name] or layers
        (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return out


def walks(drafter: Path, chain_items, engine: str) -> dict:
    """The walk of the layers the weights hold, and what `check` says of the copy at this release."""
    pair = load_pair(zoo.target_dir(), drafter, None, engine, "float32", "cpu", platform="cpu")
    walk = walk_counters(evaluate(pair.drafter, chain_items, pair.wiring, K, "chain").walks[K - 1])
    rep = check_job(drafter, zoo.target_dir(), [engine], platform="cpu")
    codes = sorted({f.code for v in rep.verdicts for f in v.findings})
    return {"walks": {"layers-held": walk}, "row_says": "unloaded" if "draft-layers-unloaded" in codes else "held",
            "check_findings": codes, "taps": str(pair.wiring)}  # fmt: skip


def run(python: Path, workdir: Path, engine: str) -> dict:
    """Serve both copies; the record."""
    return serve_copies(
        python, workdir, engine, write_drafters(workdir / "drafters"),
        lambda d, items: walks(d, items, engine),
        what="the zoo's default drafter (one layer in its weights) beside the zoo target, its config.json saying 2 "
        "layers and saying the target's 8: whether the release's draft is the layer the weights hold",
    )  # fmt: skip
