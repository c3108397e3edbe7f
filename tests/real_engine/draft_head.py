"""A drafter whose lm_head the release may replace or refuse: which head the release's draft scores with, run.

Copies of the zoo's default drafter over the full vocabulary (its reduced-vocabulary head and vocabulary map
dropped), each a shape an engine decides the head from (rules/draft_weights.py CASES):

- `own-head`: a seeded random lm_head of the trained one's scale, and `"draft_vocab_size": null` in config.json;
- `no-head`: no lm_head at all, `"draft_vocab_size": null`;
- `own-head-no-vocab-key`: the own-head copy with no draft_vocab_size key;
- `own-head-vocab-map`: the own-head copy with `draft_vocab_size` equal to the vocabulary and an identity d2t (as
  converters that always write the map leave it).

The drafter's hidden state was trained against a head copied from the target's rows, so the walk under the
target's head is far from the walk under the random own one: the engine's counters decide which head it fed.
Each copy is served beside the zoo target with K = 3 on the tier's prompts. The record
(`tests/real_engine/records/vllm-V-cpu-draft-head.json`) is replayed by tests/test_draft_weights_records.py; the SGLang
tier serves the same copies (tests/sglang_engine/test_sglang_draft_weights.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from eaglewire import zoo
from eaglewire.formats import read_drafter
from eaglewire.jobs.evaluate import evaluate
from eaglewire.jobs.pair import drafter_for, feed_wiring, served_head
from eaglewire.targets import load_target

from .cases import walk_counters
from .draft_embedding import K, serve_copies

SEED = 0
COPIES = ("own-head", "no-head", "own-head-no-vocab-key", "own-head-vocab-map")


def write_drafters(root: Path) -> dict[str, Path]:
    """The full-vocabulary copies of the default drafter (module docstring)."""
    src = zoo.drafter_dir("default")
    tensors = load_file(src / "model.safetensors")
    trained = tensors.pop("lm_head.weight")
    tensors.pop("d2t"), tensors.pop("t2d")
    vocab, hidden = tensors["embed_tokens.weight"].shape
    g = torch.Generator().manual_seed(SEED)
    own = (torch.randn((vocab, hidden), generator=g) * trained.float().std()).to(trained.dtype)
    out = {}
    for name in COPIES:
        d = root / name
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(src, d)
        cfg = json.loads((d / "config.json").read_text())
        cfg.pop("draft_vocab_size")
        if name in ("own-head", "no-head"):
            cfg["draft_vocab_size"] = None
        elif name == "own-head-vocab-map":
            cfg["draft_vocab_size"] = vocab
        (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
        mine = dict(tensors) if name == "no-head" else {**tensors, "lm_head.weight": own}
        if name == "own-head-vocab-map":
            mine["d2t"] = torch.zeros(vocab, dtype=torch.long)
        save_file(mine, d / "model.safetensors", metadata={"format": "pt"})
        out[name] = d
    return out


def walks(drafter: Path, chain_items, engine: str, dtype: torch.dtype = torch.float32, target=None) -> dict:
    """The walk's counts at K under each head the copy can score with (its own, where it has one, and the
    target's), and the head the release's row says it scores with (`served_head`: "fails" where it refuses)."""
    target = target or load_target(zoo.target_dir(), dtype=dtype)
    ckpt = read_drafter(drafter)
    wiring, _ = feed_wiring(ckpt, target, None, engine, "cpu")
    heads = ("own", "target") if "lm_head.weight" in ckpt.tensors else ("target",)
    out = {}
    for head in heads:
        model = drafter_for(ckpt, target, dtype, head=head)
        out[head] = evaluate(model, chain_items, wiring, K, "chain").walks[K - 1]
    said, note = served_head(ckpt, target, engine)
    return {"walks": out, "row_says": said, "note": note, "taps": str(wiring)}


def run(python: Path, workdir: Path, engine: str) -> dict:
    """Serve the copies in vLLM's CPU build; the record."""

    def predicted(d: Path, items) -> dict:
        p = walks(d, items, engine)
        return {**p, "walks": {h: walk_counters(w) for h, w in p["walks"].items()}}

    return serve_copies(
        python, workdir, engine, write_drafters(workdir / "drafters"), predicted,
        what="the zoo's default drafter over the full vocabulary, beside the zoo target, with a random lm_head of "
        "its own (draft_vocab_size null, and absent) and with none: which head the release's draft scores with",
    )  # fmt: skip
