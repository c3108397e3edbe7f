"""Draft-weights records for SGLang: which embedding and lm_head each release's own EAGLE worker gives the draft.

    cd tests && python -m engines.draft_weights_sglang --python VENV/bin/python [--release V ...] [--out DIR] [--force]

The SGLang side of draft_weights.py: for each release from 0.4.5 in the ledger with EAGLE-3, install its wheel
without dependencies into the SGLang model-code venv (model_code.install) and run weights_probe_sglang.py there:
the release's own loader builds and loads each drafter copy of the real-engine tier (the zoo drafter with a trained
or a random embedding; a random full-vocabulary head, no head, no vocabulary key, an identity vocabulary map), then
its EAGLE worker's own sharing code runs against a target holding the zoo target's embedding and lm_head. SGLang
serves an EAGLE-3 head under its own architecture name only, so the copies keep theirs (no `LlamaForCausalLM`
twins). One record per release, `engines/sglang/data/draft-weights/sglang-V.json` (level `model-code`);
tests/test_draft_weights_model_code.py replays every record against the embedding and head rows
(engines/sglang/draft.py EMBEDDING_ROWS, HEAD_ROWS).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from real_engine.draft_embedding import write_drafters as embedding_copies
from real_engine.draft_head import write_drafters as head_copies
from real_engine.engine import files_sha256

from eaglewire import zoo
from eaglewire.rules import ENGINES_DIR
from engines.draft_settings import generate

PROBE = Path(__file__).with_name("weights_probe_sglang.py")
OUT = ENGINES_DIR / "sglang" / "data" / "draft-weights"
FIRST = "0.4.5"


def write_copies(root: Path) -> dict[str, Path]:
    """Every drafter copy of the real-engine tier, under its own architecture name."""
    return embedding_copies(root) | head_copies(root)


def record(python: str, release: str) -> dict:
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        copies = write_copies(Path(tmp) / "drafters")
        req, res = Path(tmp) / "req.json", Path(tmp) / "res.json"
        req.write_text(
            json.dumps({"target": str(zoo.target_dir()), "drafters": {n: str(p) for n, p in copies.items()}})
        )
        proc = subprocess.run([os.path.abspath(python), str(PROBE), str(req), str(res)], capture_output=True,
                              text=True, timeout=1800, cwd=PROBE.parent)  # fmt: skip
        if not res.is_file():
            raise RuntimeError(f"weights probe failed: {proc.stderr.strip().splitlines()[-3:]}")
        got = json.loads(res.read_text())
        sha = {n: files_sha256(p) for n, p in copies.items()}
    assert got["version"] == release, (got["version"], release)
    return {"engine": f"sglang=={release}", "platform": "cpu", "level": "model-code",
            "what": "the release's own loader builds and loads the draft, then its EAGLE worker's own code shares "
                    "the target's embedding and lm_head with it",
            "answered": got["answered"],
            "drafters": {"copies": "tests/engines/draft_weights_sglang.py write_copies", "sha256": sha,
                         "target_sha256": files_sha256(zoo.target_dir())},
            "results": got["results"],
            "provenance": {"probe": "tests/engines/weights_probe_sglang.py", "sglang": got["version"],
                           "seconds": round(time.time() - t0, 1)}}  # fmt: skip


def main() -> None:
    generate(
        "sglang", record, OUT, FIRST, __doc__.splitlines()[0], lambda result: result["error"] is not None
    )


if __name__ == "__main__":
    main()
