"""Draft-settings records for SGLang: what each release's own worker and loader code give the draft model.

    cd tests && python -m engines.draft_settings_sglang --python VENV/bin/python [--release V ...] [--force]

The SGLang side of draft_settings.py (same targets, written by its `write_models`): for each release from 0.4.5
in the ledger with EAGLE-3, install its wheel without dependencies into the SGLang model-code venv
(model_code.install) and run draft_probe_sglang.py there over launches that differ in what the draft's settings
depend on: a target checkpoint quantized each way users serve it, `--quantization fp8` with and without
`--speculative-draft-model-quantization unquant`, dtype, and a drafter whose context is shorter than the target's
(with the context flag, the environment override, or neither); each for the EAGLE-3 head and for DeepSeek's NextN
layers. SGLang has no draft tensor-parallel setting: the draft worker runs under the target's. One record per
release, `engines/sglang/data/draft-settings/sglang-V.json` (level `model-code`).
tests/test_draft_settings_records.py replays every record against lint's and check's rows.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from eaglewire.rules import ENGINES_DIR
from engines.capture_probe import YARN
from engines.draft_settings import QUANT, generate, newest_first, probe, write_models

PROBE = Path(__file__).with_name("draft_probe_sglang.py")
OUT = ENGINES_DIR / "sglang" / "data" / "draft-settings"
FIRST = "0.4.5"
ALLOW = {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}


def write_sglang_models(root: Path) -> Path:
    """write_models' configs, the DeepSeek-V3 ones with their rope scaling."""
    write_models(root)
    for name in ("deepseek_v3", "deepseek_v3-fp8"):
        path = root / name / "config.json"
        path.write_text(json.dumps(json.loads(path.read_text()) | {"rope_scaling": YARN}, indent=1))
    return root


def cases(root: Path) -> list[dict]:
    """Every launch, as ServerArgs keyword arguments (and the environment it runs under), one change at a time."""
    # the step flags given: 0.4.5.x chooses missing ones in `auto_choose_speculative_params`, which reads a field
    # its ServerArgs lacks (the case "eagle3/no step flags" keeps that answer)
    base = {"device": "cpu", "skip_tokenizer_init": True, "speculative_num_steps": 3, "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": 4}  # fmt: skip

    def eagle3(target: str, drafter: str = "eagle3", **extra) -> dict:
        return base | {"model_path": str(root / target), "speculative_algorithm": "EAGLE3",
                       "speculative_draft_model_path": str(root / drafter)} | extra  # fmt: skip

    def nextn(target: str, **extra) -> dict:
        # the draft is the target's own checkpoint (newer releases fill the path in; older ones need it given)
        return base | {"model_path": str(root / target), "speculative_algorithm": "NEXTN",
                       "speculative_draft_model_path": str(root / target)} | extra  # fmt: skip

    unquant = {"speculative_draft_model_quantization": "unquant"}
    out = [("eagle3", eagle3("llama"), {})]
    steps = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
    out += [("eagle3/no step flags", {k: v for k, v in eagle3("llama").items() if k not in steps}, {})]
    out += [(f"eagle3/target-{q}", eagle3(f"llama-{q}"), {}) for q in QUANT]
    out += [
        ("eagle3/--quantization fp8", eagle3("llama", quantization="fp8"), {}),
        ("eagle3/--quantization fp8, draft unquant", eagle3("llama", quantization="fp8", **unquant), {}),
        ("eagle3/--dtype float16", eagle3("llama", dtype="float16"), {}),
        ("eagle3/drafter float16", eagle3("llama", "eagle3-fp16"), {}),
        ("eagle3/drafter context 2048", eagle3("llama", "eagle3-short"), {}),
        ("eagle3/drafter context 2048, override allowed", eagle3("llama", "eagle3-short"), ALLOW),
        ("eagle3/drafter context 2048, --context-length 2048", eagle3("llama", "eagle3-short", context_length=2048),
         {}),
        ("nextn", nextn("deepseek_v3"), {}),
        ("nextn/--quantization fp8", nextn("deepseek_v3", quantization="fp8"), {}),
        ("nextn/target-fp8", nextn("deepseek_v3-fp8"), {}),
        ("nextn/--quantization fp8, draft unquant", nextn("deepseek_v3", quantization="fp8", **unquant), {}),
    ]  # fmt: skip
    return [{"name": name, "server_args": args, "env": env} for name, args, env in out]


def _names(value):
    """A path of the generator's temporary models as the model's name only (records hold no machine path)."""
    return Path(value).name if isinstance(value, str) and "/models/" in value else value


def record(python: str, release: str) -> dict:
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        wanted = cases(write_sglang_models(Path(tmp) / "models"))
        got = probe(python, wanted, "sglang", PROBE)
    assert got["version"] == release, (got["version"], release)
    for case, result in zip(wanted, got["results"], strict=True):
        result["server_args_given"] = {k: _names(v) for k, v in case["server_args"].items()}
        result["env"] = case["env"]
        if result["server_args"]:
            result["server_args"] = {k: _names(v) for k, v in result["server_args"].items()}
    return {"engine": f"sglang=={release}", "platform": "cpu, cuda", "level": "model-code",
            "what": "the release's own ServerArgs, TpModelWorker (target, then draft with the target's context "
                    "length as its EAGLE worker passes it) up to its ModelRunner, and its loader's quantization "
                    "config for the draft (no weights)",
            "answered": got["answered"], "context_passed": got["context_passed"],
            "models": {"targets": "tests/engines/draft_settings.py write_models", "quantization_configs": QUANT},
            "cases": got["results"],
            "provenance": {"probe": "tests/engines/draft_probe_sglang.py", "sglang": got["version"],
                           "seconds": round(time.time() - t0, 1)}}  # fmt: skip


