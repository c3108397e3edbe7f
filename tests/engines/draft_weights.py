"""Draft-weights records: which embedding and lm_head each vLLM release's own EAGLE proposer gives the draft.

    cd tests && python -m engines.draft_weights --python VENV/bin/python [--release V ...] [--out DIR] [--force]

For each release (default: every vLLM release from 0.9.1 in the ledger: before it the CPU platform builds no V1
engine, whose proposer this is), install its wheel without dependencies into the model-code venv
(model_code.install) and run weights_probe.py there: the release's `EagleProposer.load_model` builds each drafter
copy and loads its checkpoint with the release's loader, then runs its own sharing code against a target holding
the zoo target's embedding and lm_head. The copies are the real-engine tier's (the zoo drafter with
a trained or a random embedding; with a random full-vocabulary head, without a head, without the vocabulary key,
with an identity vocabulary map: tests/real_engine/draft_embedding.py, draft_head.py), each also under the
architecture name every release registers (`LlamaForCausalLM`, as EAGLE's own checkpoints name it), so a release
that does not register SpecForge's `LlamaForCausalLMEagle3` still answers. One record per release,
`engines/vllm/data/draft-weights/vllm-V.json` (level `model-code`); tests/test_draft_weights_model_code.py replays
every record against the embedding and head rows (engines/vllm/draft.py EMBEDDING_ROWS, HEAD_ROWS).
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
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

PROBE = Path(__file__).with_name("weights_probe.py")
OUT = ENGINES_DIR / "vllm" / "data" / "draft-weights"
FIRST = "0.9.1"  # the first release whose CPU platform runs the V1 engine (CpuPlatform.supports_v1)
LLAMA_ARCH = "@llama-arch"  # a copy's suffix: the same checkpoint under architectures ["LlamaForCausalLM"]


def write_copies(root: Path) -> dict[str, Path]:
    """Every drafter copy, and each again under the architecture name every release registers."""
    copies = embedding_copies(root) | head_copies(root)
    for name, path in list(copies.items()):
        twin = root / f"{name}{LLAMA_ARCH}"
        shutil.rmtree(twin, ignore_errors=True)
        shutil.copytree(path, twin)
        config = json.loads((twin / "config.json").read_text())
        (twin / "config.json").write_text(
            json.dumps(config | {"architectures": ["LlamaForCausalLM"]}, indent=2)
        )
        copies[twin.name] = twin
    return copies


def run_weights_probe(python: str, release: str, engine: str, probe: Path, copies_fn, what: str) -> dict:
    """A release's draft-weights record: `probe` run in the engine venv over every drafter copy `copies_fn` writes
    (the zoo target beside them), with the copies' and target's hashes. Shared with draft_weights_sglang.py."""
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        copies = copies_fn(Path(tmp) / "drafters")
        req, res = Path(tmp) / "req.json", Path(tmp) / "res.json"
        req.write_text(
            json.dumps({"target": str(zoo.target_dir()), "drafters": {n: str(p) for n, p in copies.items()}})
        )
        proc = subprocess.run([os.path.abspath(python), str(probe), str(req), str(res)], capture_output=True,
                              text=True, timeout=1800, cwd=probe.parent)  # fmt: skip
        if not res.is_file():
            raise RuntimeError(f"weights probe failed: {proc.stderr.strip().splitlines()[-3:]}")
        got = json.loads(res.read_text())
        sha = {n: files_sha256(p) for n, p in copies.items()}
    assert got["version"] == release, (got["version"], release)
    module = Path(inspect.getsourcefile(copies_fn)).name
    return {"engine": f"{engine}=={release}", "platform": "cpu", "level": "model-code", "what": what,
            "answered": got["answered"],
            "drafters": {"copies": f"tests/engines/{module} write_copies", "sha256": sha,
                         "target_sha256": files_sha256(zoo.target_dir())},
            "results": got["results"],
            "provenance": {"probe": f"tests/engines/{probe.name}", engine: got["version"],
                           "seconds": round(time.time() - t0, 1)}}  # fmt: skip


def record(python: str, release: str) -> dict:
    what = ("the release's own EagleProposer.load_model: the draft built and its checkpoint loaded by the release's "
            "loader, then its embedding and lm_head sharing against the target's")  # fmt: skip
    return run_weights_probe(python, release, "vllm", PROBE, write_copies, what)


def main() -> None:
    generate("vllm", record, OUT, FIRST, __doc__.splitlines()[0], lambda result: result["error"] is not None)


if __name__ == "__main__":
    main()
