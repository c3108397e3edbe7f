"""A drafter whose context is shorter than the positions the server reaches: what vLLM does with it, run.

The zoo's default drafter in copies that differ only in `max_position_embeddings` (the target's 2048, then 320 and
128, below the 256 + 128 positions of the tier's prompts), each served beside the zoo target with K = 3 on 8
held-out prompts x 128 greedy tokens; accept length (1 + accepted / drafts, vLLM's counters) and losslessness per
copy, beside `check`'s findings for that copy at the release. The record
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
CODES = ("draft-context", "draft-context-length")


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
            "served_max_model_len": 1024,
            "convention": "accept length includes the bonus token; vLLM 1 + accepted/drafts",
            "what": "the zoo's default drafter, only max_position_embeddings changed, beside the zoo target",
            "rows": rows,
            "provenance": {"engine": {k: v for k, v in prov.items() if k != "inputs"}, "eaglewire": __version__,
                           "prompts_sha256": sha256_json(ids), "target_sha256": prov["inputs"]["target"]}}  # fmt: skip