def quant(case: dict | None) -> str:
    """The draft's quantization as the release's loader passes it to the draft model class ("-": none)."""
    if case is None:
        return "not asked"
    if case["error"] is not None:
        if case["error"]["stage"] == "server_args" and "unexpected keyword" in case["error"]["message"]:
            return "no such flag"
        return f"refused at {case['error']['stage']}: `{case['error']['message'][:60]}`"
    draft = case["draft"]
    if "quant_config_error" in draft:
        words = draft["quant_config_error"]["message"]
        if (
            "Cannot find model module" in words
        ):  # the registry skips a module that does not import in this venv
            return "not decided here (its model module does not import in this venv)"
        return f"loader error: `{words[:50]}`"
    return draft["quant_config"]["name"] if draft["quant_config"] else "-"


def context(case: dict | None) -> str:
    if case is None:
        return "not asked"
    if case["error"] is not None:
        return (
            "refused (ValueError)"
            if case["error"]["type"] == "ValueError"
            else f"error at {case['error']['stage']}"
        )
    return f"{case['draft']['context_len']} (rotary {case['draft']['max_position_embeddings']})"


def _row(rec: dict) -> str:
    cases = {c["name"]: c for c in rec["cases"]}
    head = sorted({quant(cases.get(f"eagle3/target-{q}")) for q in QUANT})
    release = rec["engine"].split("==")[1]

    def dtype(name: str) -> str:
        c = cases.get(name) or {}
        return (c.get("draft") or {}).get("dtype", "-")

    return (f"| {release} | {', '.join(head)} | {quant(cases.get('eagle3/--quantization fp8'))} | "
            f"{quant(cases.get('eagle3/--quantization fp8, draft unquant'))} | "
            f"{quant(cases.get('nextn/--quantization fp8'))} | "
            f"{dtype('eagle3/--dtype float16')} / {dtype('eagle3/drafter float16')} | "
            f"{context(cases.get('eagle3/drafter context 2048'))} / "
            f"{context(cases.get('eagle3/drafter context 2048, override allowed'))} | {rec.get('context_passed')} |")  # fmt: skip


def render(folder: Path | None = None) -> str:
    """docs/draft-settings-sglang.md: one row per release record."""
    recs = newest_first(folder or OUT, "sglang")
    head = """# What each SGLang release gives the draft model

Generated from the SGLang draft-settings records (`make draft-settings`: tests/engines/draft_settings_sglang.py),
one per SGLang release. Each release's own code ran: its `ServerArgs`, its `TpModelWorker` for the target and then
for the draft (given the target's context length the way its EAGLE worker gives it), up to the `ModelRunner` the
worker hands the config to, and its loader's `_get_quantization_config` for the draft: the quantization the draft
model class is built with (no weights, no device). The targets are config files only: tiny Llama and DeepSeek-V3
shapes, the quantized ones with each producer's `quantization_config` (vLLM's page, docs/draft-settings.md, uses the
same). `make test` replays every record against lint's and check's rows (tests/test_draft_settings_records.py).
Evidence level: model code, executed. SGLang has no draft tensor-parallel setting: the draft runs under the
target's.

Columns (`-`: the draft is built unquantized, in its own dtype):

- **EAGLE-3 head beside a quantized checkpoint**: the head's quantization with a target checkpoint quantized as
  FP8, GPTQ, AWQ, compressed-tensors W8A8 or modelopt NVFP4 (the set of answers over the five).
- **`--quantization fp8`**: the EAGLE-3 head with an unquantized target quantized at load; then the same with
  `--speculative-draft-model-quantization unquant` ("no such flag": the release refuses the argument).
- **NextN, `--quantization fp8`**: DeepSeek's NextN layers (the target's own checkpoint) with `--quantization fp8`.
- **draft dtype**: with `--dtype float16` / with a float16 drafter checkpoint beside a bfloat16 target.
- **draft context**: a drafter whose `max_position_embeddings` is 2048 beside a target of 8192: the draft's context
  length (and the `max_position_embeddings` left in its config, which sizes its rotary table) / the same with
  `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`. "refused": the draft worker's ValueError at startup.
- **context passed**: how the release's EAGLE worker gives the draft worker the target's context length
  (`server_args`: it sets `server_args.context_length`; `keyword`: `context_length=` to the worker).

| release | EAGLE-3 head beside a quantized checkpoint | EAGLE-3 head, `--quantization fp8` | ... with draft `unquant` | NextN, `--quantization fp8` | draft dtype | draft context | context passed |
|---|---|---|---|---|---|---|---|
"""
    return head + "\n".join(_row(r) for r in recs) + "\n"


def main() -> None:
    generate("sglang", record, OUT, FIRST, __doc__.split("\n\n")[0], lambda c: c["error"])


if __name__ == "__main__":
    main()
