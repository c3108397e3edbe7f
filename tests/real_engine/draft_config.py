"""Draft config keys a release reads or does not, run: `architectures` missing, and `norm_before_residual` at the top
level or under `eagle_config`.

Copies of the zoo's default drafter (trained without norm_before_residual), weights untouched:
- `no-architectures`: config.json without `architectures` (the `architectures-missing` row: the release cannot
  route the draft, vllm PR #30987);
- `norm-before-residual-top`: `"norm_before_residual": true` at the top level (read from 0.10.1);
- `norm-before-residual-nested`: the same under `eagle_config` (never read: the `norm-before-residual` row).

Each is served beside the zoo target with K = 3; a copy that starts has its counters set beside the walk under each
hypothesis (the draft normalises before the residual, or not), so the engine's counters say which key it read.
The record (`tests/real_engine/records/vllm-V-cpu-draft-config.json`) is replayed by
tests/test_draft_config_record.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from eaglewire import zoo
from eaglewire.jobs.check import check_job
from eaglewire.jobs.evaluate import evaluate
from eaglewire.jobs.pair import drafter_for, load_pair

from .cases import walk_counters
from .draft_embedding import K, default_copies, serve_copies

COPIES = ("no-architectures", "norm-before-residual-top", "norm-before-residual-nested")


def write_drafters(root: Path) -> dict[str, Path]:
    """The copies (module docstring)."""
    out = default_copies(root, COPIES)
    for name, d in out.items():
        cfg = json.loads((d / "config.json").read_text())
        if name == "no-architectures":
            cfg.pop("architectures")
        elif name == "norm-before-residual-top":
            cfg["norm_before_residual"] = True
        else:
            cfg["eagle_config"] = {**cfg["eagle_config"], "norm_before_residual": True}
        (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return out


def walks(drafter: Path, chain_items, engine: str) -> dict:
    """The walk under each norm_before_residual reading, and what `check` says of the copy at this release:
    `row_says` "fails" (a problem at load), "norm-before-residual" (the key read) or "plain" (not read)."""
    rep = check_job(drafter, zoo.target_dir(), [engine], platform="cpu")
    codes = sorted({f.code for v in rep.verdicts for f in v.findings if f.severity == "problem"})
    if "architectures-missing" in codes:
        return {"walks": {}, "row_says": "fails", "check_findings": codes}
    pair = load_pair(zoo.target_dir(), drafter, None, engine, "float32", "cpu", platform="cpu")
    out = {}
    for name, flag in (("plain", False), ("norm-before-residual", True)):
        ckpt = pair.checkpoint.copy()
        ckpt.arch.norm_before_residual = flag
        model = drafter_for(ckpt, pair.target, torch.float32)
        out[name] = walk_counters(evaluate(model, chain_items, pair.wiring, K, "chain").walks[K - 1])
    said = "plain" if "norm-before-residual" in codes else "norm-before-residual"
    return {"walks": out, "row_says": said, "check_findings": codes, "taps": str(pair.wiring)}


def run(python: Path, workdir: Path, engine: str) -> dict:
    """Serve the copies; the record."""
    return serve_copies(
        python, workdir, engine, write_drafters(workdir / "drafters"),
        lambda d, items: walks(d, items, engine),
        what="the zoo's default drafter beside the zoo target with its config.json changed: no architectures; "
        "norm_before_residual true at the top level; the same under eagle_config: which the release reads",
    )  # fmt: skip
