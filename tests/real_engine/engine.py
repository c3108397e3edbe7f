"""The tier's two sides: run vLLM (its own venv, `vllm_side.py`) on cases, and the prompts both sides share."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import torch

from eaglewire import zoo
from eaglewire.data import Sample

SIDE = Path(__file__).with_name("vllm_side.py")
PROMPTS, PROMPT_LEN, NEW_TOKENS = 16, 256, 128  # held-out stdlib prompts, as in the issue that found the gap


def prompts(tokenizer, n: int = PROMPTS, length: int = PROMPT_LEN) -> list[list[int]]:
    """The first `length` tokens of the zoo's first n held-out windows (what `eaglewire test` takes too)."""
    return [s.input_ids[:length].tolist() for s in zoo.held_out_samples(tokenizer, 512, n)]


def as_samples(ids: list[list[int]]) -> list[Sample]:
    return [Sample(torch.tensor(p), torch.ones(len(p), dtype=torch.bool), "held-out") for p in ids]


def run_vllm(python: Path, cases: list[dict], workdir: Path, name: str) -> dict[str, dict]:
    """Run the cases in vLLM; results by case name. With EAGLEWIRE_REAL_ENGINE_CACHE set, a finished run of the
    same spec (same cases, same engine interpreter) is reused from that folder (for working on the tests)."""
    text = json.dumps(
        {"target": str(zoo.target_dir()), "cases": cases, "python": str(python)}, sort_keys=True
    )
    cache = os.environ.get("EAGLEWIRE_REAL_ENGINE_CACHE")
    if cache:
        workdir = Path(cache)
        workdir.mkdir(parents=True, exist_ok=True)
        name = f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    out = workdir / f"{name}.json"
    if not out.exists():
        spec = workdir / f"{name}-spec.json"
        spec.write_text(text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        t0 = time.time()
        proc = subprocess.Popen(
            [str(python), str(SIDE), str(spec), str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
        try:
            log, _ = proc.communicate(timeout=60 * 60)
        finally:  # the engine and anything it started, by process group, whatever happened
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        (workdir / f"{name}.log").write_text(log or "")
        assert proc.returncode == 0 and out.exists(), (log or "")[-4000:]
        print(f"vLLM ran {len(cases)} cases in {time.time() - t0:.0f} s")
    return {r["name"]: r for r in json.loads(out.read_text())}


def measured(result: dict) -> dict:
    """vLLM's own numbers: mean accept length 1 + accepted / drafts, per-position accepted_pos[i] / drafts."""
    m = result["metrics"]
    drafts = m["num_drafts"]
    return {
        "drafts": drafts,
        "accept_length": 1 + m["num_accepted_tokens"] / drafts,
        "per_position": [a / drafts for a in m["num_accepted_tokens_per_pos"]],
    }
