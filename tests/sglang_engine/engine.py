"""The tier's two sides: run SGLang (the harness venv, `sglang_side.py`) on cases; read what it did."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from real_engine.engine import free_shm, inputs_key

from eaglewire import zoo
from eaglewire.server import shm

SIDE = Path(__file__).with_name("sglang_side.py")
# the accept and tree runs: held-out prompts (tests/real_engine/engine.py `prompts`), greedy tokens each, in bf16
# (SGLang's CPU attention kernels have no fp32 path)
PROMPTS, PROMPT_LEN, NEW_TOKENS, DTYPE = 8, 256, 64, "bfloat16"
TIMINGS: dict[str, float] = {}  # run name -> seconds (the tier's wall time per run, for the report)


def run_sglang(
    python: Path, cases: list[dict], workdir: Path, name: str, timeout: float = 3600, parallel: int = 1
) -> dict[str, dict]:
    """Run the cases in SGLang, one server each (`parallel` side by side, each on its own core: for cases whose
    outcome is no timing or rounding); results by case name. With EAGLEWIRE_SGLANG_CACHE set, a finished
    run of the same inputs (by sha256: target, drafters, prompts; the same settings and interpreter) is reused from
    that folder, and a stopped one resumes after its last finished case (for working on the tests)."""
    cache = os.environ.get("EAGLEWIRE_SGLANG_CACHE")
    if cache:  # keyed by content: the target's and each drafter's files, the prompts, settings, interpreter
        workdir = Path(cache)
        workdir.mkdir(parents=True, exist_ok=True)
        name = f"{name}-{inputs_key(zoo.target_dir(), cases, str(python))[:16]}"
    out = workdir / f"{name}.json"
    if not out.exists():
        logs = workdir / f"{name}-logs"
        spec = workdir / f"{name}-spec.json"
        spec.write_text(json.dumps({"target": str(zoo.target_dir()), "workdir": str(logs), "cases": cases,
                                    "parallel": parallel}))  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        t0 = time.time()
        shm_before = shm.names()
        proc = subprocess.Popen(
            [str(python), str(SIDE), str(spec), str(out)], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip
        try:
            log, _ = proc.communicate(timeout=timeout)
        finally:  # the side script stops its server on SIGTERM; then its group, and any server it left, go
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            groups = [proc.pid]
            for pgid in logs.glob("*.pgid") if logs.is_dir() else []:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    groups.append(int(pgid.read_text()))
                    os.killpg(groups[-1], signal.SIGKILL)
            proc.wait()
            free_shm(shm_before, tuple(groups))  # SGLang's `sglang_loads_*` segments, left by every server
        (workdir / f"{name}.log").write_text(log or "")
        assert proc.returncode == 0 and out.exists(), (log or "")[-4000:]
        TIMINGS[name] = time.time() - t0
        print(f"SGLang ran {len(cases)} cases in {time.time() - t0:.0f} s")
    return {r["name"]: r for r in json.loads(out.read_text())}


def captured_taps(result: dict, num_layers: int) -> list[int] | None:
    """The taps (h-indices, ascending, each once) the running target captured: the layers whose input the first
    forward's capture loop took (SGLang captures layer i's input, h_i; h0 the embeddings). Without a forward
    (the engine failed before one), the loop applied to the `layers_to_capture` the setter left; None when the
    setter was never called."""
    events = [
        e for e in result.get("taps_events", []) if e.get("class") in ("LlamaModel", "LlamaForCausalLM")
    ]
    fwd = [e for e in events if e["event"] == "forward" and e["class"] == "LlamaModel"]
    if fwd:
        return list(fwd[0]["captured_layers"])
    sets = [e for e in events if e["event"] == "set"]
    if not sets:
        return None
    return [i for i in range(num_layers) if i in sets[-1]["layers_to_capture"]]


def outputs(result: dict) -> list[dict]:
    """The case's outputs; a case that did not serve fails here with its stage, SGLang's message and the log's end
    (and the first attempt's, where the case was started twice)."""
    if result.get("stage") is not None or "outputs" not in result:
        why = {k: result.get(k) for k in ("name", "stage", "error", "first_attempt")}
        tail = "\n".join(result.get("log_tail") or [])
        raise AssertionError(f"SGLang did not serve {why}\n{tail}")
    return result["outputs"]


def accept(result: dict) -> dict:
    """SGLang's own numbers, summed over requests. `accept_length`: completion_tokens / spec_verify_ct, the reading
    SGLang reports (meta_info.spec_accept_length, per request): each verify commits its accepted drafts plus one
    token, and completion_tokens also holds the prefill's first token (no verify made it) and stops at
    max_new_tokens. `accept_length_drafts`: 1 + spec_num_correct_drafts / spec_verify_ct, the accepted drafts as
    each verify counted them (vLLM's convention, eaglewire's walk), and per position from SGLang's histogram of
    correct drafts per verify."""
    metas = [o["meta_info"] for o in outputs(result)]
    tokens = sum(m["completion_tokens"] for m in metas)
    verifies = sum(m.get("spec_verify_ct") or 0 for m in metas)
    correct = sum(m.get("spec_num_correct_drafts") or 0 for m in metas)
    hist: list[int] = []
    for m in metas:
        for j, n in enumerate(m.get("spec_correct_drafts_histogram") or []):
            hist += [0] * (j + 1 - len(hist))
            hist[j] += n
    per_position = [sum(hist[i + 1 :]) / verifies for i in range(len(hist) - 1)] if verifies else []
    return {"completion_tokens": tokens, "verify_ct": verifies, "correct_drafts": correct, "requests": len(metas),
            "accept_length": tokens / verifies if verifies else None,
            "accept_length_drafts": 1 + correct / verifies if verifies else None,
            "per_position": per_position, "histogram": hist}  # fmt: skip
