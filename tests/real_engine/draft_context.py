"""A drafter whose context is shorter than the positions the server reaches: what vLLM does with it, run.

The zoo's default drafter in copies that differ only in `max_position_embeddings` (the target's 2048, then 320 and
128, below the 256 + 128 positions of the tier's prompts), each served beside the zoo target with K = 3 on 8
held-out prompts x 128 greedy tokens, batched; accept length (1 + accepted / drafts, vLLM's counters) and
losslessness per copy, beside `check`'s findings for that copy at the release. The prediction (`walks`) is the
walk of the 8 requests in one batch under the release's context gate (rules/draft_context.py): V1 stops the
drafter for the whole batch once its longest sequence + K passes the draft's max_model_len. The record
(`tests/real_engine/records/vllm-V-cpu-draft-context.json`) is replayed by tests/test_draft_context_record.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from eaglewire import __version__, zoo
from eaglewire.jobs.check import check
from eaglewire.targets import load_target

from .engine import NEW_TOKENS, PROMPT_LEN, files_sha256, prompts, run_vllm, sha256_json

CONTEXTS = (2048, 320, 128)  # the target's, one inside the served positions, one below every prompt
PROMPT_COUNT, K = 8, 3
CODES = ("draft-context",)
SERVED_MAX_MODEL_LEN = 1024  # the tier's engines (engine.py run_vllm)


def write_drafters(root: Path) -> dict[int, Path]:
    out = {}
    for n in CONTEXTS:
        d = root / f"default-ctx{n}"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(zoo.drafter_dir("default"), d)
        cfg = json.loads((d / "config.json").read_text())
        (d / "config.json").write_text(json.dumps(cfg | {"max_position_embeddings": n}, indent=2))
        out[n] = d
    return out


def findings(drafter: Path, engine: str) -> list[dict]:
    """check's findings about the drafter's context at the release (CPU)."""
    (verdict,) = check(drafter, zoo.target_dir(), [engine], platform="cpu").verdicts
    return [{"severity": f.severity, "code": f.code} for f in verdict.findings if f.code in CODES]


def walks(drafter: Path, items, engine: str) -> dict:
    """The batch walk the release's V1 runner would count for a copy (its context gate applied), and what the
    gate is: the prediction the engine's counters are held to."""
    from eaglewire.engines.draft_weights import draft_context
    from eaglewire.jobs.pair import load_pair
    from eaglewire.metrics import walk_batch

    pair = load_pair(zoo.target_dir(), drafter, None, engine, "float32", "cpu", platform="cpu")
    cfg = json.loads((drafter / "config.json").read_text())
    choice = draft_context("vllm", engine.split("==")[1], "v1", cfg, SERVED_MAX_MODEL_LEN)
    requests = drafted(pair, items)
    gated = walk_batch(requests, K, choice.gate())
    return {"row": choice.row.name if choice.row else None, "gate": choice.gate(),
            "counters": {"num_drafts": gated.drafts, "num_accepted_tokens_per_pos": gated.accepted_per_pos}}  # fmt: skip


def drafted(pair, items) -> list:
    """Per request: the drafter's K-step chain drafts at every row, the committed path and the walk's span."""
    import torch

    from eaglewire.metrics import walk_span

    m, out = pair.drafter, []
    with torch.no_grad():
        for s in items:
            T = s.input_ids.numel()
            aux = s.aux(pair.wiring)[: T - 1][None].to(m.fc.weight.dtype)
            un = m.unroll(aux, s.input_ids[1:T][None], K, feed="own")
            rows = [m.to_target(lg[0, : max(0, T - 2 - k)].float().argmax(-1)).tolist()
                    for k, lg in enumerate(un.logits)]  # fmt: skip
            out.append((rows, s.input_ids[2:T].tolist(), walk_span(s.loss_mask)))
    return out


def run(python: Path, workdir: Path, engine: str) -> dict:
    """Serve every copy; the record."""
    drafters = write_drafters(workdir / "drafters")
    ids = prompts(load_target(zoo.target_dir()).tokenizer, PROMPT_COUNT)
    cases = [{"name": "plain", "drafter": None, "k": 0, "prompts": ids, "max_tokens": NEW_TOKENS}]
    cases += [{"name": f"ctx{n}", "drafter": str(d), "k": K, "prompts": ids, "max_tokens": NEW_TOKENS}
              for n, d in drafters.items()]  # fmt: skip
    release = engine.split("==")[1]
    got = run_vllm(python, cases, workdir, "draft-context", release)
    rows = []
    for n, d in drafters.items():
        res = got[f"ctx{n}"]
        m = res.get("metrics") or {}
        rows.append({
            "max_position_embeddings": n, "stage": res.get("stage"), "error": res.get("error"),
            "accept_length": round(1 + m["num_accepted_tokens"] / m["num_drafts"], 4) if m.get("num_drafts") else None,
            "num_drafts": m.get("num_drafts"), "num_accepted_tokens": m.get("num_accepted_tokens"),
            "num_accepted_tokens_per_pos": m.get("num_accepted_tokens_per_pos"),
            "lossless": res.get("tokens") == got["plain"].get("tokens"),
            "drafter_sha256": files_sha256(d), "check": findings(d, engine),
        })  # fmt: skip
    prov = got["__provenance__"]
    return {"engine": engine, "platform": prov["platform"]["device_type"], "k": K, "prompts": PROMPT_COUNT,
            "prompt_len": PROMPT_LEN, "new_tokens": NEW_TOKENS, "target_max_position_embeddings":
            json.loads((zoo.target_dir() / "config.json").read_text())["max_position_embeddings"],
            "served_max_model_len": SERVED_MAX_MODEL_LEN,
            "convention": "accept length includes the bonus token; vLLM 1 + accepted/drafts",
            "what": "the zoo's default drafter, only max_position_embeddings changed, beside the zoo target",
            "rows": rows,
            "provenance": {"engine": {k: v for k, v in prov.items() if k != "inputs"}, "eaglewire": __version__,
                           "prompts_sha256": sha256_json(ids), "target_sha256": prov["inputs"]["target"]}}  # fmt: skip
