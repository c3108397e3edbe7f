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

from pathlib import Path

from real_engine.draft_embedding import write_drafters as embedding_copies
from real_engine.draft_head import write_drafters as head_copies

from eaglewire.rules import ENGINES_DIR
from engines.draft_settings import generate
from engines.draft_weights import run_weights_probe

PROBE = Path(__file__).with_name("weights_probe_sglang.py")
OUT = ENGINES_DIR / "sglang" / "data" / "draft-weights"
FIRST = "0.4.5"


def write_copies(root: Path) -> dict[str, Path]:
    """Every drafter copy of the real-engine tier, under its own architecture name."""
    return embedding_copies(root) | head_copies(root)


def record(python: str, release: str) -> dict:
    what = ("the release's own loader builds and loads the draft, then its EAGLE worker's own code shares the "
            "target's embedding and lm_head with it")  # fmt: skip
    return run_weights_probe(python, release, "sglang", PROBE, write_copies, what)


def main() -> None:
    generate(
        "sglang", record, OUT, FIRST, __doc__.splitlines()[0], lambda result: result["error"] is not None
    )


if __name__ == "__main__":
    main()
