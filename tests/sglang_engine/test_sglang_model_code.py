"""The model-code probe (tests/engines/capture_probe.py) in the SGLang build that serves: its record of SGLang
0.5.23's capture code, rerun here, on the harness venv's SGLang with its CPU kernels, for the families whose
capture SGLang makes inside the decoder layer (its layer boundaries; the probe runs the real layers with stand-in
attention and MLP blocks) and one it refuses in its registry. Each case's taps (or the engine's error) must equal
the committed record's (src/eaglewire/engines/sglang/data/observed/sglang-0.5.23-model-code.json), so a probe
that answers differently in the serving build than in the generator's venv fails here.
"""

from __future__ import annotations

import json

import pytest
from engines.capture import run_probe
from engines.model_code import cases_for, out_dir

from .conftest import SGLANG_VERSION

pytestmark = pytest.mark.sglang_engine

# Llama (layer boundaries), DeepSeek-V3 (MLA, MoE), Qwen3-MoE, Qwen3-Next (linear attention; its full-attention
# layer attends in its own method), gpt-oss
ARCHS = ("LlamaForCausalLM", "DeepseekV3ForCausalLM", "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM",
         "GptOssForCausalLM")  # fmt: skip


def _record() -> dict:
    path = out_dir("sglang") / f"sglang-{SGLANG_VERSION}-model-code.json"
    if not path.is_file():
        pytest.skip(f"no model-code record for sglang {SGLANG_VERSION}")
    return json.loads(path.read_text())


def test_the_probe_in_the_serving_build_reproduces_the_record(sglang_python):
    record = _record()
    cols = record["columns"]
    recorded = {}
    for values in record["cases"]:
        row = dict(zip(cols, values, strict=True))
        if row["arch"] in ARCHS and not row["model_type"]:
            recorded[(row["arch"], json.dumps(row["ids"]), row["config_key"])] = row
    claimed = {f["architecture"] for f in record["families"] if f.get("layers") == "real"}
    assert claimed >= set(ARCHS), f"the record claims real-layer taps only for {sorted(claimed)}"
    cases, meta = cases_for("sglang", SGLANG_VERSION)
    picked = [(c, m) for c, m in zip(cases, meta, strict=True) if c["arch"] in ARCHS and not c["model_type"]]
    data = run_probe(str(sglang_python), "sglang", [c for c, _ in picked])
    assert data["version"] == SGLANG_VERSION
    compared, wrong = 0, []
    for (case, meta_row), result in zip(picked, data["results"], strict=True):
        _, _, _, ids, shape, _, _ = meta_row
        row = recorded.get((case["arch"], json.dumps(ids), shape))
        if row is None:  # a case the record holds no claim for
            continue
        compared += 1
        # the capture request itself raised (a per-layer flag on layers[L]): no forward ran, its words compare
        raised = row["forward_taps"] is None and "(raised in " in (row["error"] or "")
        assert raised or result.get("forward_path") == "real decoder layers", (case["arch"], ids, result)
        got = (result.get("forward_taps"), result.get("forward_error") or result.get("error"))
        if got != (row["forward_taps"], row["error"]):
            wrong.append((case["arch"], ids, shape, got, (row["forward_taps"], row["error"])))
    assert compared >= 100, compared
    assert not wrong, wrong[:5]
