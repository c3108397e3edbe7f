"""A drafter whose own embedding differs from the target's: which one the release's draft computes with, run.

Two copies of the zoo's default drafter, identical but for `embed_tokens`: the trained one (a copy of the target's,
as SpecForge and speculators train them) and a seeded random one of the same scale. Each is served beside the zoo
target with K = 3 on the tier's prompts, and its engine counters are set beside the walk under each hypothesis: the
draft computes with its own embedding, or with the target's in its place (rules/draft_weights.py; the release's
row says which `test --engine` walks). For the random copy the two walks are far apart, so the engine's counters
decide which embedding it fed; for the trained copy both are the same walk. The record
(`tests/real_engine/records/vllm-V-cpu-draft-embedding.json`) is replayed by tests/test_draft_weights_records.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from eaglewire import __version__, zoo
from eaglewire.jobs.evaluate import evaluate
from eaglewire.jobs.pair import drafter_for, load_pair, served_embedding
from eaglewire.targets import load_target

from .cases import chain, engine_counters, walk_counters
from .engine import NEW_TOKENS, PROMPT_LEN, files_sha256, prompts, run_vllm, sha256_json

K = 3
SEED = 0
COPIES = ("trained-embedding", "own-embedding")


def default_copies(root: Path, names) -> dict[str, Path]:
    """A fresh copy of the zoo's default drafter under `root` per name (each copy's module then changes it)."""
    out = {}
    for name in names:
        d = root / name
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(zoo.drafter_dir("default"), d)
        out[name] = d
    return out


def write_drafters(root: Path) -> dict[str, Path]:
    """The default drafter as trained, and the same with a seeded random embedding of the trained one's scale."""
    out = default_copies(root, COPIES)
    tensors = load_file(out["own-embedding"] / "model.safetensors")
    e = tensors["embed_tokens.weight"]
    g = torch.Generator().manual_seed(SEED)
    tensors["embed_tokens.weight"] = (torch.randn(e.shape, generator=g) * e.float().std()).to(e.dtype)
    save_file(tensors, out["own-embedding"] / "model.safetensors", metadata={"format": "pt"})
    return out


def walks(drafter: Path, chain_items, engine: str) -> dict:
    """The walk's counters at K under each hypothesis, and the one the release's row says (`test --engine`)."""
    pair = load_pair(zoo.target_dir(), drafter, None, engine, "float32", "cpu", platform="cpu")
    ckpt = pair.checkpoint
    out = {}
    for embedding in ("own", "target"):
        model = drafter_for(ckpt, pair.target, torch.float32, embedding=embedding)
        out[embedding] = walk_counters(evaluate(model, chain_items, pair.wiring, K, "chain").walks[K - 1])
    said, _ = served_embedding(ckpt, pair.target, engine)
    return {"walks": out, "row_says": said, "taps": str(pair.wiring)}


def run(python: Path, workdir: Path, engine: str) -> dict:
    """Serve both copies; the record."""

    def predicted(d: Path, items) -> dict:
        return walks(d, items, engine)

    return serve_copies(
        python, workdir, engine, write_drafters(workdir / "drafters"), predicted,
        what="the zoo's default drafter beside the zoo target, with its trained embedding (the target's) and with "
        "a random one: which embedding the release's draft computes with",
    )  # fmt: skip


def serve_copies(
    python: Path, workdir: Path, engine: str, drafters: dict[str, Path], predicted, what: str
) -> dict:
    """Serve each drafter copy beside the zoo target with K = 3 (and the target alone), and set the engine's
    counters beside the walk under each hypothesis (`predicted(copy, chain)`: {"walks": {hypothesis: counters},
    "row_says", "taps", ...}); the record."""
    target = load_target(zoo.target_dir())
    ids = prompts(target.tokenizer)
    cases = [{"name": "plain", "drafter": None, "k": 0, "prompts": ids, "max_tokens": NEW_TOKENS}]
    cases += [{"name": n, "drafter": str(d), "k": K, "prompts": ids, "max_tokens": NEW_TOKENS}
              for n, d in drafters.items()]  # fmt: skip
    release = engine.split("==")[1]
    got = run_vllm(python, cases, workdir, workdir.name, release)
    items = chain(target, ids, PROMPT_LEN, NEW_TOKENS, steps=K)
    rows = []
    for name, d in drafters.items():
        res = got[name]
        pred = predicted(d, items)
        counters = engine_counters(res["metrics"]) if res.get("metrics") else None
        fed = [h for h, w in pred["walks"].items() if counters is not None and same_counters(counters, w)]
        rows.append({"copy": name, "stage": res.get("stage"), "error": res.get("error"),
                     "engine_counters": counters, "walks": pred["walks"], "engine_equals_walk_under": fed,
                     **{k: v for k, v in pred.items() if k != "walks"},
                     "engine_taps": res.get("aux_hidden_state_layers"),
                     "lossless": res.get("tokens") == got["plain"].get("tokens"),
                     "drafter_sha256": files_sha256(d)})  # fmt: skip
    prov = got["__provenance__"]
    return {"engine": engine, "platform": prov["platform"]["device_type"], "k": K, "prompts": len(ids),
            "prompt_len": PROMPT_LEN, "new_tokens": NEW_TOKENS, "seed": SEED,
            "convention": "counters as vLLM reports them (num_drafts, accepted per draft position); the walk's "
                          "the same, walked as the engine drafts: K tokens after each verify",
            "what": what, "rows": rows,
            "provenance": {"engine": {k: v for k, v in prov.items() if k != "inputs"}, "eaglewire": __version__,
                           "prompts_sha256": sha256_json(ids), "target_sha256": prov["inputs"]["target"]}}  # fmt: skip


def same_counters(engine: dict, walk: dict) -> bool:
    """The engine's counters are the walk's: the same drafts, the same accepted tokens at every draft position."""
    return (engine["num_drafts"] == walk["num_drafts"]
            and engine["num_accepted_tokens_per_pos"] == walk["num_accepted_tokens_per_pos"])  # fmt: skip
